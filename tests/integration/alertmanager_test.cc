// The agent against a real Alertmanager (Debian's prometheus-alertmanager), started by the test
// on loopback with one route to the test's own webhook receiver: the agent's alert must show in
// Alertmanager's API with the right labels, and Alertmanager's own notification must arrive.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/integration/process.h"
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

TEST(AlertmanagerTest, TheAgentsAlertShowsInAlertmanagerAndItsNotificationArrives) {
  if (!fs::exists(kAlertmanager)) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") {
      FAIL() << kAlertmanager << " is missing: scripts/install-deps.sh installs it";
    }
    GTEST_SKIP() << kAlertmanager << " is missing (Debian package prometheus-alertmanager)";
  }
  const fs::path dir = testing::TempDir("alertmanager_e2e");
  fs::create_directories(dir / "logs");
  fs::create_directories(dir / "rules");
  fs::create_directories(dir / "am");
  TestReceiver hook;
  const uint16_t am_port = testing::FreePort();
  uint16_t agent_port = testing::FreePort();
  while (agent_port == am_port) agent_port = testing::FreePort();
  std::ofstream(dir / "am" / "alertmanager.yml")
      << "route:\n  receiver: test\n  group_by: [signature]\n  group_wait: 0s\n"
      << "  group_interval: 1s\n  repeat_interval: 1h\n"
      << "receivers:\n  - name: test\n    webhook_configs:\n      - url: '" << hook.url("/am")
      << "'\n        send_resolved: false\n";
  Program am(
      {kAlertmanager, "--config.file=" + (dir / "am" / "alertmanager.yml").string(),
       "--storage.path=" + (dir / "am").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(am_port), "--cluster.listen-address="},
      (dir / "am" / "log").string());
  std::string body;
  ASSERT_TRUE(Eventually([&] { return HttpGet(am_port, "/-/ready", &body) == 200; },
                         std::chrono::seconds(30)))
      << "Alertmanager did not start; see " << (dir / "am" / "log");

  std::ofstream(dir / "rules" / "t.yaml") << "id: t.cuda_oom\ntitle: CUDA out of memory\n"
                                          << "severity: error\ncategory: memory\n"
                                          << "match: ['CUDA out of memory']\n"
                                          << "labels: {gpu: 'GPU (?P<gpu>\\d+)'}\n"
                                          << "root_cause: r\nfix: lower the batch size\n";
  const fs::path config = dir / "faultline.yaml";
  std::ofstream(config) << "rules: {paths: [rules]}\nhttp: {listen: '127.0.0.1:" << agent_port
                        << "'}\nsources:\n  - {id: train, type: file, paths: ['logs/*.log'], "
                        << "start_at: beginning, poll_interval_ms: 50}\n"
                        << "alerts:\n  group_wait_ms: 0\n  host: node07\n  receivers:\n"
                        << "    - {name: am, type: alertmanager, urls: ['http://127.0.0.1:"
                        << am_port << "']}\n";
  Daemon agent({"run", "-c", config.string()});
  std::ofstream(dir / "logs" / "train.log") << "torch.OutOfMemoryError: CUDA out of memory on GPU 3\n";

  json alerts;
  ASSERT_TRUE(Eventually([&] {
    if (HttpGet(am_port, "/api/v2/alerts", &body) != 200) return false;
    alerts = json::parse(body, nullptr, false);
    return alerts.is_array() && !alerts.empty();
  })) << agent.Stderr();
  const json& labels = alerts[0]["labels"];
  EXPECT_EQ("FaultlineSignature", labels["alertname"]);
  EXPECT_EQ("t.cuda_oom{gpu=3}", labels["signature"]);
  EXPECT_EQ("t.cuda_oom", labels["rule"]);
  EXPECT_EQ("3", labels["gpu"]);
  EXPECT_EQ("error", labels["severity"]);
  EXPECT_EQ("train", labels["source"]);
  EXPECT_EQ("node07", labels["host"]);
  EXPECT_EQ("new", alerts[0]["annotations"]["kind"]);
  EXPECT_EQ("lower the batch size", alerts[0]["annotations"]["fix"]);
  EXPECT_EQ("active", alerts[0]["status"]["state"]);

  ASSERT_TRUE(hook.WaitFor(1, std::chrono::seconds(30)));
  const json notification = json::parse(hook.requests()[0].body);
  EXPECT_EQ("/am", hook.requests()[0].target);
  EXPECT_EQ("firing", notification["status"]);
  EXPECT_EQ("t.cuda_oom{gpu=3}", notification["alerts"][0]["labels"]["signature"]);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace faultline
