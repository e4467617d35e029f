// The fleet of issue 12 on one machine: two agents ("nodes" node-a and node-b, each with its own
// state.dir, HTTP port and alerts.host) send their alerts to an Alertmanager cluster of two peers
// (Debian's prometheus-alertmanager, gossiping on loopback) that routes them with the route of
// deploy/compose/alertmanager.yml (timings shortened) to one webhook receiver the test runs.
// The nodes share one `fixes:` file, as a fleet's configuration management would ship it.
//
//  1. The same new failure on both nodes: the receiver gets exactly one notification, naming
//     both hosts (each agent sends to both peers; the route groups by signature, not host; the
//     second peer finds the first one's notification in the gossiped log and stays quiet).
//  2. The fix is marked once, in the shared file, and both agents reload: Alertmanager is told
//     the alerts are resolved (this route's test receiver asks for resolved notifications).
//  3. The failure in a version before the fix (0.14.2) raises nothing on either node.
//  4. The failure in a newer version (0.15.1) is a regression on both nodes, and the receiver's
//     last notification names both hosts as a regression.
// Only step 1 counts notifications exactly: a peer that flushes its group while the other's
// resolution reaches it may send one stale notification (Alertmanager's clustering delivers at
// least once), so later steps wait for what the receiver must end up hearing. Every wait is on
// a condition; the whole test takes about 15 s.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/integration/process.h"
#include "tests/support/prerequisite.h"
#include "tests/support/http_receiver.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::Daemon;
using testing::Eventually;
using testing::HttpGet;
using testing::Program;
using testing::TestReceiver;

constexpr char kAlertmanager[] = "/usr/bin/prometheus-alertmanager";
constexpr char kSignature[] = "t.async_io";

// The test's rule, and the line that tells a stream its DeepSpeed version.
constexpr char kRule[] = R"(id: t.async_io
title: DeepSpeed async_io cannot be built
severity: error
category: build
match: ['Unable to pre-compile async_io']
version_of: deepspeed
root_cause: libaio is missing
fix: install libaio-dev or set DS_BUILD_AIO=0
)";
constexpr char kVersions[] = R"(- id: t.deepspeed_version
  match: 'Collecting deepspeed==(?P<version>[0-9]\S*)'
  package: deepspeed
)";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Replaces `pattern` in `text`; fails the test when it is not there, so that a change to the
// deploy file is seen here.
std::string Replace(const std::string& text, const std::string& pattern, const std::string& with) {
  EXPECT_NE(std::string::npos, text.find(pattern)) << "no '" << pattern << "' in the deploy file";
  std::string out = text;
  const std::size_t at = out.find(pattern);
  if (at != std::string::npos) out.replace(at, pattern.size(), with);
  return out;
}

