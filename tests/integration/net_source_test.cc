// `faultline run` with network sources, as senders reach it: real TCP, UDP and Unix sockets on
// loopback, nc-like senders (and util-linux `logger` for syslog), counts read from /metrics and
// /api/v1/findings of the real binary. Each test is bounded to a few seconds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/process.h"
#include "tests/unit/source/socket_client.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing::Client;
using testing::Daemon;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::HttpGet;

constexpr char kRule[] = R"(id: t.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
)";
constexpr char kOom[] = "CUDA out of memory";

std::string Hits(const std::string& labels = "") {
  return "faultline_signature_matches_total{" + labels +
         "severity=\"error\",signature=\"t.cuda_oom\"}";
}
std::string Lines(const std::string& source) {
  return "faultline_lines_total{source=\"" + source + "\"}";
}

double Sample(const std::string& metrics, const std::string& series) {
  std::istringstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// `n` lines, every tenth a hit, each naming its sender.
std::string Lines(const std::string& who, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += i % 10 == 9 ? who + " step " + std::to_string(i) + ": " + kOom + "\n"
                        : who + " step " + std::to_string(i) + " loss 0.5\n";
  }
  return text;
}

class NetSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ + "/rules");
    std::ofstream(dir_ + "/rules/t.yaml") << kRule;
    port_ = testing::FreePort();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A config whose sources are `sources` (YAML list items, indented by two).
  std::string WriteConfig(const std::string& sources) {
    const std::string path = dir_ + "/faultline.yaml";
    std::ofstream(path) << "rules:\n  paths: [rules]\n  context_idle_flush_ms: 200\n"
                        << "http:\n  listen: 127.0.0.1:" << port_ << "\nsources:\n"
                        << sources;
    return path;
  }
  std::unique_ptr<Daemon> Start(const std::string& sources) {
    auto agent =
        std::make_unique<Daemon>(std::vector<std::string>{"run", "-c", WriteConfig(sources)});
    EXPECT_TRUE(Eventually(
        [&] {
          std::string body;
          return HttpGet(port_, "/readyz", &body) == 200;
        },
        std::chrono::seconds(20)))
        << agent->Stderr();
    return agent;
  }
  std::string Metrics() {
    std::string body;
    return HttpGet(port_, "/metrics", &body) == 200 ? body : "";
  }
  // Waits until every series reads its value, then checks they stay (nothing counted twice).
  bool Reach(const std::vector<std::pair<std::string, double>>& expected,
             std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto reached = [&] {
      const std::string m = Metrics();
      for (const auto& [series, value] : expected) {
        if (Sample(m, series) != value) return false;
      }
      return true;
    };
    if (!Eventually(reached, timeout)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return reached();
  }
  std::string Show(const std::vector<std::string>& series) {
    const std::string m = Metrics();
    std::string out;
    for (const std::string& s : series) out += s + " = " + std::to_string(Sample(m, s)) + "\n";
    return out;
  }

  std::string dir_;
  uint16_t port_ = 0;
};

