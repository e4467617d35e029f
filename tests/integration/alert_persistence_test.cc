// The alert lifecycle and the outbox across restarts (docs/alerting.md section 7, behaviours 7, 8
// and 19; issue 9): the real binary, its state store on disk, SIGTERM and kill -9, and real HTTP
// receivers on loopback that the tests start, stop and script (tests/support/http_receiver.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/agent_folder.h"
#include "tests/integration/process.h"
#include "tests/support/http_receiver.h"

namespace faultline {
namespace {

using nlohmann::json;
using testing::Daemon;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::HttpGet;
using testing::ScriptedResponse;
using testing::TestReceiver;

constexpr char kPersistenceRules[] = R"(id: t.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: the batch does not fit
fix: lower the batch size
---
id: t.nccl
title: NCCL watchdog timeout
severity: critical
category: distributed
match: ['Watchdog caught collective operation timeout']
root_cause: r
fix: f
---
id: t.segv
title: Segmentation fault
severity: error
category: runtime
match: ['Segmentation fault \(core dumped\)']
root_cause: r
fix: f
---
id: t.aio
title: async_io cannot be pre-compiled
severity: error
version_of: deepspeed
category: build
match: ['Unable to pre-compile async_io']
root_cause: r
fix: f
)";

constexpr char kVersions[] = R"(- id: t.pip_collecting
  match: 'Collecting (?P<package>[A-Za-z0-9._\-]+)==(?P<version>[0-9][^\s;,)]*)'
)";

class AlertPersistenceTest : public testing::AgentFolderTest {
 protected:
  void SetUp() override {
    AgentFolderTest::SetUp();
    WriteFile("rules/t.yaml", kPersistenceRules);
    WriteFile("rules/t.versions.yaml", kVersions);
    WriteFile("logs/tick.log", "");  // Checkpointed's, followed from the start
  }

  // One webhook receiver `hook` at `url`; checkpoints every 100 ms.
  std::string WriteConfig(const std::string& url) {
    const std::string path = dir_ + "/faultline.yaml";
    std::ofstream(path) << "rules:\n  paths: [rules]\n  context_idle_flush_ms: 200\n"
                        << "http:\n  listen: 127.0.0.1:" << port_ << "\n"
                        << "state:\n  checkpoint_interval_ms: 100\n"
                        << "sources:\n  - id: ci\n    type: file\n    paths: ['logs/*.log']\n"
                        << "    start_at: beginning\n    poll_interval_ms: 50\n"
                        << "discover:\n  alert_after: 3\n"
                        << "alerts:\n  group_wait_ms: 0\n  host: test-host\n  receivers:\n"
                        << "    - {name: hook, type: webhook, url: '" << url << "'}\n";
    return path;
  }
  void Append(const std::string& file, const std::string& text) {
    std::ofstream(dir_ + "/logs/" + file, std::ios::app) << text;
  }
  // The file replaced by a new one with the same lines (another inode): read again from 0.
  void Rewrite(const std::string& file) {
    const std::string path = dir_ + "/logs/" + file;
    std::filesystem::copy_file(path, path + ".new");
    std::filesystem::rename(path + ".new", path);
  }
  std::string Metrics() {
    std::string body;
    return HttpGet(port_, "/metrics", &body) == 200 ? body : "";
  }
  double Matches(const std::string& signature, const std::string& severity = "error") {
    return testing::Sample(Metrics(), "faultline_signature_matches_total{severity=\"" + severity +
                                          "\",signature=\"" + signature + "\"}");
  }
  double QueueDepth() {
    return testing::Sample(Metrics(), "faultline_notification_queue_depth{receiver=\"hook\"}");
  }
  bool Ready() {
    std::string body;
    return HttpGet(port_, "/readyz", &body) == 200;
  }
  // Every alert in the requests `r` received from index `from` on (a webhook body is one alert,
  // or a group with `alerts`).
  static std::vector<json> Alerts(const TestReceiver& r, std::size_t from = 0) {
    std::vector<json> out;
    const auto requests = r.requests();
    for (std::size_t i = from; i < requests.size(); ++i) {
      const json body = json::parse(requests[i].body);
      if (body.contains("alerts")) {
        for (const json& a : body["alerts"]) out.push_back(a);
      } else {
        out.push_back(body);
      }
    }
    return out;
  }
  static std::vector<std::string> Ids(const TestReceiver& r, std::size_t from = 0) {
    std::vector<std::string> ids;
    const auto requests = r.requests();
    for (std::size_t i = from; i < requests.size(); ++i)
      ids.push_back(requests[i].header("webhook-id"));
    return ids;
  }
  // Waits until the agent has read `signature` `n` times.
  void MatchedAt(const std::string& signature, double n, Daemon& agent,
                 const std::string& severity = "error") {
    ASSERT_TRUE(Eventually([&] { return Matches(signature, severity) == n; }))
        << signature << ": " << Matches(signature, severity) << agent.Stderr();
  }
  // MatchedAt, then a moment more for what it would send about it: for a test that then checks
  // that nothing more was sent.
  void SettleAt(const std::string& signature, double n, Daemon& agent,
                const std::string& severity = "error") {
    MatchedAt(signature, n, agent, severity);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
  }
  // Checkpoints the agent wrote (faultline_checkpoint_duration_seconds_count; -1: no answer).
  double Checkpoints() {
    return testing::Sample(Metrics(), "faultline_checkpoint_duration_seconds_count");
  }
  // Returns once everything the agent did before the call is in a checkpoint on disk, so that a
  // kill -9 right after loses none of it: instead of sleeping for "a few checkpoints". The agent
  // answers /metrics and writes checkpoints on its one loop, so a checkpoint counted after
  // `before` was read collected its state after that moment. Only a checkpoint with something to
  // write is counted, so a line for no rule is appended to logs/tick.log to make sure one comes.
  void Checkpointed(Daemon& agent) {
    const double before = Checkpoints();
    ASSERT_GE(before, 0) << agent.Stderr();
    Append("tick.log", "tick\n");
    ASSERT_TRUE(Eventually([&] { return Checkpoints() > before; })) << agent.Stderr();
  }