// The sum of the samples of `name` whose labels contain `labels` (Prometheus text format).
double Sum(const std::string& metrics, const std::string& name, const std::string& labels = "") {
  std::istringstream in(metrics);
  std::string line;
  double sum = 0;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    if (!labels.empty() && line.find(labels) == std::string::npos) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

std::string Get(uint16_t port, const std::string& path) {
  std::string body;
  return HttpGet(port, path, &body) == 200 ? body : std::string();
}

// What a notification says: its status, and each alert's host and kind.
struct Said {
  std::string status;
  std::set<std::string> hosts;
  std::set<std::string> kinds;
  std::string text;  // for messages
};

Said Read(const testing::ReceivedRequest& request) {
  Said said;
  said.text = request.body;
  const json body = json::parse(request.body, nullptr, false);
  if (!body.is_object()) return said;
  said.status = body.value("status", "");
  for (const json& a : body.value("alerts", json::array())) {
    if (a["labels"].value("signature", "") != kSignature) continue;
    said.hosts.insert(a["labels"].value("host", ""));
    said.kinds.insert(a["annotations"].value("kind", ""));
  }
  return said;
}

class Peer {
 public:
  Peer(const fs::path& dir, const std::string& config, uint16_t web_port, uint16_t cluster_port,
       uint16_t other_cluster_port)
      : web_port_(web_port),
        program_({kAlertmanager, "--config.file=" + config, "--storage.path=" + dir.string(),
                  "--web.listen-address=127.0.0.1:" + std::to_string(web_port),
                  "--cluster.listen-address=127.0.0.1:" + std::to_string(cluster_port),
                  "--cluster.peer=127.0.0.1:" + std::to_string(other_cluster_port),
                  // Settling takes 4 polls of 10 gossip intervals; a peer at position 1 waits
                  // peer-timeout for the first one's notification before sending its own.
                  "--cluster.gossip-interval=50ms", "--cluster.peer-timeout=1s"},
                 (dir / "log").string()),
        log_(dir / "log") {}

  uint16_t port() const { return web_port_; }
  std::string Name() const {
    const json status = json::parse(Get(web_port_, "/api/v2/status"), nullptr, false);
    return status.is_object() ? status["cluster"].value("name", "") : "";
  }
  std::string log() const { return ReadFile(log_); }
  // Settled in a cluster of two.
  bool Ready() const {
    const json status = json::parse(Get(web_port_, "/api/v2/status"), nullptr, false);
    return status.is_object() && status["cluster"].value("status", "") == "ready" &&
           status["cluster"]["peers"].size() == 2;
  }
  json Alerts() const { return json::parse(Get(web_port_, "/api/v2/alerts"), nullptr, false); }
  std::set<std::string> FiringHosts() const {
    std::set<std::string> hosts;
    const json alerts = Alerts();
    if (!alerts.is_array()) return hosts;
    for (const json& a : alerts) {
      if (a["status"].value("state", "") == "active") hosts.insert(a["labels"].value("host", ""));
    }
    return hosts;
  }
  // Each flush of a group asks the notification log whether it was sent already.
  double Queries() const {
    return Sum(Get(web_port_, "/metrics"), "alertmanager_nflog_queries_total");
  }

 private:
  uint16_t web_port_;
  Program program_;
  fs::path log_;
};

struct Node {
  std::string host;
  fs::path dir;
  uint16_t port = 0;
  std::unique_ptr<Daemon> agent;

  std::string Metrics() const { return Get(port, "/metrics"); }
  double Events(const std::string& kind) const {
    return Sum(Metrics(), "faultline_alert_events_total", "kind=\"" + kind + "\"");
  }
  void Log(const std::string& file, const std::string& text) const {
    std::ofstream(dir / "logs" / file) << text;
  }
};

TEST(FleetTest, OneFailureOnTwoNodesIsOneNotificationAndOneSharedFixCoversBoth) {
  FAULTLINE_REQUIRE(fs::exists(kAlertmanager),
                    kAlertmanager << " is missing (Debian package prometheus-alertmanager)");
  const fs::path dir = testing::TempDir("fleet");
  fs::create_directories(dir / "rules");
  std::ofstream(dir / "rules" / "t.yaml") << kRule;
  std::ofstream(dir / "rules" / "t.versions.yaml") << kVersions;
  std::ofstream(dir / "fixes.yaml") << "# fixes marked fleet-wide\n[]\n";

  std::set<uint16_t> taken;
  const auto port = [&taken] {
    uint16_t p = testing::FreePort();
    while (!taken.insert(p).second) p = testing::FreePort();
    return p;
  };
  const uint16_t web[2] = {port(), port()};
  const uint16_t cluster[2] = {port(), port()};

  // The deploy route, its timings shortened, its receiver the test's.
  TestReceiver hook;
  std::string am_config =
      ReadFile(fs::path(FAULTLINE_SOURCE_DIR) / "deploy/compose/alertmanager.yml");
  am_config = Replace(am_config, "group_wait: 30s", "group_wait: 1s");
  am_config = Replace(am_config, "group_interval: 5m", "group_interval: 2s");
  am_config = Replace(am_config, "  - name: default\n",
                      "  - name: default\n    webhook_configs:\n      - url: '" + hook.url("/am") +
                          "'\n        send_resolved: true\n");
  std::ofstream(dir / "alertmanager.yml") << am_config;
  std::vector<std::unique_ptr<Peer>> peers;
  for (int i = 0; i < 2; ++i) {
    fs::create_directories(dir / ("am" + std::to_string(i)));
    peers.push_back(std::make_unique<Peer>(dir / ("am" + std::to_string(i)),
                                           (dir / "alertmanager.yml").string(), web[i], cluster[i],
                                           cluster[1 - i]));
  }
  ASSERT_TRUE(
      Eventually([&] { return peers[0]->Ready() && peers[1]->Ready(); }, std::chrono::seconds(30)))
      << "the cluster did not settle:\n"
      << peers[0]->log() << "\n"
      << peers[1]->log();

  Node nodes[2];
  nodes[0].host = "node-a";
  nodes[1].host = "node-b";
  const std::string urls = "['http://127.0.0.1:" + std::to_string(web[0]) +
                           "', 'http://127.0.0.1:" + std::to_string(web[1]) + "']";
  for (Node& node : nodes) {
    node.dir = dir / node.host;
    node.port = port();
    fs::create_directories(node.dir / "logs");
    const fs::path config = node.dir / "faultline.yaml";
    std::ofstream(config) << "rules: {paths: [" << (dir / "rules").string() << "]}\n"
                          << "http: {listen: '127.0.0.1:" << node.port << "'}\n"
                          << "state: {dir: " << (node.dir / "state").string() << "}\n"
                          << "sources:\n  - {id: builds, type: file, paths: ['"
                          << (node.dir / "logs").string() << "/*.log'], start_at: beginning, "
                          << "poll_interval_ms: 50}\n"
                          << "alerts:\n  group_wait_ms: 0\n  host: " << node.host << "\n"
                          << "  receivers:\n    - {name: am, type: alertmanager, urls: " << urls
                          << "}\n"
                          << "fixes: ../fixes.yaml\n";
    node.agent = std::make_unique<Daemon>(std::vector<std::string>{"run", "-c", config.string()});
  }
  for (const Node& node : nodes) {
    ASSERT_TRUE(
        Eventually([&] { return !Get(node.port, "/readyz").empty(); }, std::chrono::seconds(30)))
        << node.host << ":\n"
        << node.agent->Stderr();
  }
  const auto said = [&] {
    std::vector<Said> all;
    for (const auto& r : hook.requests()) all.push_back(Read(r));
    return all;
  };
  const std::string failure = "[ERROR] Unable to pre-compile async_io\n";

  // 1. New on both nodes: one notification naming both.
  for (const Node& node : nodes)
    node.Log("build-1.log", "Collecting deepspeed==0.14.2\n" + failure);
  ASSERT_TRUE(hook.WaitFor(1, std::chrono::seconds(20)))
      << nodes[0].agent->Stderr() << nodes[1].agent->Stderr() << peers[0]->log();
  // Both peers have flushed the group twice, so the second peer (which waits peer-timeout, then
  // looks for the first one's notification in the gossiped log) has made up its mind.
  ASSERT_TRUE(Eventually([&] { return peers[0]->Queries() >= 2 && peers[1]->Queries() >= 2; }));
  std::vector<Said> heard = said();
  ASSERT_EQ(1u, heard.size()) << heard.back().text;
  EXPECT_EQ("firing", heard[0].status);
  EXPECT_EQ((std::set<std::string>{"node-a", "node-b"}), heard[0].hosts) << heard[0].text;
  EXPECT_EQ((std::set<std::string>{"new"}), heard[0].kinds);
  for (const auto& peer : peers) {
    EXPECT_EQ((std::set<std::string>{"node-a", "node-b"}), peer->FiringHosts())
        << "every agent sends to every peer";
  }

  // 2. The fix, marked once in the shared file; each node reloads (configuration management's
  //    `systemctl reload faultline`). A flush of the second peer (position 1: it sorts after the
  //    first by name) that began before the resolution reached it would notify from its stale,
  //    still firing copy of the group and log that as sent, which hides the regression to come
  //    until repeat_interval. So the fix lands just after that peer's flush, a group_interval
  //    less peer-timeout before its next one. (In production group_interval, 5 min, dwarfs
  //    peer-timeout, 15 s, and the window is rarely hit; it is Alertmanager's at-least-once.)
  const Peer& second = peers[0]->Name() < peers[1]->Name() ? *peers[1] : *peers[0];
  const double flushed = second.Queries();
  ASSERT_TRUE(Eventually([&] { return second.Queries() > flushed; }));
  std::ofstream(dir / "fixes.yaml")
      << "- {signature: t.async_io, version: 0.15.0, note: op builder skips aio, by: alice}\n";
  for (const Node& node : nodes) kill(node.agent->pid(), SIGHUP);
  for (const Node& node : nodes) {
    ASSERT_TRUE(Eventually([&] {
      return Sum(node.Metrics(), "faultline_config_reloads_total", "result=\"success\"") == 1;
    })) << node.agent->Stderr();
    const json signatures = json::parse(Get(node.port, "/api/v1/signatures"), nullptr, false);
    EXPECT_NE(std::string::npos, signatures.dump().find("op builder skips aio")) << signatures;
  }
  ASSERT_TRUE(Eventually([&] {
    heard = said();
    return heard.back().status == "resolved";
  })) << "Alertmanager was not told that the fix resolved the alerts";
  for (const auto& peer : peers) EXPECT_TRUE(peer->FiringHosts().empty());

  // 3. The failure in 0.14.2, older than the fix: counted, raises nothing.
  for (const Node& node : nodes)
    node.Log("build-2.log", "Collecting deepspeed==0.14.2\n" + failure);
  for (const Node& node : nodes) {
    ASSERT_TRUE(Eventually([&] {
      return Sum(node.Metrics(), "faultline_signature_occurrences_total",
                 "reason=\"pre_fix_version\"") == 1;
    })) << node.host
        << ":\n"
        << node.Metrics();
    EXPECT_EQ(0, node.Events("regression")) << node.host;
  }
  for (const auto& peer : peers) EXPECT_TRUE(peer->FiringHosts().empty());

  // 4. The failure in 0.15.1: a regression on both nodes, and the receiver hears of it from both
  //    (in one notification, or, when the second node's alert came just after a flush of the
  //    group, in a second one that names both).
  for (const Node& node : nodes)
    node.Log("build-3.log", "Collecting deepspeed==0.15.1\n" + failure);
  ASSERT_TRUE(Eventually([&] {
    heard = said();
    return heard.back().status == "firing" &&
           heard.back().hosts == std::set<std::string>{"node-a", "node-b"} &&
           heard.back().kinds == std::set<std::string>{"regression"};
  })) << heard.back().text;
  EXPECT_NE(std::string::npos, heard.back().text.find("0.15.1"));
  for (const Node& node : nodes) EXPECT_EQ(1, node.Events("regression")) << node.host;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace faultline
