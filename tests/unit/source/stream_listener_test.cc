#include "agent/source/stream_listener.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/unit/source/recording_consumer.h"
#include "tests/unit/source/socket_client.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing::Client;
using ::testing::HasSubstr;
using testing::Recorder;
using testing::RunUntil;
using ::testing::StartsWith;

StreamListenerOptions Tcp() {
  StreamListenerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  return options;
}

class StreamListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("faultline_sl_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  StreamListenerOptions Unix(const std::string& name) {
    StreamListenerOptions options;
    options.unix_socket = true;
    options.path = (dir_ / name).string();
    return options;
  }

  asio::io_context io_;
  Recorder recorder_;
  fs::path dir_;
};

TEST_F(StreamListenerTest, EachTcpConnectionIsAStreamNamedByItsPeer) {
  StreamListener listener(io_, Tcp(), recorder_.ForPeers());
  ASSERT_EQ("", JoinErrors(listener.Open().errors()));
  ASSERT_NE(0, listener.port());
  listener.Start();
  Client a = Client::Tcp(listener.port());
  Client b = Client::Tcp(listener.port());
  ASSERT_TRUE(a.Send("from a\n"));
  ASSERT_TRUE(b.Send("from b, no newline"));
  ASSERT_TRUE(RunUntil(
      io_, [&] { return recorder_.streams.size() == 2 && recorder_.AllBytes().size() == 25; }));
  b.Close();
  ASSERT_TRUE(
      RunUntil(io_, [&] { return recorder_.streams[0].ended || recorder_.streams[1].ended; }));
  for (const auto& stream : recorder_.streams) {
    EXPECT_THAT(stream.name, StartsWith("127.0.0.1:"));
    EXPECT_EQ("127.0.0.1", stream.host);
    EXPECT_EQ(stream.ended, stream.bytes == "from b, no newline") << stream.bytes;
  }
  listener.Stop();
  EXPECT_TRUE(recorder_.streams[0].ended && recorder_.streams[1].ended);
}

TEST_F(StreamListenerTest, AnAddressInUseIsALoadTimeError) {
  StreamListener first(io_, Tcp(), recorder_.ForPeers());
  ASSERT_EQ("", JoinErrors(first.Open().errors()));
  StreamListenerOptions same = Tcp();
  same.port = first.port();
  StreamListener second(io_, same, recorder_.ForPeers());
  EXPECT_THAT(JoinErrors(second.Open().errors()),
              HasSubstr("cannot listen on tcp 127.0.0.1:" + std::to_string(first.port())));
}

TEST_F(StreamListenerTest, UnixSocketReplacesAStaleFileTakesItsModeAndIsRemovedAtStop) {
  const StreamListenerOptions options = [&] {
    StreamListenerOptions o = Unix("net.sock");
    o.mode = 0600;
    return o;
  }();
  {
    // A socket file left by a process that died: bound, never listening any more.
    StreamListener dead(io_, options, recorder_.ForPeers());
    ASSERT_EQ("", JoinErrors(dead.Open().errors()));
    ASSERT_EQ(0, link(options.path.c_str(), (dir_ / "kept").c_str()));
  }
  ASSERT_FALSE(fs::exists(options.path));                               // Stop removed it...
  ASSERT_EQ(0, rename((dir_ / "kept").c_str(), options.path.c_str()));  // ...so put it back
  ASSERT_TRUE(fs::is_socket(options.path));

  StreamListener listener(io_, options, recorder_.ForPeers());
  ASSERT_EQ("", JoinErrors(listener.Open().errors()));
  listener.Start();
  struct stat st {};
  ASSERT_EQ(0, stat(options.path.c_str(), &st));
  EXPECT_EQ(0600u, st.st_mode & 0777);
  Client client = Client::Unix(options.path, SOCK_STREAM);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE(client.Send("over unix\n"));
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.AllBytes() == "over unix\n"; }));
  EXPECT_EQ(
      options.path + ": pid " + std::to_string(getpid()) + ", uid " + std::to_string(getuid()),
      recorder_.streams[0].name);

  // A second listener on the same live path must not take it over.
  StreamListener intruder(io_, options, recorder_.ForPeers());
  EXPECT_THAT(JoinErrors(intruder.Open().errors()),
              HasSubstr("another process is listening there"));

  listener.Stop();
  EXPECT_FALSE(fs::exists(options.path));
}

TEST_F(StreamListenerTest, AFileThatIsNotASocketIsNeverRemoved) {
  const StreamListenerOptions options = Unix("important.txt");
  std::ofstream(options.path) << "keep me";
  StreamListener listener(io_, options, recorder_.ForPeers());
  EXPECT_THAT(JoinErrors(listener.Open().errors()), HasSubstr("is not a socket"));
  EXPECT_TRUE(fs::is_regular_file(options.path));
}