TEST_F(NetSourceTest, EveryTypeCountsEachLineExactlyAndUnixSocketsComeAndGo) {
  const uint16_t tcp = testing::FreePort();
  const uint16_t udp = testing::FreePort();
  const std::string stream_path = dir_ + "/stream.sock";
  const std::string dgram_path = dir_ + "/dgram.sock";
  // A socket file left by an agent that was killed: the new one must replace it.
  {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, stream_path.data(), stream_path.size());
    ASSERT_EQ(0, bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)));
    close(fd);
  }
  auto agent = Start("  - {id: tcp, type: tcp, listen: '127.0.0.1:" + std::to_string(tcp) +
                     "'}\n"
                     "  - {id: udp, type: udp, listen: '127.0.0.1:" +
                     std::to_string(udp) +
                     "'}\n"
                     "  - {id: unix, type: unix, path: stream.sock, mode: '0600'}\n"
                     "  - {id: unixgram, type: unixgram, path: dgram.sock}\n");
  struct stat st {};
  ASSERT_EQ(0, stat(stream_path.c_str(), &st));
  EXPECT_EQ(0600u, st.st_mode & 0777);
  ASSERT_EQ(0, stat(dgram_path.c_str(), &st));
  EXPECT_EQ(0660u, st.st_mode & 0777);  // the default

  Client tcp_client = Client::Tcp(tcp);
  ASSERT_TRUE(tcp_client.Send(Lines("tcp", 1000)));
  Client unix_client = Client::Unix(stream_path, SOCK_STREAM);
  ASSERT_TRUE(unix_client.Send(Lines("unix", 1000)));
  // Datagrams of 50 lines each: a datagram holds several lines.
  Client udp_client = Client::Udp(udp);
  Client dgram_client = Client::Unix(dgram_path, SOCK_DGRAM);
  for (int d = 0; d < 20; ++d) {
    ASSERT_TRUE(udp_client.Send(Lines("udp" + std::to_string(d), 50)));
    ASSERT_TRUE(dgram_client.Send(Lines("dgram" + std::to_string(d), 50)));
  }
  EXPECT_TRUE(Reach({{Lines("tcp"), 1000},
                     {Lines("udp"), 1000},
                     {Lines("unix"), 1000},
                     {Lines("unixgram"), 1000},
                     {Hits(), 400}}))
      << Show({Lines("tcp"), Lines("udp"), Lines("unix"), Lines("unixgram"), Hits()})
      << agent->Stderr();
  EXPECT_EQ(0, agent->Stop(SIGTERM));
  EXPECT_FALSE(fs::exists(stream_path));
  EXPECT_FALSE(fs::exists(dgram_path));
}