  // The lines of the most frequent unrecognised template (0: none yet).
  uint64_t TemplateLines() {
    std::string body;
    if (HttpGet(port_, "/api/v1/unrecognised", &body) != 200) return 0;
    const json templates = json::parse(body)["unrecognised"];
    return templates.empty() ? 0 : templates[0]["count"].get<uint64_t>();
  }
};

// Behaviour 7: known signatures survive SIGTERM and kill -9, and reading the same file again from
// offset 0 announces nothing; counters continue.
TEST_F(AlertPersistenceTest, NewIsAnnouncedOnceAcrossSigtermKillNineAndAReReadFromZero) {
  TestReceiver hook;
  const std::string config = WriteConfig(hook.url());
  {
    Daemon agent({"run", "-c", config});
    Append("train.log", "RuntimeError: CUDA out of memory.\n");
    ASSERT_TRUE(hook.WaitFor(1)) << agent.Stderr();
    SettleAt("t.cuda_oom", 1, agent);
    EXPECT_EQ(0, agent.Stop(SIGTERM));
  }
  Rewrite("train.log");
  {
    Daemon agent({"run", "-c", config});
    SettleAt("t.cuda_oom", 2, agent);
    EXPECT_EQ(1u, hook.count()) << "no second new after SIGTERM and a re-read from 0";
    Append("train.log", "Watchdog caught collective operation timeout\n");
    ASSERT_TRUE(hook.WaitFor(2)) << agent.Stderr();
    MatchedAt("t.nccl", 1, agent, "critical");
    ASSERT_TRUE(Eventually([&] { return QueueDepth() == 0; })) << agent.Stderr();  // delivered
    Checkpointed(agent);
    agent.Stop(SIGKILL);
  }
  Rewrite("train.log");
  {
    Daemon agent({"run", "-c", config});
    SettleAt("t.cuda_oom", 3, agent);
    SettleAt("t.nccl", 2, agent, "critical");
    const std::vector<json> alerts = Alerts(hook);
    ASSERT_EQ(2u, alerts.size()) << "no second new after kill -9 and a re-read from 0";
    EXPECT_EQ("new", alerts[0]["kind"]);
    EXPECT_EQ("t.cuda_oom", alerts[0]["signature"]);
    EXPECT_EQ("new", alerts[1]["kind"]);
    EXPECT_EQ("t.nccl", alerts[1]["signature"]);
    EXPECT_EQ(0, agent.Stop(SIGTERM));
  }
}

