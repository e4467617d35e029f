#include "agent/source/datagram_listener.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/unit/source/recording_consumer.h"
#include "tests/unit/source/socket_client.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing::Client;
using testing::Recorder;
using testing::RunUntil;
using ::testing::StartsWith;

class DatagramListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("faultline_dl_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  asio::io_context io_;
  Recorder recorder_;
  fs::path dir_;
};

TEST_F(DatagramListenerTest, UdpDatagramsGoToOneStreamPerPeerEachEndingALine) {
  DatagramListenerOptions options;
  options.host = "127.0.0.1";
  DatagramListener listener(io_, options, recorder_.ForPeers());
  ASSERT_EQ("", JoinErrors(listener.Open().errors()));
  listener.Start();
  Client a = Client::Udp(listener.port());
  Client b = Client::Udp(listener.port());
  ASSERT_TRUE(a.Send("one\ntwo"));
  ASSERT_TRUE(a.Send("three\n"));
  ASSERT_TRUE(b.Send("other"));
  ASSERT_TRUE(RunUntil(io_, [&] { return listener.datagrams() == 3; }));
  ASSERT_EQ(2u, recorder_.streams.size());
  EXPECT_EQ("one\ntwo\nthree\n", recorder_.streams[0].bytes);
  EXPECT_EQ("other\n", recorder_.streams[1].bytes);
  EXPECT_THAT(recorder_.streams[0].name, StartsWith("127.0.0.1:"));
  EXPECT_NE(recorder_.streams[0].name, recorder_.streams[1].name);
}

TEST_F(DatagramListenerTest, BeyondMaxPeersTheOneHeardFromLeastRecentlyEnds) {
  DatagramListenerOptions options;
  options.host = "127.0.0.1";
  options.max_peers = 2;
  DatagramListener listener(io_, options, recorder_.ForPeers());
  ASSERT_EQ("", JoinErrors(listener.Open().errors()));
  listener.Start();
  Client a = Client::Udp(listener.port());
  Client b = Client::Udp(listener.port());
  Client c = Client::Udp(listener.port());
  ASSERT_TRUE(a.Send("a1"));
  ASSERT_TRUE(RunUntil(io_, [&] { return listener.datagrams() == 1; }));
  ASSERT_TRUE(b.Send("b1"));
  ASSERT_TRUE(RunUntil(io_, [&] { return listener.datagrams() == 2; }));
  ASSERT_TRUE(a.Send("a2"));  // a is now the most recent
  ASSERT_TRUE(RunUntil(io_, [&] { return listener.datagrams() == 3; }));
  ASSERT_TRUE(c.Send("c1"));
  ASSERT_TRUE(RunUntil(io_, [&] { return listener.datagrams() == 4; }));
  ASSERT_EQ(3u, recorder_.streams.size());
  EXPECT_FALSE(recorder_.streams[0].ended);
  EXPECT_TRUE(recorder_.streams[1].ended);
  EXPECT_EQ(2u, listener.peers());
}

TEST_F(DatagramListenerTest, UnixDatagramSendersAreToldApartByPathOrPid) {
  DatagramListenerOptions options;
  options.unix_socket = true;
  options.path = (dir_ / "dgram.sock").string();
  options.mode = 0620;
  DatagramListener listener(io_, options, recorder_.ForPeers());
  ASSERT_EQ("", JoinErrors(listener.Open().errors()));
  listener.Start();
  struct stat st {};
  ASSERT_EQ(0, stat(options.path.c_str(), &st));
  EXPECT_EQ(0620u, st.st_mode & 0777);

  Client unbound = Client::Unix(options.path, SOCK_DGRAM);
  const std::string own = (dir_ / "client.sock").string();
  Client bound = Client::Unix(options.path, SOCK_DGRAM, own);
  ASSERT_TRUE(unbound.ok() && bound.ok());
  ASSERT_TRUE(unbound.Send("<13>logger: from logger -u\n"));
  ASSERT_TRUE(bound.Send("from a bound socket"));
  ASSERT_TRUE(RunUntil(io_, [&] { return listener.datagrams() == 2; }));
  ASSERT_EQ(2u, recorder_.streams.size());
  EXPECT_EQ(
      options.path + ": pid " + std::to_string(getpid()) + ", uid " + std::to_string(getuid()),
      recorder_.streams[0].name);
  EXPECT_EQ(own, recorder_.streams[1].name);
  EXPECT_EQ("from a bound socket\n", recorder_.streams[1].bytes);

  listener.Stop();
  EXPECT_TRUE(recorder_.streams[0].ended && recorder_.streams[1].ended);
  EXPECT_FALSE(fs::exists(options.path));
}

}  // namespace
}  // namespace faultline
