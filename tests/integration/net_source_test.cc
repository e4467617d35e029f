// `faultline run` with network sources, as senders reach it: real TCP, UDP and Unix sockets on
// loopback, nc-like senders (and util-linux `logger` for syslog), counts read from /metrics and
// /api/v1/findings of the real binary. Each test is bounded to a few seconds.
// Over 600 lines: the source types share parameterised fixtures (Types/*); a file per type would
// repeat them.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/agent_folder.h"
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

constexpr char kNetRule[] = R"(id: t.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
)";
constexpr char kNcclRule[] = R"(id: t.nccl
title: NCCL error
severity: error
category: distributed
match: ['NCCL error']
root_cause: r
fix: f
)";
constexpr char kNetOom[] = "CUDA out of memory";

std::string Hits(const std::string& labels = "", const std::string& signature = "t.cuda_oom") {
  return "faultline_signature_matches_total{" + labels + "severity=\"error\",signature=\"" +
         signature + "\"}";
}
std::string Lines(const std::string& source) {
  return "faultline_lines_total{source=\"" + source + "\"}";
}

// `n` lines, every tenth a hit, each naming its sender.
std::string Lines(const std::string& who, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += i % 10 == 9 ? who + " step " + std::to_string(i) + ": " + kNetOom + "\n"
                        : who + " step " + std::to_string(i) + " loss 0.5\n";
  }
  return text;
}

class NetSourceTest : public testing::AgentFolderTest {
 protected:
  void SetUp() override {
    AgentFolderTest::SetUp();
    WriteFile("rules/t.yaml", kNetRule);
    WriteFile("rules/nccl.yaml", kNcclRule);
  }