TEST_F(NetSourceTest, APartialLineIsCountedWhenTheConnectionCloses) {
  const uint16_t tcp = testing::FreePort();
  auto agent = Start("  - {id: tcp, type: tcp, listen: '127.0.0.1:" + std::to_string(tcp) + "'}\n");
  Client client = Client::Tcp(tcp);
  ASSERT_TRUE(client.Send("epoch 1\r\x1b[31mRuntimeError: CUDA out of memory\x1b[0m"));
  // Framed like a file: '\r' ends a line, ANSI is stripped; the last line waits for more...
  ASSERT_TRUE(Reach({{Lines("tcp"), 1}, {Hits(), 0}})) << Show({Lines("tcp"), Hits()});
  client.Close();  // ...until the peer closes.
  EXPECT_TRUE(Reach({{Lines("tcp"), 2}, {Hits(), 1}})) << Show({Lines("tcp"), Hits()});
  std::string body;
  ASSERT_EQ(200, HttpGet(port_, "/api/v1/findings", &body));
  const nlohmann::json json = nlohmann::json::parse(body);
  ASSERT_EQ(1u, json["findings"].size()) << body;
  EXPECT_THAT(json["findings"][0]["stream"].get<std::string>(), HasSubstr("127.0.0.1:")) << body;
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

TEST_F(NetSourceTest, HundredConcurrentSendersAreCountedExactly) {
  const uint16_t tcp = testing::FreePort();
  auto agent = Start("  - {id: tcp, type: tcp, listen: '127.0.0.1:" + std::to_string(tcp) + "'}\n");
  constexpr int kSenders = 100;
  constexpr int kLinesEach = 2000;
  std::vector<std::thread> senders;
  std::atomic<int> failed{0};
  for (int s = 0; s < kSenders; ++s) {
    senders.emplace_back([&, s] {
      Client client = Client::Tcp(tcp);
      const std::string lines = Lines("sender" + std::to_string(s), kLinesEach);
      // In several writes, so the agent sees the senders interleaved.
      for (size_t at = 0; at < lines.size(); at += 4096) {
        if (!client.Send(std::string_view(lines).substr(at, 4096))) ++failed;
      }
    });
  }
  for (std::thread& t : senders) t.join();
  EXPECT_EQ(0, failed);
  EXPECT_TRUE(Reach({{Lines("tcp"), kSenders * kLinesEach}, {Hits(), kSenders * kLinesEach / 10}}))
      << Show({Lines("tcp"), Hits()}) << agent->Stderr();
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

// One peer sends a 100 MB line and then garbage as fast as it can; another peer's failure line
// must be counted while that is still going on, and every line of it.
TEST_F(NetSourceTest, AFloodingPeerDoesNotDelayAnotherPeersLines) {
  const uint16_t tcp = testing::FreePort();
  auto agent = Start("  - {id: tcp, type: tcp, listen: '127.0.0.1:" + std::to_string(tcp) + "'}\n");
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> flooded{0};
  std::thread flooder([&] {
    Client flood = Client::Tcp(tcp);
    const std::string chunk(1 << 20, 'x');
    for (int i = 0; i < 100 && !stop; ++i) {  // one line of 100 MiB, no newline yet
      if (!flood.Send(chunk)) return;
      flooded += chunk.size();
    }
    std::string garbage(1 << 20, '\0');
    for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 131 % 251);
    while (!stop && flood.Send(garbage)) flooded += garbage.size();
  });
  ASSERT_TRUE(Eventually([&] { return flooded > (16u << 20); }));
  Client other = Client::Tcp(tcp);
  ASSERT_TRUE(other.Send(Lines("other", 100)));
  const auto sent = std::chrono::steady_clock::now();
  const bool counted =
      Eventually([&] { return Sample(Metrics(), Hits()) == 10; }, std::chrono::seconds(10));
  const auto took = std::chrono::steady_clock::now() - sent;
  const bool flood_still_going = flooded < (100u << 20) || !stop;
  stop = true;
  flooder.join();
  EXPECT_TRUE(counted) << Show({Lines("tcp"), Hits()});
  EXPECT_TRUE(flood_still_going);
  EXPECT_LT(took, std::chrono::seconds(2));
  // The 100 MiB line was cut at max_line_bytes and counted as one truncated line.
  EXPECT_GE(Sample(Metrics(), "faultline_lines_truncated_total"), 1);
  EXPECT_TRUE(agent->running());
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

// Far more connections than the cap: the newcomers are closed at once, an active sender keeps
// its connection and its counts, and /metrics answers throughout.
TEST_F(NetSourceTest, AConnectionFloodBeyondTheCapKeepsMetricsAnswering) {
  const uint16_t tcp = testing::FreePort();
  auto agent = Start("  - {id: tcp, type: tcp, listen: '127.0.0.1:" + std::to_string(tcp) +
                     "', max_connections: 20}\n");
  Client active = Client::Tcp(tcp);
  ASSERT_TRUE(active.Send(Lines("active", 10)));
  ASSERT_TRUE(Reach({{Lines("tcp"), 10}}));
  std::atomic<bool> done{false};
  std::atomic<int> scrapes{0};
  std::atomic<int> failures{0};
  std::thread prober([&] {
    while (!done) {
      std::string body;
      (HttpGet(port_, "/metrics", &body) == 200 ? scrapes : failures)++;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::vector<Client> flood;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 200; ++i) flood.push_back(Client::Tcp(tcp));
    ASSERT_TRUE(active.Send(Lines("active", 10)));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(Reach({{Lines("tcp"), 60}, {Hits(), 6}})) << Show({Lines("tcp"), Hits()});
  done = true;
  prober.join();
  EXPECT_EQ(0, failures);
  EXPECT_GT(scrapes, 5);
  EXPECT_THAT(agent->Stderr(), HasSubstr("a new connection was closed"));
  EXPECT_TRUE(agent->running());
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

class SyslogSourceTest : public NetSourceTest {
 protected:
  static std::string Labels(const std::string& app, const std::string& host) {
    return "app=\"" + app + "\",host=\"" + host + "\",";
  }
};

TEST_F(SyslogSourceTest, Rfc3164And5424OverUdpAndOctetCountedTcpLabelHostAndApp) {
  const uint16_t tcp = testing::FreePort();
  const uint16_t udp = testing::FreePort();
  auto agent = Start(
      "  - {id: syslog-tcp, type: tcp, format: syslog, listen: '127.0.0.1:" + std::to_string(tcp) +
      "'}\n  - {id: syslog-udp, type: udp, format: syslog, listen: '127.0.0.1:" +
      std::to_string(udp) + "'}\n");
  Client udp_client = Client::Udp(udp);
  ASSERT_TRUE(
      udp_client.Send("<11>Dec 31 23:59:59 node07 trainer[4242]: torch.OutOfMemoryError: "
                      "CUDA out of memory. Tried to allocate 2.00 GiB"));
  ASSERT_TRUE(
      udp_client.Send("<11>1 2026-06-01T10:00:00.1Z gpu-a100-3 torchrun 77 - - "
                      "[rank3]: CUDA out of memory\n"));
  Client tcp_client = Client::Tcp(tcp);
  const std::string m1 =
      "<11>1 2026-06-01T10:00:00Z ci-win-3 msbuild - - - step 1\nCUDA out of memory";
  const std::string m2 = "<11>Jun  1 10:00:01 ci-win-3 msbuild: CUDA out of memory";
  ASSERT_TRUE(tcp_client.Send(std::to_string(m1.size()) + " " + m1 + std::to_string(m2.size()) +
                              " " + m2 + "<11>Jun  1 10:00:02 ci-win-3 link: plain LF framing\n"));
  EXPECT_TRUE(Reach({{Lines("syslog-udp"), 2},
                     {Lines("syslog-tcp"), 4},
                     {Hits(Labels("trainer", "node07")), 1},
                     {Hits(Labels("torchrun", "gpu-a100-3")), 1},
                     {Hits(Labels("msbuild", "ci-win-3")), 2}}))
      << Metrics() << agent->Stderr();

  std::string body;
  ASSERT_EQ(200, HttpGet(port_, "/api/v1/findings", &body));
  const nlohmann::json json = nlohmann::json::parse(body);
  bool seen = false;
  for (const auto& f : json["findings"]) {
    if (f["labels"].value("host", "") != "gpu-a100-3") continue;
    seen = true;
    EXPECT_EQ("torchrun", f["labels"]["app"]);
    EXPECT_EQ("[rank3]: CUDA out of memory", f["text"]);  // the header is not the message
    EXPECT_THAT(f["stream"].get<std::string>(), HasSubstr("127.0.0.1:"));
  }
  EXPECT_TRUE(seen) << body;
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

// What util-linux `logger` sends, over every transport it has: the host label is this machine's
// name (logger writes it), the app label the tag.
TEST_F(SyslogSourceTest, LoggerOverUdpTcpOctetCountingAndAUnixSocket) {
  if (access("/usr/bin/logger", X_OK) != 0) GTEST_SKIP() << "needs logger (Debian: bsdutils)";
  const uint16_t tcp = testing::FreePort();
  const uint16_t udp = testing::FreePort();
  auto agent =
      Start("  - {id: t, type: tcp, format: syslog, listen: '127.0.0.1:" + std::to_string(tcp) +
            "'}\n  - {id: u, type: udp, format: syslog, listen: '127.0.0.1:" + std::to_string(udp) +
            "'}\n  - {id: x, type: unixgram, format: syslog, path: log.sock}\n");
  const std::string server = " -n 127.0.0.1 -P ";
  const std::string message = " 'RuntimeError: CUDA out of memory'";
  for (const std::string& args :
       {"--rfc3164 -d" + server + std::to_string(udp) + " -t job3164" + message,
        "--rfc5424 -d" + server + std::to_string(udp) + " -t job5424" + message,
        "--rfc5424 -T --octet-count" + server + std::to_string(tcp) + " -t jobtcp" + message,
        "--rfc3164 -T" + server + std::to_string(tcp) + " -t joblf" + message,
        "-u " + dir_ + "/log.sock -t jobunix" + message}) {
    ASSERT_EQ(0, std::system(("/usr/bin/logger " + args).c_str())) << args;
  }
  char host[256] = {};
  ASSERT_EQ(0, gethostname(host, sizeof(host) - 1));
  EXPECT_TRUE(Reach({{Hits(Labels("job3164", host)), 1},
                     {Hits(Labels("job5424", host)), 1},
                     {Hits(Labels("jobtcp", host)), 1},
                     {Hits(Labels("joblf", host)), 1},
                     {Hits(Labels("jobunix", host)), 1}}))
      << Metrics() << agent->Stderr();
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

}  // namespace
}  // namespace faultline