// Behaviours 3 and 7: a fix recorded before a kill -9 still decides after it, and the regression
// it raised is not raised again after another one.
TEST_F(AlertPersistenceTest, AFixSurvivesKillNineAndItsOneRegressionStaysRaised) {
  TestReceiver hook;
  const std::string config = WriteConfig(hook.url());
  const std::string failure = "Unable to pre-compile async_io\n";
  {
    Daemon agent({"run", "-c", config});
    ASSERT_TRUE(Eventually([&] { return Ready(); })) << agent.Stderr();
    const testing::Completed fixed =
        testing::RunFaultline({"fix", "t.aio", "--version", "0.15.0", "--note", "skip aio", "--by",
                               "alice", "-c", config});
    // Its answer came once the checkpoint holding the fix committed (alert_routes.cc; AlertsTest.
    // AdminMutationsSurviveKillNineRightAfterTheirAnswer): nothing to wait for.
    ASSERT_EQ(0, fixed.exit_code) << fixed.err;
    agent.Stop(SIGKILL);
  }
  {
    Daemon agent({"run", "-c", config});
    Append("old.log", "Collecting deepspeed==0.14.2\n" + failure);
    SettleAt("t.aio", 1, agent);
    EXPECT_EQ(0u, hook.count()) << "0.14.2 is older than the fix: no regression";
    Append("new.log", "Collecting deepspeed==0.15.1\n" + failure);
    ASSERT_TRUE(hook.WaitFor(1)) << agent.Stderr();
    MatchedAt("t.aio", 2, agent);
    ASSERT_TRUE(Eventually([&] { return QueueDepth() == 0; })) << agent.Stderr();  // delivered
    Checkpointed(agent);
    agent.Stop(SIGKILL);
  }
  {
    Daemon agent({"run", "-c", config});
    Append("newer.log", "Collecting deepspeed==0.15.2\n" + failure);
    SettleAt("t.aio", 3, agent);
    const testing::Completed listed = testing::RunFaultline({"signatures", "-c", config});
    EXPECT_EQ(0, listed.exit_code) << listed.err;
    EXPECT_THAT(listed.out, HasSubstr("regressed"));
    EXPECT_EQ(0, agent.Stop(SIGTERM));
  }
  const std::vector<json> alerts = Alerts(hook);
  ASSERT_EQ(1u, alerts.size()) << "one regression per fix, across kill -9";
  EXPECT_EQ("regression", alerts[0]["kind"]);
  EXPECT_EQ("0.15.1", alerts[0]["versions"]["seen_in"]);
  EXPECT_EQ("0.15.0", alerts[0]["versions"]["fixed_in"]);
  EXPECT_EQ("skip aio", alerts[0]["versions"]["note"]);
}