  // A config whose sources are `sources` (YAML list items, indented by two).
  std::string WriteConfig(const std::string& sources) {
    const std::string path = dir_ + "/faultline.yaml";
    // Replaced by rename, so that a reload never reads half of it.
    std::ofstream(path + ".tmp") << "rules:\n  paths: [rules]\n  context_idle_flush_ms: 200\n"
                                 << "http:\n  listen: 127.0.0.1:" << port_ << "\nsources:\n"
                                 << sources;
    fs::rename(path + ".tmp", path);
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
        if (testing::Sample(m, series) != value) return false;
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
    for (const std::string& s : series)
      out += s + " = " + std::to_string(testing::Sample(m, s)) + "\n";
    return out;
  }
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

// A reload (SIGHUP) compares each source's section: an unchanged network source keeps its
// connections and their half-read lines; a changed one is restarted (its connections end, their
// last lines counted); a new one starts; one whose address is taken is reported and the rest go on.
TEST_F(NetSourceTest, AReloadKeepsConnectionsOfUnchangedSourcesAndRestartsChangedOnes) {
  const uint16_t keep_port = testing::FreePort();
  const std::string keep =
      "  - {id: keep, type: tcp, listen: '127.0.0.1:" + std::to_string(keep_port) + "'}\n";
  const std::string dgram = "  - {id: dgram, type: unixgram, path: dgram.sock}\n";
  const uint16_t change_port = testing::FreePort();
  const std::string change =
      "  - {id: change, type: tcp, listen: '127.0.0.1:" + std::to_string(change_port) +
      "', max_connections: 10}\n";
  auto agent = Start(keep + dgram + change);
  Client kept = Client::Tcp(keep_port);
  Client changed = Client::Tcp(change_port);
  Client peer = Client::Unix(dir_ + "/dgram.sock", SOCK_DGRAM);
  ASSERT_TRUE(kept.Send("kept: RuntimeError: CUDA out "));
  ASSERT_TRUE(changed.Send("changed: half a line"));
  ASSERT_TRUE(peer.Send("dgram: before the reload"));
  ASSERT_TRUE(Reach({{Lines("dgram"), 1}})) << agent->Stderr();

  const uint16_t added_port = testing::FreePort();
  const std::string reloads = "faultline_config_reloads_total{result=\"success\"}";
  const double before = testing::Sample(Metrics(), reloads);
  WriteConfig(keep + dgram +
              "  - {id: change, type: tcp, listen: '127.0.0.1:" + std::to_string(change_port) +
              "', max_connections: 20}\n  - {id: added, type: tcp, listen: '127.0.0.1:" +
              std::to_string(added_port) + "'}\n  - {id: clash, type: tcp, listen: '127.0.0.1:" +
              std::to_string(keep_port) + "'}\n");
  ASSERT_EQ(0, kill(agent->pid(), SIGHUP));
  ASSERT_TRUE(Eventually([&] { return testing::Sample(Metrics(), reloads) == before + 1; }))
      << agent->Stderr();

  // The kept connection is the same stream: its half line is completed, not cut at the reload.
  ASSERT_TRUE(kept.Send("of memory\n"));
  // The changed source's connection was closed by its restart, its half line counted then.
  char byte = 0;
  timeval wait{5, 0};
  setsockopt(changed.fd(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
  EXPECT_EQ(0, recv(changed.fd(), &byte, 1, 0)) << "the changed source kept its connection";
  Client again = Client::Tcp(change_port);
  ASSERT_TRUE(again.Send("changed: after the reload\n"));
  Client added = Client::Tcp(added_port);
  ASSERT_TRUE(added.Send("added: CUDA out of memory\n"));
  ASSERT_TRUE(peer.Send("dgram: after the reload"));
  EXPECT_TRUE(Reach({{Lines("keep"), 1},
                     {Lines("change"), 2},
                     {Lines("added"), 1},
                     {Lines("dgram"), 2},
                     {Hits(), 2}}))
      << Show({Lines("keep"), Lines("change"), Lines("added"), Lines("dgram"), Hits()})
      << agent->Stderr();
  EXPECT_EQ(-1, recv(kept.fd(), &byte, 1, MSG_DONTWAIT)) << "the kept connection was closed";
  EXPECT_THAT(agent->Stderr(), HasSubstr("source clash not started"));
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

// The same behaviour asked of every network type, with real sockets of that type.
struct NetType {
  std::string type;  // as in the config
  bool stream;       // tcp, unix: one stream per connection; udp, unixgram: per peer
  bool local;        // unix, unixgram: a socket file
};

std::string TypeName(const ::testing::TestParamInfo<NetType>& info) { return info.param.type; }
void PrintTo(const NetType& t, std::ostream* out) { *out << t.type; }

class NetTypeTest : public NetSourceTest, public ::testing::WithParamInterface<NetType> {
 protected:
  void SetUp() override {
    NetSourceTest::SetUp();
    listen_port_ = testing::FreePort();
  }
  // The source under test, id "net"; `extra` adds keys (", idle_timeout_ms: 1000").
  std::unique_ptr<Daemon> StartSource(const std::string& extra = "") {
    const NetType& t = GetParam();
    const std::string where =
        t.local ? "path: net.sock" : "listen: '127.0.0.1:" + std::to_string(listen_port_) + "'";
    return Start("  - {id: net, type: " + t.type + ", " + where + extra + "}\n");
  }
  std::string SocketPath() const { return dir_ + "/net.sock"; }
  // A sender: a new connection, or a new peer (its own port; for unixgram its own socket file
  // when `bind_as` is given, else known by its pid).
  Client Connect(const std::string& bind_as = "") const {
    const NetType& t = GetParam();
    if (t.local) {
      return Client::Unix(SocketPath(), t.stream ? SOCK_STREAM : SOCK_DGRAM,
                          bind_as.empty() ? "" : dir_ + "/" + bind_as);
    }
    return t.stream ? Client::Tcp(listen_port_) : Client::Udp(listen_port_);
  }
  // The stream name the agent must give `client`'s lines (socket_peer.h).
  std::string PeerName(const Client& client, const std::string& bind_as = "") const {
    if (GetParam().local) {
      if (!bind_as.empty()) return dir_ + "/" + bind_as;  // its own socket file
      return "net.sock: pid " + std::to_string(getpid()) + ", uid " + std::to_string(getuid());
    }
    sockaddr_in own{};
    socklen_t length = sizeof(own);
    getsockname(client.fd(), reinterpret_cast<sockaddr*>(&own), &length);
    return "127.0.0.1:" + std::to_string(ntohs(own.sin_port));
  }
  // The source `id` as /api/v1/status shows it, {} when it is not there.
  nlohmann::json SourceStatus(const std::string& id) {
    std::string body;
    if (HttpGet(port_, "/api/v1/status", &body) != 200) return {};
    const nlohmann::json json = nlohmann::json::parse(body);
    for (const auto& source : json["sources"]) {
      if (source["id"] == id) return source;
    }
    return {};
  }
  // The latest finding of `signature`, {} when there is none.
  nlohmann::json Finding(const std::string& signature) {
    std::string body;
    if (HttpGet(port_, "/api/v1/findings", &body) != 200) return {};
    const nlohmann::json json = nlohmann::json::parse(body);
    for (const auto& f : json["findings"]) {
      if (f["signature"] == signature) return f;
    }
    return {};
  }

  uint16_t listen_port_ = 0;
};
// What only connections (tcp, unix) or only datagram peers (udp, unixgram) have.
class StreamTypeTest : public NetTypeTest {};
class DatagramTypeTest : public NetTypeTest {};

// Two senders whose writes interleave: each is its own stream (a connection's half line is never
// joined to another's), named by its peer, so the findings say who sent them.
TEST_P(NetTypeTest, EachSenderIsItsOwnStreamNamedByItsPeer) {
  auto agent = StartSource();
  Client a = Connect("a.sock");
  Client b = Connect();
  ASSERT_TRUE(a.ok() && b.ok());
  size_t a_bytes = 0;
  size_t b_bytes = 0;
  const auto send = [](Client& client, const std::string& bytes, size_t* sent) {
    *sent += bytes.size();
    return client.Send(bytes);
  };
  if (GetParam().stream) {
    ASSERT_TRUE(send(a, "a: RuntimeError: CUDA out ", &a_bytes));
    ASSERT_TRUE(send(b, "b: step 1\nb: NCCL error: unhandled system error\n", &b_bytes));
    // b's lines are counted while a's half line waits for its end...
    ASSERT_TRUE(Reach({{Lines("net"), 2}, {Hits("", "t.nccl"), 1}, {Hits(), 0}}))
        << Show({Lines("net"), Hits(), Hits("", "t.nccl")}) << agent->Stderr();
    ASSERT_TRUE(send(a, "of memory\n", &a_bytes));  // ...which joins only a's own first half.
  } else {
    // A datagram ends its last line: the next datagram from the same peer is a new line.
    ASSERT_TRUE(send(a, "a: RuntimeError: CUDA out of memory", &a_bytes));
    ASSERT_TRUE(send(b, "b: step 1\nb: NCCL error: unhandled system error\n", &b_bytes));
    ASSERT_TRUE(send(a, "a: step 2", &a_bytes));
  }
  const double lines = GetParam().stream ? 3 : 4;
  EXPECT_TRUE(Reach({{Lines("net"), lines}, {Hits(), 1}, {Hits("", "t.nccl"), 1}}))
      << Show({Lines("net"), Hits(), Hits("", "t.nccl")}) << agent->Stderr();
  const nlohmann::json oom = Finding("t.cuda_oom");
  const nlohmann::json nccl = Finding("t.nccl");
  ASSERT_FALSE(oom.is_null());
  ASSERT_FALSE(nccl.is_null());
  EXPECT_EQ("net", oom["source"]);
  EXPECT_EQ("a: RuntimeError: CUDA out of memory", oom["text"]);
  // A Unix sender that bound a socket file of its own is named by it, one that did not by its
  // pid and uid (the kernel's word); an IP sender by its address and port.
  EXPECT_THAT(oom["stream"].get<std::string>(), HasSubstr(PeerName(a, "a.sock")));
  EXPECT_THAT(nccl["stream"].get<std::string>(), HasSubstr(PeerName(b)));
  EXPECT_NE(oom["stream"], nccl["stream"]);

  // The status page lists both senders as the source's streams, with what each has sent.
  const nlohmann::json net = SourceStatus("net");
  EXPECT_EQ(GetParam().type, net.value("type", "")) << net;
  std::map<std::string, uint64_t> read;
  for (const auto& stream : net.value("streams", nlohmann::json::array())) {
    read[stream["name"].get<std::string>()] = stream["read_bytes"].get<uint64_t>();
  }
  ASSERT_EQ(2u, read.size()) << net;
  for (const auto& [name, bytes] : read) {
    const bool is_a = name == oom["stream"];
    EXPECT_TRUE(is_a || name == nccl["stream"]) << name;
    EXPECT_EQ(is_a ? a_bytes : b_bytes, bytes) << name;
  }
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

// A connection silent for idle_timeout_ms is closed by the agent: its half line is counted and
// the sender sees the end of the connection; a sender that keeps talking is not closed.
TEST_P(StreamTypeTest, AnIdleConnectionIsClosedAndItsLastLineCounted) {
  auto agent = StartSource(", idle_timeout_ms: 1000");
  Client idle = Connect();
  Client talking = Connect();
  ASSERT_TRUE(idle.Send("idle: CUDA out of memory"));
  const auto began = std::chrono::steady_clock::now();
  int sent = 0;
  // For twice the timeout, `talking` sends a line every 100 ms while `idle` says nothing.
  while (std::chrono::steady_clock::now() - began < std::chrono::milliseconds(2000)) {
    ASSERT_TRUE(talking.Send("talking " + std::to_string(sent++) + "\n"));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(Reach({{Lines("net"), sent + 1.0}, {Hits(), 1}}))
      << Show({Lines("net"), Hits()}) << agent->Stderr();
  char byte = 0;
  timeval wait{5, 0};
  setsockopt(idle.fd(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
  EXPECT_EQ(0, recv(idle.fd(), &byte, 1, 0)) << "the idle connection was not closed by the agent";
  ASSERT_TRUE(talking.Send("talking: still here\n"));
  EXPECT_TRUE(Reach({{Lines("net"), sent + 2.0}})) << Show({Lines("net")});
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

TEST_P(StreamTypeTest, APartialLineIsCountedWhenTheSenderCloses) {
  auto agent = StartSource();
  Client client = Connect();
  ASSERT_TRUE(client.Send("epoch 1\r\x1b[31mRuntimeError: CUDA out of memory\x1b[0m"));
  // Framed like a file: '\r' ends a line, ANSI is stripped; the last line waits for more...
  ASSERT_TRUE(Reach({{Lines("net"), 1}, {Hits(), 0}})) << Show({Lines("net"), Hits()});
  client.Close();  // ...until the peer closes.
  EXPECT_TRUE(Reach({{Lines("net"), 2}, {Hits(), 1}})) << Show({Lines("net"), Hits()});
  EXPECT_EQ("RuntimeError: CUDA out of memory", Finding("t.cuda_oom")["text"]);
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

// Far more connections than the cap: the newcomers are closed at once, an active sender keeps
// its connection and its counts, and /metrics answers throughout.
TEST_P(StreamTypeTest, AConnectionFloodBeyondTheCapKeepsMetricsAnswering) {
  auto agent = StartSource(", max_connections: 20");
  Client active = Connect();
  ASSERT_TRUE(active.Send(Lines("active", 10)));
  ASSERT_TRUE(Reach({{Lines("net"), 10}}));
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
    for (int i = 0; i < 200; ++i) flood.push_back(Connect());
    ASSERT_TRUE(active.Send(Lines("active", 10)));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(Reach({{Lines("net"), 60}, {Hits(), 6}})) << Show({Lines("net"), Hits()});
  done = true;
  prober.join();
  EXPECT_EQ(0, failures);
  EXPECT_GT(scrapes, 5);
  EXPECT_THAT(agent->Stderr(), HasSubstr("a new connection was closed"));
  const nlohmann::json status = SourceStatus("net");
  ASSERT_FALSE(status.value("problems", nlohmann::json::array()).empty()) << status;
  EXPECT_EQ("max_connections", status["problems"][0]["name"]) << status;
  EXPECT_THAT(status["problems"][0]["message"].get<std::string>(), HasSubstr("closed at once"));
  EXPECT_EQ(20u, status["streams"].size()) << status;  // the active sender and 19 silent ones
  EXPECT_TRUE(agent->running());
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

// More peers than max_peers: the stream of the one heard from least recently ends (and settles)
// to make room, and every line of every peer is still counted.
TEST_P(DatagramTypeTest, PeersBeyondTheCapAreAllCounted) {
  auto agent = StartSource(", max_peers: 4");
  std::vector<Client> peers;
  for (int p = 0; p < 40; ++p) {
    peers.push_back(Connect("peer" + std::to_string(p) + ".sock"));
    ASSERT_TRUE(peers.back().ok());
  }
  for (int round = 0; round < 5; ++round) {
    for (int p = 0; p < 40; ++p) {
      ASSERT_TRUE(peers[p].Send(Lines("peer" + std::to_string(p), 10)));
    }
  }
  EXPECT_TRUE(Reach({{Lines("net"), 40 * 5 * 10}, {Hits(), 40 * 5}}))
      << Show({Lines("net"), Hits()}) << agent->Stderr();
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

// One sender sends a 100 MiB line and then binary garbage as fast as it can; another sender's
// lines must be counted, every one and promptly, while that is still going on.
TEST_P(NetTypeTest, ALongLineOrGarbageFromOneSenderDoesNotDelayAnother) {
  auto agent = StartSource();
  std::atomic<bool> stop{false};
  std::atomic<bool> flooding{true};
  std::atomic<uint64_t> flooded{0};
  const bool stream = GetParam().stream;
  std::thread flooder([&] {
    Client flood = Connect("flood.sock");
    if (stream) {  // one line of 100 MiB, no newline yet
      const std::string chunk(1 << 20, 'x');
      for (int i = 0; i < 100 && !stop; ++i) {
        if (!flood.Send(chunk)) break;
        flooded += chunk.size();
      }
    }
    // Every byte value but the line ends, so each datagram is one line of garbage.
    std::string garbage(stream ? 1 << 20 : 8192, '\0');
    for (size_t i = 0; i < garbage.size(); ++i) {
      garbage[i] = static_cast<char>(i * 131 % 251);
      if (garbage[i] == '\n' || garbage[i] == '\r') garbage[i] = '\x1b';
    }
    while (!stop && flood.Send(garbage)) {
      flooded += garbage.size();
      // UDP has no flow control: past what the agent reads, the kernel drops datagrams, the
      // other peer's too. So this one floods at a rate the agent can read (~16 MB/s); a Unix
      // datagram sender waits for room instead and floods as fast as the agent reads.
      if (!stream && !GetParam().local) std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    flooding = false;
  });
  ASSERT_TRUE(Eventually([&] { return flooded > (stream ? 16u << 20 : 4u << 20); }))
      << agent->Stderr();
  Client other = Connect();
  for (int d = 0; d < 10; ++d) ASSERT_TRUE(other.Send(Lines("other" + std::to_string(d), 10)));
  const auto sent = std::chrono::steady_clock::now();
  const bool counted = Eventually([&] { return testing::Sample(Metrics(), Hits()) == 10; },
                                  std::chrono::seconds(10));
  const auto took = std::chrono::steady_clock::now() - sent;
  const bool still_flooding = flooding;
  const std::string while_flooding = Show({Lines("net"), Hits()});
  stop = true;
  flooder.join();
  EXPECT_TRUE(counted) << while_flooding << agent->Stderr();
  EXPECT_TRUE(still_flooding);
  EXPECT_LT(took, std::chrono::seconds(2));
  if (stream) {
    // The 100 MiB line was cut at max_line_bytes (1 MiB) and counted as truncated lines.
    EXPECT_GE(testing::Sample(Metrics(), "faultline_lines_truncated_total"), 1);
  }
  EXPECT_TRUE(agent->running());
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

const NetType kTcp{"tcp", true, false};
const NetType kUnix{"unix", true, true};
const NetType kUdp{"udp", false, false};
const NetType kUnixgram{"unixgram", false, true};
INSTANTIATE_TEST_SUITE_P(Types, NetTypeTest, ::testing::Values(kTcp, kUnix, kUdp, kUnixgram),
                         TypeName);
INSTANTIATE_TEST_SUITE_P(Types, StreamTypeTest, ::testing::Values(kTcp, kUnix), TypeName);
INSTANTIATE_TEST_SUITE_P(Types, DatagramTypeTest, ::testing::Values(kUdp, kUnixgram), TypeName);

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

// A syslog line's finding is dated by its sender: first and last seen on /api/v1/status are the
// headers' times (RFC 5424 with its offset, RFC 3164 in local time), the earliest and latest of
// them even when they arrive out of order; a sender whose clock runs a day ahead is dated by
// arrival instead.
TEST_F(SyslogSourceTest, AFindingCarriesTheSendersTimestamp) {
  WriteFile("rules/ahead.yaml",
            "id: t.ahead\ntitle: ahead\nseverity: error\ncategory: runtime\n"
            "match: ['clock ahead failure']\nroot_cause: r\nfix: f\n");
  const uint16_t tcp = testing::FreePort();
  const uint16_t udp = testing::FreePort();
  auto agent = Start(
      "  - {id: t, type: tcp, format: syslog, listen: '127.0.0.1:" + std::to_string(tcp) +
      "'}\n  - {id: u, type: udp, format: syslog, listen: " + "'127.0.0.1:" + std::to_string(udp) +
      "'}\n");
  const std::time_t now = std::time(nullptr);
  const auto format = [](std::time_t t, bool local, const char* pattern) {
    std::tm tm{};
    if (local) {
      localtime_r(&t, &tm);
    } else {
      gmtime_r(&t, &tm);
    }
    char buf[64];
    std::strftime(buf, sizeof buf, pattern, &tm);
    return std::string(buf);
  };
  const auto iso = [&](std::time_t t) { return format(t, false, "%Y-%m-%dT%H:%M:%SZ"); };
  const std::time_t hour_ago = now - 3600;
  const std::time_t two_hours_ago = now - 7200;
  const std::time_t two_minutes_ago = now - 120;

  Client udp_client = Client::Udp(udp);
  ASSERT_TRUE(udp_client.Send("<11>1 " + format(hour_ago, false, "%Y-%m-%dT%H:%M:%S.500Z") +
                              " node1 trainer - - - CUDA out of memory"));
  ASSERT_TRUE(udp_client.Send("<11>1 " + iso(now + 86400) + " node1 trainer - - - " +
                              "clock ahead failure"));
  ASSERT_TRUE(Reach({{Lines("u"), 2}})) << Metrics() << agent->Stderr();
  const std::time_t received = std::time(nullptr);
  Client tcp_client = Client::Tcp(tcp);
  // Written before the UDP one, arriving after it; then RFC 3164, in this machine's local time.
  ASSERT_TRUE(tcp_client.Send("<11>1 " + format(two_hours_ago, false, "%Y-%m-%dT%H:%M:%S+00:00") +
                              " node1 trainer - - - CUDA out of memory\n<11>" +
                              format(two_minutes_ago, true, "%b %e %H:%M:%S") +
                              " node2 nccl: NCCL error\n"));
  ASSERT_TRUE(Reach({{Lines("t"), 2}})) << Metrics() << agent->Stderr();

  std::string body;
  ASSERT_EQ(200, HttpGet(port_, "/api/v1/status", &body));
  const nlohmann::json status = nlohmann::json::parse(body);
  std::map<std::string, nlohmann::json> by_rule;
  for (const auto& s : status["signatures"]) by_rule[s["rule_id"]] = s;
  ASSERT_EQ(3u, status["signatures"].size()) << body;  // one host and app each
  EXPECT_EQ(iso(two_hours_ago), by_rule["t.cuda_oom"]["first_seen"]) << body;
  EXPECT_EQ(iso(hour_ago), by_rule["t.cuda_oom"]["last_seen"]) << body;
  EXPECT_EQ(static_cast<int64_t>(two_hours_ago) * 1000,
            by_rule["t.cuda_oom"]["last_hit"]["line_time_ms"]);
  EXPECT_EQ(iso(two_minutes_ago), by_rule["t.nccl"]["first_seen"]) << body;
  // A day ahead: not believed, so its arrival (and the hit has no line time).
  const std::string ahead = by_rule["t.ahead"]["first_seen"];
  EXPECT_GE(ahead, iso(now)) << body;
  EXPECT_LE(ahead, iso(received)) << body;
  EXPECT_FALSE(by_rule["t.ahead"]["last_hit"].contains("line_time")) << body;
  EXPECT_EQ(0, agent->Stop(SIGTERM));
}

}  // namespace
}  // namespace faultline