TEST_F(StreamListenerTest, AtTheCapANewcomerIsRefusedWhileEveryConnectionIsActive) {
  StreamListenerOptions options = Tcp();
  options.max_connections = 2;
  options.evictable_after = std::chrono::hours(1);
  StreamListener listener(io_, options, recorder_.ForPeers());
  ASSERT_EQ("", JoinErrors(listener.Open().errors()));
  listener.Start();
  Client a = Client::Tcp(listener.port());
  Client b = Client::Tcp(listener.port());
  ASSERT_TRUE(RunUntil(io_, [&] { return listener.connections() == 2; }));
  Client c = Client::Tcp(listener.port());
  ASSERT_TRUE(RunUntil(io_, [&] { return listener.refused() == 1; }));
  EXPECT_EQ(2u, listener.connections());
  EXPECT_EQ(0u, listener.evicted());
  // The refused one reads end of stream; the others still deliver.
  char byte = 0;
  EXPECT_EQ(0, recv(c.fd(), &byte, 1, 0));
  ASSERT_TRUE(a.Send("still here\n"));
  EXPECT_TRUE(RunUntil(io_, [&] { return recorder_.AllBytes() == "still here\n"; }));
}

TEST_F(StreamListenerTest, AtTheCapTheConnectionSilentLongestGivesWay) {
  StreamListenerOptions options = Tcp();
  options.max_connections = 2;
  options.evictable_after = std::chrono::milliseconds(100);
  StreamListener listener(io_, options, recorder_.ForPeers());
  ASSERT_EQ("", JoinErrors(listener.Open().errors()));
  listener.Start();
  Client silent = Client::Tcp(listener.port());
  ASSERT_TRUE(RunUntil(io_, [&] { return listener.connections() == 1; }));
  Client talking = Client::Tcp(listener.port());
  ASSERT_TRUE(RunUntil(io_, [&] { return listener.connections() == 2; }));
  const auto start = std::chrono::steady_clock::now();
  // Keep `talking` active past evictable_after, so only `silent` qualifies.
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(200)) {
    ASSERT_TRUE(talking.Send("tick\n"));
    RunUntil(
        io_, [] { return false; }, std::chrono::milliseconds(20));
  }
  Client newcomer = Client::Tcp(listener.port());
  ASSERT_TRUE(newcomer.Send("newcomer\n"));
  ASSERT_TRUE(
      RunUntil(io_, [&] { return listener.evicted() == 1 && recorder_.streams.size() == 3; }));
  EXPECT_TRUE(recorder_.streams[0].ended);   // silent
  EXPECT_FALSE(recorder_.streams[1].ended);  // talking
  EXPECT_TRUE(RunUntil(io_, [&] { return recorder_.streams[2].bytes == "newcomer\n"; }));
}

TEST_F(StreamListenerTest, QuietThenIdleTimeout) {
  StreamListenerOptions options = Tcp();
  options.quiet_after = std::chrono::milliseconds(50);
  options.idle_timeout = std::chrono::milliseconds(300);
  StreamListener listener(io_, options, recorder_.ForPeers());
  ASSERT_EQ("", JoinErrors(listener.Open().errors()));
  listener.Start();
  Client client = Client::Tcp(listener.port());
  ASSERT_TRUE(client.Send("partial"));
  ASSERT_TRUE(
      RunUntil(io_, [&] { return !recorder_.streams.empty() && recorder_.streams[0].quiet == 1; }));
  EXPECT_FALSE(recorder_.streams[0].ended);
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.streams[0].ended; }));
  EXPECT_EQ(1, recorder_.streams[0].quiet);  // once per silence
  EXPECT_EQ(0u, listener.connections());
  char byte = 0;
  EXPECT_EQ(0, recv(client.fd(), &byte, 1, 0));
}

// A sender that writes as fast as it can gets one read budget per turn; another connection's
// line arrives while the flood is still going.
TEST_F(StreamListenerTest, AFloodingPeerDoesNotStarveAnother) {
  StreamListenerOptions options = Tcp();
  options.read_budget = 64 * 1024;
  StreamListener listener(io_, options, recorder_.ForPeers());
  ASSERT_EQ("", JoinErrors(listener.Open().errors()));
  listener.Start();
  Client flood = Client::Tcp(listener.port());
  ASSERT_TRUE(RunUntil(io_, [&] { return listener.connections() == 1; }));
  std::atomic<bool> stop{false};
  std::thread flooder([&] {
    const std::string chunk(1 << 20, 'x');
    while (!stop && flood.Send(chunk)) {
    }
  });
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.streams[0].total > (8u << 20); }));
  Client other = Client::Tcp(listener.port());
  ASSERT_TRUE(other.Send("me too\n"));
  const bool delivered = RunUntil(io_, [&] {
    return recorder_.streams.size() == 2 && recorder_.streams[1].bytes == "me too\n";
  });
  const bool flood_still_going = !stop;
  stop = true;
  flood.Shutdown();
  flooder.join();
  EXPECT_TRUE(delivered);
  EXPECT_TRUE(flood_still_going);
  // Each of the flood's OnBytes calls got at most one read of the budget.
  EXPECT_GE(recorder_.streams[0].on_bytes_calls * (64u << 10), recorder_.streams[0].total);
}

}  // namespace
}  // namespace faultline