// Behaviours 8 and 20: three notifications for a receiver that refuses connections survive
// kill -9 (the queue depth says so before and after) and go out once each, in order, when it
// comes up; the next restart sends nothing again.
TEST_F(AlertPersistenceTest, NotificationsQueuedForAReceiverThatIsDownSurviveKillNine) {
  const uint16_t hook_port = testing::FreePort();
  const std::string config = WriteConfig("http://127.0.0.1:" + std::to_string(hook_port) + "/hook");
  {
    Daemon agent({"run", "-c", config});
    Append("a.log", "RuntimeError: CUDA out of memory.\n");
    ASSERT_TRUE(Eventually([&] { return QueueDepth() == 1; })) << Metrics() << agent.Stderr();
    Append("a.log", "Watchdog caught collective operation timeout\n");
    ASSERT_TRUE(Eventually([&] { return QueueDepth() == 2; })) << agent.Stderr();
    Append("a.log", "Segmentation fault (core dumped)\n");
    ASSERT_TRUE(Eventually([&] { return QueueDepth() == 3; })) << agent.Stderr();
    Checkpointed(agent);
    agent.Stop(SIGKILL);
  }
  {
    Daemon agent({"run", "-c", config});
    ASSERT_TRUE(Eventually([&] { return QueueDepth() == 3; })) << Metrics() << agent.Stderr();
    TestReceiver hook(hook_port);
    ASSERT_TRUE(hook.WaitFor(3)) << agent.Stderr();
    ASSERT_TRUE(Eventually([&] { return QueueDepth() == 0; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // no delivery twice
    const std::vector<json> alerts = Alerts(hook);
    ASSERT_EQ(3u, alerts.size()) << "each once";
    EXPECT_EQ("t.cuda_oom", alerts[0]["signature"]);
    EXPECT_EQ("t.nccl", alerts[1]["signature"]);
    EXPECT_EQ("t.segv", alerts[2]["signature"]);
    for (const json& a : alerts) EXPECT_EQ("new", a["kind"]);
    const std::vector<std::string> ids = Ids(hook);
    EXPECT_EQ(3u, std::set<std::string>(ids.begin(), ids.end()).size());
    Checkpointed(agent);  // the deliveries are on disk
    agent.Stop(SIGKILL);
    Daemon again({"run", "-c", config});
    ASSERT_TRUE(Eventually([&] { return Ready(); })) << again.Stderr();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(3u, hook.count()) << "delivered is not sent again";
  }
}

// Behaviour 8 with a receiver that answers 503: what it refused survives kill -9 and goes out
// once it answers 200, as the same message (the same webhook-id it was first tried with).
TEST_F(AlertPersistenceTest, ANotificationRefusedWith503SurvivesKillNineWithItsWebhookId) {
  TestReceiver hook;
  hook.SetDefault(ScriptedResponse{503, "unavailable"});
  const std::string config = WriteConfig(hook.url());
  std::string first_id;
  {
    Daemon agent({"run", "-c", config});
    Append("a.log", "RuntimeError: CUDA out of memory.\n");
    ASSERT_TRUE(hook.WaitFor(1)) << agent.Stderr();
    first_id = hook.requests()[0].header("webhook-id");
    agent.Stop(SIGKILL);
  }
  const std::size_t refused = hook.count();
  hook.SetDefault(ScriptedResponse{200, "ok"});
  {
    Daemon agent({"run", "-c", config});
    ASSERT_TRUE(hook.WaitFor(refused + 1)) << agent.Stderr();
    ASSERT_TRUE(Eventually([&] { return QueueDepth() == 0; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(refused + 1, hook.count()) << "delivered once";
    EXPECT_EQ(first_id, hook.requests().back().header("webhook-id"));
    const std::vector<json> alerts = Alerts(hook, refused);
    ASSERT_EQ(1u, alerts.size());
    EXPECT_EQ("new", alerts[0]["kind"]);
    EXPECT_EQ("t.cuda_oom", alerts[0]["signature"]);
    EXPECT_EQ(0, agent.Stop(SIGTERM));
  }
}

// The contract after kill -9 between a delivery and the checkpoint that records it: the
// notification is sent again, with the same webhook-id, so a receiver that deduplicates by it
// sees it once (at-least-once; alert_states.h).
TEST_F(AlertPersistenceTest, AKillNineDuringADeliverySendsItAgainWithTheSameWebhookId) {
  TestReceiver hook;
  hook.SetDefault(ScriptedResponse::Hang());
  const std::string config = WriteConfig(hook.url());
  {
    Daemon agent({"run", "-c", config});
    Append("a.log", "RuntimeError: CUDA out of memory.\n");
    ASSERT_TRUE(hook.WaitFor(1)) << agent.Stderr();
    agent.Stop(SIGKILL);  // the receiver has the request; the agent never hears back
  }
  hook.SetDefault(ScriptedResponse{200, "ok"});
  {
    Daemon agent({"run", "-c", config});
    ASSERT_TRUE(hook.WaitFor(2)) << agent.Stderr();
    ASSERT_TRUE(Eventually([&] { return QueueDepth() == 0; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(2u, hook.count());
    const std::vector<std::string> ids = Ids(hook);
    EXPECT_EQ(ids[0], ids[1]) << "the receiver can tell it is the same message";
    EXPECT_EQ(0, agent.Stop(SIGTERM));
  }
}

// Behaviour 19: a reload (SIGHUP, a new rule) keeps what is queued for a receiver that is down,
// and sends it once when the receiver comes up; what was delivered before is not sent again.
TEST_F(AlertPersistenceTest, AReloadKeepsTheQueueAndSendsNothingTwice) {
  const uint16_t hook_port = testing::FreePort();
  const std::string config = WriteConfig("http://127.0.0.1:" + std::to_string(hook_port) + "/hook");
  Daemon agent({"run", "-c", config});
  Append("a.log", "RuntimeError: CUDA out of memory.\n");
  ASSERT_TRUE(Eventually([&] { return QueueDepth() == 1; })) << Metrics() << agent.Stderr();
  std::ofstream(dir_ + "/rules/more.yaml")
      << "id: t.disk\ntitle: Disk full\nseverity: error\ncategory: hardware\n"
         "match: ['No space left on device']\nroot_cause: r\nfix: f\n";
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Eventually([&] {
    return testing::Sample(Metrics(), "faultline_config_reloads_total{result=\"success\"}") == 1;
  })) << agent.Stderr();
  EXPECT_EQ(1, QueueDepth()) << "the reload kept the queue";
  TestReceiver hook(hook_port);
  ASSERT_TRUE(hook.WaitFor(1)) << agent.Stderr();
  ASSERT_TRUE(Eventually([&] { return QueueDepth() == 0; }));
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Eventually([&] {
    return testing::Sample(Metrics(), "faultline_config_reloads_total{result=\"success\"}") == 2;
  })) << agent.Stderr();
  Append("a.log", "OSError: [Errno 28] No space left on device\n");
  ASSERT_TRUE(hook.WaitFor(2)) << agent.Stderr();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const std::vector<json> alerts = Alerts(hook);
  ASSERT_EQ(2u, alerts.size()) << "each once, across two reloads";
  EXPECT_EQ("t.cuda_oom", alerts[0]["signature"]);
  EXPECT_EQ("t.disk", alerts[1]["signature"]);
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

// Issue 10's alert hook: an error no rule explains, seen discover.alert_after (3) times, is one
// `new` for signature unrecognised.<template id>; its repeats, and a restart, raise nothing more.
TEST_F(AlertPersistenceTest, AnUnrecognisedErrorSeenAlertAfterTimesIsNewOnceAcrossARestart) {
  TestReceiver hook;
  const std::string config = WriteConfig(hook.url());
  const auto shard = [](int n) {
    return "ShardCorruptError: shard /data/train-" + std::to_string(1000 + n) +
           ".tar truncated at byte " + std::to_string(512 * n) + "\n";
  };
  {
    Daemon agent({"run", "-c", config});
    ASSERT_TRUE(Eventually([&] { return Ready(); })) << agent.Stderr();
    Append("a.log", shard(1) + shard(2));
    ASSERT_TRUE(Eventually([&] { return TemplateLines() == 2; })) << agent.Stderr();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(0u, hook.count()) << "two are not alert_after";
    Append("a.log", shard(3));
    ASSERT_TRUE(hook.WaitFor(1)) << agent.Stderr();
    Append("a.log", shard(4) + shard(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    EXPECT_EQ(0, agent.Stop(SIGTERM));
  }
  {
    Daemon agent({"run", "-c", config});
    ASSERT_TRUE(Eventually([&] { return Ready(); })) << agent.Stderr();
    Append("b.log", shard(6) + shard(7) + shard(8) + shard(9));
    ASSERT_TRUE(Eventually([&] { return TemplateLines() >= 4; })) << agent.Stderr();
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    EXPECT_EQ(0, agent.Stop(SIGTERM));
  }
  const std::vector<json> alerts = Alerts(hook);
  ASSERT_EQ(1u, alerts.size()) << "new once, quiet while it repeats and after a restart";
  EXPECT_EQ("new", alerts[0]["kind"]);
  const std::string signature = alerts[0]["signature"];
  EXPECT_THAT(signature, ::testing::StartsWith("unrecognised."));
  EXPECT_THAT(alerts[0]["title"].get<std::string>(), HasSubstr("Unrecognised error"));
  EXPECT_THAT(alerts[0]["fix_command"].get<std::string>(),
              HasSubstr("faultline rules suggest --from LOG --template " +
                        signature.substr(std::string("unrecognised.").size())));
  EXPECT_THAT(alerts[0]["hit"].get<std::string>(), HasSubstr("ShardCorruptError"));
}

}  // namespace
}  // namespace faultline
