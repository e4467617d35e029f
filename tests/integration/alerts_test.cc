// Alerts as a user gets them: the real binary, real files, the state store on disk, and real HTTP
// receivers on loopback that the tests start and script (tests/support/http_receiver.h).
// Over 600 lines: one fixture (agent, receiver, store) for the lifecycle scenarios of
// docs/alerting.md; split, each part would repeat the fixture.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
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

constexpr char kAlertRules[] = R"(id: t.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: the batch does not fit
fix: lower the batch size
fix_command: 'export BATCH=8'
---
id: t.flood
title: Numbered failure
severity: error
category: runtime
match: ['failure number \d+']
labels: {n: 'failure number (?P<n>\d+)'}
max_label_values: 1000
root_cause: r
fix: f
---
id: t.nccl
title: NCCL watchdog timeout
severity: critical
category: distributed
match: ['Watchdog caught collective operation timeout']
root_cause: r
fix: f
)";

class AlertsTest : public testing::AgentFolderTest {
 protected:
  // The agent's record of `signature` from /api/v1/signatures; null when it has none (yet).
  json SignatureRecord(const std::string& signature) const {
    std::string body;
    if (HttpGet(port_, "/api/v1/signatures", &body) != 200) return json();
    const json all = json::parse(body);
    for (const json& s : all["signatures"]) {
      if (s["signature"] == signature) return s;
    }
    return json();
  }
  void SetUp() override {
    AgentFolderTest::SetUp();
    WriteFile("rules/t.yaml", kAlertRules);
  }

  // A config with `receivers` (YAML list items, indented under alerts.receivers).
  std::string WriteConfig(const std::string& receivers, int group_wait_ms = 0,
                          const std::string& rules = "rules", const std::string& extra = "") {
    const std::string path = dir_ + "/faultline.yaml";
    std::ofstream(path) << "rules:\n  paths: [" << rules << "]\n  context_idle_flush_ms: 200\n"
                        << "http:\n  listen: 127.0.0.1:" << port_ << "\n"
                        << "sources:\n  - id: ci\n    type: file\n    paths: ['logs/*.log']\n"
                        << "    start_at: beginning\n    poll_interval_ms: 50\n"
                        << "alerts:\n  group_wait_ms: " << group_wait_ms << "\n  host: test-host\n"
                        << "  receivers:\n"
                        << receivers << extra;
    return path;
  }
  static std::string Hook(const std::string& name, const TestReceiver& r,
                          const std::string& type = "webhook", const std::string& more = "") {
    return "    - {name: " + name + ", type: " + type + ", url: '" + r.url() + "'" + more + "}\n";
  }
  void Append(const std::string& file, const std::string& text) {
    std::ofstream(dir_ + "/logs/" + file, std::ios::app) << text;
  }
  std::string Metrics() {
    std::string body;
    HttpGet(port_, "/metrics", &body);
    return body;
  }
  bool Ready() {
    std::string body;
    return HttpGet(port_, "/readyz", &body) == 200;
  }
  static json Body(const testing::ReceivedRequest& r) { return json::parse(r.body); }
  static std::vector<std::string> Kinds(const TestReceiver& r) {
    std::vector<std::string> kinds;
    for (const auto& request : r.requests()) kinds.push_back(Body(request)["kind"]);
    return kinds;
  }
};

TEST_F(AlertsTest, TenThousandIdenticalLinesAreOneNotificationWithTheirCount) {
  TestReceiver hook;
  const std::string config = WriteConfig(Hook("hook", hook), /*group_wait_ms=*/1500);
  Daemon agent({"run", "-c", config});
  ASSERT_TRUE(Eventually([&] { return Ready(); }));
  std::string lines;
  for (int i = 0; i < 10000; ++i) lines += "RuntimeError: CUDA out of memory. Tried to allocate\n";
  Append("train.log", lines);
  ASSERT_TRUE(hook.WaitFor(1));
  ASSERT_TRUE(Eventually([&] {
    return testing::Sample(
               Metrics(),
               "faultline_signature_matches_total{severity=\"error\",signature=\"t.cuda_oom\"}") ==
           10000;
  }));
  const json body = Body(hook.requests()[0]);
  EXPECT_EQ("new", body["kind"]);
  EXPECT_EQ("t.cuda_oom", body["signature"]);
  EXPECT_EQ("error", body["severity"]);
  EXPECT_EQ("CUDA out of memory", body["title"]);
  EXPECT_EQ(10000, body["count"]);
  EXPECT_EQ("lower the batch size", body["fix"]);
  EXPECT_EQ("test-host", body["host"]);
  EXPECT_THAT(body["file"].get<std::string>(), HasSubstr("train.log"));
  EXPECT_EQ(1, body["line"]);
  EXPECT_FALSE(body["context_after"].empty()) << "the lines after the hit";
  // Nothing more comes: the repeats are counted, not notified.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(1u, hook.count());
}

TEST_F(AlertsTest, OnlyTheFailingReceiverIsRetried) {
  TestReceiver slack;
  slack.Script({ScriptedResponse{500, "rollup_error"}, ScriptedResponse{500, "rollup_error"}});
  TestReceiver hook;
  const std::string config = WriteConfig(Hook("chat", slack, "slack") + Hook("hook", hook));
  Daemon agent({"run", "-c", config});
  Append("train.log", "RuntimeError: CUDA out of memory.\n");
  ASSERT_TRUE(slack.WaitFor(3, std::chrono::seconds(30))) << agent.Stderr();
  ASSERT_TRUE(hook.WaitFor(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(1u, hook.count()) << "the webhook gets no duplicate";
  EXPECT_EQ(3u, slack.count());
  const auto attempts = slack.requests();
  EXPECT_EQ(attempts[0].body, attempts[2].body) << "a retry sends the same message";
  const json message = json::parse(attempts[2].body);
  EXPECT_THAT(message["text"].get<std::string>(), HasSubstr("NEW: t.cuda_oom"));
  EXPECT_THAT(
      Metrics(),
      HasSubstr(
          "faultline_notifications_total{kind=\"new\",receiver=\"chat\",result=\"retried\"} 2"));
}

TEST_F(AlertsTest, RateLimitedReceiverWaitsRetryAfterAndAGoneOneIsDisabledWithAMetaAlert) {
  TestReceiver limited;
  limited.Script({ScriptedResponse{429, "", {{"Retry-After", "1"}}}});
  TestReceiver gone;
  gone.SetDefault(ScriptedResponse{404, "no_service"});
  const std::string config = WriteConfig(Hook("limited", limited) + Hook("gone", gone, "slack"));
  Daemon agent({"run", "-c", config});
  Append("train.log", "RuntimeError: CUDA out of memory.\n");
  ASSERT_TRUE(limited.WaitFor(3)) << agent.Stderr();
  const auto requests = limited.requests();
  EXPECT_GE(requests[1].at - requests[0].at, std::chrono::milliseconds(950)) << "Retry-After: 1";
  EXPECT_EQ(Body(requests[0])["id"], Body(requests[1])["id"]);
  const std::vector<std::string> kinds = Kinds(limited);
  EXPECT_EQ("receiver_disabled", kinds[2]);
  EXPECT_THAT(Body(requests[2])["detail"].get<std::string>(), HasSubstr("no_service"));
  EXPECT_TRUE(Eventually([&] {
    return Metrics().find("faultline_receiver_disabled{receiver=\"gone\"} 1") != std::string::npos;
  }));
  Append("train.log", "[E] Watchdog caught collective operation timeout\n");
  ASSERT_TRUE(limited.WaitFor(4));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(1u, gone.count()) << "a disabled receiver is not tried again";
}

// The DeepSpeed story of issue 9: fixed in 0.15.0; a failing 0.14.2 build is old news, a failing
// 0.15.1 build is one regression that names both versions and the fix's note.
TEST_F(AlertsTest, VersionStoryFixedIn0150Then0142IsNoRegressionThen0151IsOne) {
  TestReceiver hook;
  const std::string config =
      WriteConfig(Hook("hook", hook), 0, std::string(FAULTLINE_SOURCE_DIR) + "/rules");
  Daemon agent({"run", "-c", config});
  ASSERT_TRUE(Eventually([&] { return Ready(); }, std::chrono::seconds(60))) << agent.Stderr();
  const testing::Completed fixed = testing::RunFaultline(
      {"fix", "deepspeed.async_io.windows_link", "--version", "0.15.0", "--note",
       "op builder skips aio on Windows", "--by", "alice", "-c", config});
  ASSERT_EQ(0, fixed.exit_code) << fixed.err;
  const std::string build =
      "  Building wheel for deepspeed (setup.py): started\n"
      "LINK : fatal error LNK1181: cannot open input file 'aio.lib'\n"
      "[ERROR] Unable to pre-compile async_io\n"
      "error: subprocess-exited-with-error\n";
  // Every alert about the fixed signature, in the order received (other rules raise their own
  // `new` on the same logs: pip's build failure, the pre-compile abort).
  const auto about_fix = [&] {
    std::vector<json> found;
    for (const auto& r : hook.requests()) {
      const json body = Body(r);
      for (const json& a : body["alerts"]) {
        if (a["rule_id"] == "deepspeed.async_io.windows_link") found.push_back(a);
      }
    }
    return found;
  };
  Append("build-0142.log", "Collecting deepspeed==0.14.2\n" + build);
  ASSERT_TRUE(Eventually([&] {
    return Metrics().find("faultline_signature_occurrences_total{reason=\"pre_fix_version\"") !=
           std::string::npos;
  })) << Metrics();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(about_fix().empty()) << "an old version is not a regression";
  Append("build-0151.log", "Collecting deepspeed==0.15.1\n" + build);
  ASSERT_TRUE(Eventually([&] { return !about_fix().empty(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::vector<json> alerts = about_fix();
  ASSERT_EQ(1u, alerts.size());
  const json& body = alerts[0];
  EXPECT_EQ("regression", body["kind"]);
  EXPECT_EQ("deepspeed.async_io.windows_link{lib=aio}", body["signature"]);
  EXPECT_EQ("0.15.1", body["versions"]["seen_in"]);
  EXPECT_EQ("0.15.0", body["versions"]["fixed_in"]);
  EXPECT_EQ("op builder skips aio on Windows", body["versions"]["note"]);
  EXPECT_EQ("alice", body["versions"]["fixed_by"]);
  const testing::Completed listed = testing::RunFaultline({"signatures", "-c", config});
  EXPECT_EQ(0, listed.exit_code) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("regressed"));
  EXPECT_THAT(listed.out, HasSubstr("deepspeed.async_io.windows_link{lib=aio}"));
}

// docs/alerting.md section 7, behaviours 1 and 2, with the real rule pack.
TEST_F(AlertsTest, FourLocalisedLinesAreOneSignatureAndOneNewAndCufileIsAnother) {
  TestReceiver hook;
  const std::string config =
      WriteConfig(Hook("hook", hook), 300, std::string(FAULTLINE_SOURCE_DIR) + "/rules");
  Daemon agent({"run", "-c", config});
  ASSERT_TRUE(Eventually([&] { return Ready(); }, std::chrono::seconds(60))) << agent.Stderr();
  Append("build.log",
         "DS_BUILD_OPS=1\n"
         "LINK : fatal error LNK1181: cannot open input file 'aio.lib'\n"
         "LINK : fatal error LNK1181: \xE6\x97\xA0\xE6\xB3\x95\xE6\x89\x93\xE5\xBC\x80\xE8\xBE\x93"
         "\xE5\x85\xA5\xE6\x96\x87\xE4\xBB\xB6\xE2\x80\x9C"
         "aio.lib\xE2\x80\x9D\n"
         "LINK : fatal error LNK1181: Eingabedatei \"aio.lib\" kann nicht ge\xC3\xB6"
         "ffnet werden.\n"
         "LINK : fatal error LNK1181: no se puede abrir el archivo de entrada 'aio.lib'\n"
         "[ERROR] Unable to pre-compile async_io\n");
  const std::string aio =
      "faultline_signature_matches_total{lib=\"aio\",severity=\"error\",signature=\"deepspeed."
      "async_io.windows_link\"}";
  ASSERT_TRUE(Eventually([&] { return testing::Sample(Metrics(), aio) == 4; })) << Metrics();
  ASSERT_TRUE(hook.WaitFor(1)) << agent.Stderr();
  // A message for another of the four would be on its way by now: the agent's queue is empty.
  ASSERT_TRUE(Eventually([&] {
    return Metrics().find("faultline_notification_queue_depth{receiver=\"hook\"} 0") !=
           std::string::npos;
  })) << Metrics();
  std::vector<std::string> news;
  for (const auto& r : hook.requests()) {
    const json body = Body(r);
    for (const json& a : body["alerts"]) {
      if (a["rule_id"] == "deepspeed.async_io.windows_link") news.push_back(a["signature"]);
    }
  }
  EXPECT_EQ(std::vector<std::string>{"deepspeed.async_io.windows_link{lib=aio}"}, news);
  Append("build.log",
         "DS_BUILD_OPS=1\nLINK : fatal error LNK1181: cannot open input file 'cufile.lib'\n"
         "[ERROR] Unable to pre-compile gds\n");
  ASSERT_TRUE(Eventually([&] {
    for (const auto& r : hook.requests()) {
      const json body = Body(r);
      for (const json& a : body["alerts"]) {
        if (a["signature"] == "deepspeed.async_io.windows_link{lib=cufile}")
          return a["kind"] == "new";
      }
    }
    return false;
  }));
}

TEST_F(AlertsTest, AWarningIsCountedButPagesNobody) {
  TestReceiver hook;
  const std::string config =
      WriteConfig(Hook("hook", hook), 0, std::string(FAULTLINE_SOURCE_DIR) + "/rules");
  Daemon agent({"run", "-c", config});
  ASSERT_TRUE(Eventually([&] { return Ready(); }, std::chrono::seconds(60))) << agent.Stderr();
  // The import-time probe: the same LNK1181 line, no build around it.
  Append("import.log",
         "[2025-03-14 09:12:05,331] [INFO] [real_accelerator.py:219:get_accelerator] Setting "
         "ds_accelerator to cuda (auto detect)\n"
         "test.c\nLINK : fatal error LNK1181: cannot open input file 'aio.lib'\n");
  ASSERT_TRUE(Eventually([&] {
    return testing::Sample(Metrics(),
                           "faultline_signature_matches_total{lib=\"aio\",severity=\"warning\","
                           "signature=\"deepspeed.async_io.windows_link\"}") == 1;
  })) << Metrics();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(0u, hook.count());
}

TEST_F(AlertsTest, AReloadKeepsTheLifecycleAndAlertsOnTheNewRules) {
  TestReceiver hook;
  const std::string config = WriteConfig(Hook("hook", hook));
  Daemon agent({"run", "-c", config});
  ASSERT_TRUE(Eventually([&] { return Ready(); }));
  Append("train.log", "RuntimeError: CUDA out of memory.\n");
  ASSERT_TRUE(hook.WaitFor(1)) << agent.Stderr();

  // A new rule and a changed group_wait arrive by SIGHUP; the receivers stay as they are.
  std::ofstream(dir_ + "/rules/more.yaml")
      << "id: t.segv\ntitle: Segmentation fault in a worker\nseverity: error\ncategory: runtime\n"
         "match: ['Segmentation fault \\(core dumped\\)']\nroot_cause: r\nfix: f\n";
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Eventually([&] {
    return testing::Sample(Metrics(), "faultline_config_reloads_total{result=\"success\"}") == 1;
  })) << agent.Stderr();

  Append("train.log", "RuntimeError: CUDA out of memory.\nSegmentation fault (core dumped)\n");
  ASSERT_TRUE(hook.WaitFor(2)) << agent.Stderr();
  ASSERT_TRUE(Eventually([&] {
    return testing::Sample(
               Metrics(),
               "faultline_signature_matches_total{severity=\"error\",signature=\"t.cuda_oom\"}") ==
           2;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // The known signature is not announced again; the new rule's first failure is, by its title.
  ASSERT_EQ(2u, hook.count());
  const json second = Body(hook.requests()[1]);
  EXPECT_EQ("new", second["kind"]);
  EXPECT_EQ("t.segv", second["signature"]);
  EXPECT_EQ("Segmentation fault in a worker", second["title"]);
}

TEST_F(AlertsTest, MutedSignaturesAreCountedAndSummarisedWhenUnmuted) {
  TestReceiver hook;
  const std::string config = WriteConfig(Hook("hook", hook));
  Daemon agent({"run", "-c", config});
  Append("a.log", "RuntimeError: CUDA out of memory.\n");
  ASSERT_TRUE(hook.WaitFor(1));
  const testing::Completed muted = testing::RunFaultline(
      {"mute", "t.cuda_oom", "--for", "8h", "--reason", "known, fix in 1.2", "-c", config});
  ASSERT_EQ(0, muted.exit_code) << muted.err;
  Append("b.log", "RuntimeError: CUDA out of memory.\nRuntimeError: CUDA out of memory.\n");
  ASSERT_TRUE(Eventually([&] {
    return testing::Sample(
               Metrics(),
               "faultline_signature_matches_total{severity=\"error\",signature=\"t.cuda_oom\"}") ==
           3;
  }));
  const testing::Completed unmuted = testing::RunFaultline({"unmute", "t.cuda_oom", "-c", config});
  ASSERT_EQ(0, unmuted.exit_code) << unmuted.err;
  ASSERT_TRUE(hook.WaitFor(2));
  const json summary = Body(hook.requests()[1]);
  EXPECT_EQ("mute_ended", summary["kind"]);
  EXPECT_THAT(summary["detail"].get<std::string>(), HasSubstr("2 occurrence(s) in 1 run(s)"));
}

TEST_F(AlertsTest, MutatingApiCallsNeedTheToken) {
  TestReceiver hook;
  const std::string config = WriteConfig(Hook("hook", hook));
  Daemon agent({"run", "-c", config});
  ASSERT_TRUE(Eventually([&] { return Ready(); }));
  const testing::Completed refused = testing::RunFaultline({"fix", "t.cuda_oom", "-c", config});
  ASSERT_EQ(0, refused.exit_code) << refused.err << "(the CLI reads the token from state.dir)";
  const std::string token_path = dir_ + "/state/admin_token";
  EXPECT_EQ(std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
            std::filesystem::status(token_path).permissions());
  std::filesystem::remove(token_path);
  const testing::Completed without = testing::RunFaultline({"unfix", "t.cuda_oom", "-c", config});
  EXPECT_NE(0, without.exit_code);
}

TEST_F(AlertsTest, AlertTestPrintsStatusAndBodyAndFailsOnARefusal) {
  TestReceiver hook;
  hook.Script({ScriptedResponse{200, "thanks"}, ScriptedResponse{400, "invalid_payload"}});
  const std::string config = WriteConfig(Hook("hook", hook));
  testing::Completed ok = testing::RunFaultline(
      {"alert", "test", "--receiver", "hook", "--signature", "t.cuda_oom", "-c", config});
  EXPECT_EQ(0, ok.exit_code) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("HTTP 200"));
  EXPECT_THAT(ok.out, HasSubstr("thanks"));
  ASSERT_EQ(1u, hook.count());
  const json body = Body(hook.requests()[0]);
  EXPECT_EQ(true, body["test"]);
  EXPECT_EQ("CUDA out of memory", body["title"]);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/state")) << "a test writes no state";
  testing::Completed refused =
      testing::RunFaultline({"alert", "test", "--receiver", "hook", "-c", config});
  EXPECT_EQ(1, refused.exit_code);
  EXPECT_THAT(refused.out, HasSubstr("HTTP 400"));
  EXPECT_THAT(refused.out, HasSubstr("invalid_payload"));
}

// One build shipping its log the way docs/alerts.md shows (`make 2>&1 | nc -N agent 5170`): a
// connection is a run of the source's job, and it ends when the sender closes.
bool ShipRun(uint16_t port, const std::string& text) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  for (std::size_t sent = 0; ok && sent < text.size();) {
    const ssize_t n = write(fd, text.data() + sent, text.size() - sent);
    ok = n > 0;
    if (ok) sent += static_cast<std::size_t>(n);
  }
  close(fd);
  return ok;
}

// Behaviour 15 end to end: resolved after three successful builds of the job, with the firing
// message's alert_id; it fires again when it comes back; the third fire/resolve cycle within an
// hour makes it flapping (the API, the status page, and the state store across a restart), and
// then what it raises is held back.
TEST_F(AlertsTest, ResolvedAfterThreeSuccessfulRunsAndFlappingAfterThreeCycles) {
  TestReceiver hook;
  const uint16_t builds = testing::FreePort();
  const std::string config = dir_ + "/faultline.yaml";
  std::ofstream(config) << "rules:\n  paths: [rules]\n"
                        << "http:\n  listen: 127.0.0.1:" << port_ << "\n"
                        << "sources:\n  - {id: builds, type: tcp, listen: '127.0.0.1:" << builds
                        << "'}\n"
                        << "alerts:\n  group_wait_ms: 0\n  host: test-host\n  receivers:\n"
                        << "    - {name: hook, type: webhook, url: '" << hook.url()
                        << "', send_resolved: true}\n";
  const auto record = [&] { return SignatureRecord("t.cuda_oom"); };
  const auto count = [&]() {
    const json r = record();
    return r.is_null() ? 0 : r["count"].get<int>();
  };
  const auto clean_runs = [&]() {
    const json r = record();
    return r.is_null() ? -1 : r["resolution"]["clean_runs"].get<int>();
  };
  const std::string failing = "step 1 ok\nRuntimeError: CUDA out of memory. Tried to allocate\n";
  const std::string passing = "step 1 ok\nstep 2 ok\n";

  auto agent = std::make_unique<Daemon>(std::vector<std::string>{"run", "-c", config});
  ASSERT_TRUE(Eventually([&] { return Ready(); })) << agent->Stderr();
  ASSERT_TRUE(ShipRun(builds, failing));
  ASSERT_TRUE(hook.WaitFor(1)) << agent->Stderr();
  const json fired = Body(hook.requests()[0]);
  EXPECT_EQ("new", fired["kind"]);
  // Two successful builds: counted, not yet resolved.
  ASSERT_TRUE(ShipRun(builds, passing));
  ASSERT_TRUE(ShipRun(builds, passing));
  ASSERT_TRUE(Eventually([&] { return clean_runs() == 2; })) << record().dump();
  EXPECT_EQ(1u, hook.count());
  EXPECT_EQ("new", record()["state"]);
  // An empty connection (a probe) is no run.
  ASSERT_TRUE(ShipRun(builds, ""));
  ASSERT_TRUE(ShipRun(builds, passing));
  ASSERT_TRUE(hook.WaitFor(2)) << agent->Stderr();
  const json resolved = Body(hook.requests()[1]);
  EXPECT_EQ("resolved", resolved["kind"]);
  EXPECT_EQ(fired["alert_id"], resolved["alert_id"]) << "the receiver closes the alert it opened";
  EXPECT_THAT(resolved["detail"].get<std::string>(), HasSubstr("3 successful run(s) of builds"));
  EXPECT_EQ("resolved", record()["state"]);

  // Two more cycles: fail (fires again at once), three passing builds (resolved).
  for (int cycle = 2; cycle <= 3; ++cycle) {
    ASSERT_TRUE(ShipRun(builds, failing));
    ASSERT_TRUE(hook.WaitFor(2 * cycle - 1)) << agent->Stderr();
    EXPECT_EQ("recurrence", Body(hook.requests()[2 * cycle - 2])["kind"]);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(ShipRun(builds, passing));
    ASSERT_TRUE(hook.WaitFor(2 * cycle)) << agent->Stderr();
    EXPECT_EQ("resolved", Body(hook.requests()[2 * cycle - 1])["kind"]);
  }
  EXPECT_THAT(Body(hook.requests()[5])["detail"].get<std::string>(),
              HasSubstr("flapping: 3 fire/resolve cycles"));
  EXPECT_EQ("flapping", record()["state"]);
  EXPECT_TRUE(record()["resolution"]["flapping"].get<bool>());
  std::string status;
  ASSERT_EQ(200, HttpGet(port_, "/api/v1/status", &status));
  EXPECT_EQ("flapping", json::parse(status)["signatures"][0]["state"]) << status;

  // Flapping: it fails again and is raised (counted), but nothing is sent within the hour.
  ASSERT_TRUE(ShipRun(builds, failing));
  ASSERT_TRUE(Eventually([&] { return count() == 4; }));
  ASSERT_TRUE(Eventually([&] {
    return testing::Sample(Metrics(), "faultline_alert_events_total{kind=\"recurrence\"}") == 3;
  }));
  EXPECT_EQ(0, testing::Sample(Metrics(), "faultline_notification_queue_depth{receiver=\"hook\"}"));
  EXPECT_EQ(6u, hook.count());

  // Persisted with the rest of the lifecycle.
  ASSERT_EQ(0, agent->Stop(SIGTERM));
  agent = std::make_unique<Daemon>(std::vector<std::string>{"run", "-c", config});
  ASSERT_TRUE(Eventually([&] { return Ready(); })) << agent->Stderr();
  EXPECT_EQ("flapping", record()["state"]) << record().dump();
  EXPECT_EQ(4, count());
  EXPECT_EQ(6u, hook.count());
}

// An admin mutation is durable when it is acknowledged: the route answers only after the
// checkpoint holding it committed, so `kill -9` right after the 200 loses nothing.
TEST_F(AlertsTest, AdminMutationsSurviveKillNineRightAfterTheirAnswer) {
  TestReceiver hook;
  const std::string config = WriteConfig(Hook("hook", hook));
  const auto start = [&] {
    auto agent = std::make_unique<Daemon>(std::vector<std::string>{"run", "-c", config});
    EXPECT_TRUE(Eventually([&] { return Ready(); })) << agent->Stderr();
    return agent;
  };
  const auto post = [&](const std::string& path) {
    std::ifstream in(dir_ + "/state/admin_token");
    std::string token;
    std::getline(in, token);
    std::string body;
    return testing::HttpPost(port_, path, token, &body);
  };
  const auto record = [&] { return SignatureRecord("t.cuda_oom"); };

  auto agent = start();
  Append("a.log", "RuntimeError: CUDA out of memory.\n");
  ASSERT_TRUE(hook.WaitFor(1)) << agent->Stderr();
  ASSERT_TRUE(Eventually([&] { return !record().is_null(); }));

  ASSERT_EQ(200, post("/api/v1/signatures/t.cuda_oom/fix"));
  agent->Stop(SIGKILL);
  agent = start();
  EXPECT_EQ("fixed", record()["state"]) << record().dump();
  EXPECT_EQ(1u, record()["fixes"].size());
  // The fix holds after the restart: the next occurrence is its regression. Delivery is
  // at-least-once: a `new` sent just before the kill -9, whose delivery no checkpoint recorded
  // yet, comes again after the restart, so the regression is looked for by kind.
  Append("a.log", "RuntimeError: CUDA out of memory.\n");
  const auto kinds = [&] {
    std::vector<std::string> seen;
    for (const auto& request : hook.requests()) seen.push_back(Body(request)["kind"]);
    return seen;
  };
  ASSERT_TRUE(Eventually([&] {
    const auto seen = kinds();
    return std::find(seen.begin(), seen.end(), "regression") != seen.end();
  })) << agent->Stderr();
  const auto seen = kinds();
  EXPECT_EQ(1, std::count(seen.begin(), seen.end(), "regression"));
  EXPECT_EQ(seen.size() - 1, static_cast<size_t>(std::count(seen.begin(), seen.end(), "new")));

  ASSERT_EQ(200, post("/api/v1/signatures/t.cuda_oom/unfix"));
  agent->Stop(SIGKILL);
  agent = start();
  EXPECT_TRUE(record()["fixes"].empty()) << record().dump();

  // Through the CLI, which prints its answer once the agent gave it.
  const testing::Completed muted = testing::RunFaultline(
      {"mute", "t.cuda_oom", "--for", "8h", "--reason", "node07", "-c", config});
  ASSERT_EQ(0, muted.exit_code) << muted.err;
  agent->Stop(SIGKILL);
  agent = start();
  EXPECT_EQ("muted", record()["state"]) << record().dump();
  EXPECT_EQ("node07", record()["mute"]["reason"]);
  agent->Stop(SIGKILL);
}

}  // namespace
}  // namespace faultline

namespace faultline {
namespace {

// The bundled pack on lines from the public multi-rank logs (tests/data/multirank): rank 11 runs
// out of GPU memory, then ranks 7 and 3 time out in the NCCL watchdog (a symptom of `gpu.`
// failures). One message names the OOM and its consequence; the consequence still counts.
TEST_F(AlertsTest, TheRootCauseIsNotifiedOnceNamingTheFailuresItCaused) {
  TestReceiver hook;
  const std::string config = WriteConfig(Hook("hook", hook), /*group_wait_ms=*/1000,
                                         "'" + std::string(FAULTLINE_SOURCE_DIR) + "/rules'");
  Daemon agent({"run", "-c", config});
  ASSERT_TRUE(Eventually([&] { return Ready(); })) << agent.Stderr();
  Append("train.log",
         "[rank11]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB. GPU 3 "
         "has a total capacity of 63.42 GiB of which 1.70 GiB is free.\n"
         "    [rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog caught "
         "collective operation timeout: WorkNCCL(SeqNum=80078, OpType=BROADCAST, NumelIn=5056, "
         "NumelOut=5056, Timeout(ms)=600000) ran for 600026 milliseconds before timing out.\n"
         "    [rank3]:[E816 01:45:40.212150935 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught "
         "collective operation timeout: WorkNCCL(SeqNum=80078, OpType=ALLREDUCE, "
         "NumelIn=2106881, NumelOut=2106881, Timeout(ms)=600000) ran for 600013 milliseconds "
         "before timing out.\n");
  ASSERT_TRUE(hook.WaitFor(1)) << agent.Stderr();
  // The watchdog rule labels its signature with the collective: one per op here.
  const auto watchdog_matches = [&] {
    std::istringstream metrics(Metrics());
    double total = 0;
    for (std::string line; std::getline(metrics, line);) {
      if (line.starts_with("faultline_signature_matches_total{") &&
          line.find("distributed.nccl.watchdog_timeout") != std::string::npos) {
        total += std::stod(line.substr(line.rfind(' ') + 1));
      }
    }
    return total;
  };
  ASSERT_TRUE(Eventually([&] { return watchdog_matches() == 2; })) << "the consequences count";
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(1u, hook.count()) << "no message of the consequences' own";
  const json body = Body(hook.requests()[0]);
  ASSERT_EQ(1u, body["alerts"].size()) << body.dump();
  EXPECT_EQ("gpu.cuda.out_of_memory", body["signature"]);
  EXPECT_EQ(json({"distributed.nccl.watchdog_timeout{op=BROADCAST}",
                  "distributed.nccl.watchdog_timeout{op=ALLREDUCE}"}),
            body["consequences"]);
}

// Issue 19: a root cause and the failures it causes a few lines later, with the bundled pack and
// group_wait_ms 0, are one message that names the consequences, whether the lines arrive in one
// read or each in a read of its own. Each case is a pair the pack audit found (a tool's summary
// or abort printed after the cause).
TEST_F(AlertsTest, ACauseAndTheFailuresItCausesAreOneMessageEvenWithNoGroupWait) {
  struct Case {
    std::string lines;
    std::string root;
    std::vector<std::string> consequences;  // named on the root's message
    // Consequences that settle only once the stream is quiet (pip's summary waits out its
    // context window): counted, and never a message of their own.
    std::vector<std::string> counted_only = {};
  };
  const std::vector<Case> cases = {
      {"Collecting deepspeed\n"
       "  Downloading deepspeed-0.9.2.tar.gz (779 kB)\n"
       "  Preparing metadata (setup.py) ... error\n"
       "    test.c\n"
       "    LINK : fatal error LNK1181: cannot open input file 'aio.lib'\n"
       "     [ERROR]  Unable to pre-compile async_io\n"
       "    ERROR: Command errored out with exit status 1: python setup.py egg_info Check the "
       "logs for full command output.\n",
       "deepspeed.async_io.windows_link{lib=aio}",
       {"deepspeed.async_io.precompile_failed{op=async_io}"},
       {"deepspeed.pip.build_failed"}},
      {"    RuntimeError: Cuda extensions are being compiled with a version of Cuda that does "
       "not match the version used to compile Pytorch binaries.  Pytorch binaries were compiled "
       "with Cuda 10.0.130.\n"
       "    Running setup.py install for apex ... error\n",
       "build.apex.cuda_mismatch", {"build.apex.build_failed"}},
  };
  for (const bool line_by_line : {false, true}) {
    for (size_t c = 0; c < cases.size(); ++c) {
      SCOPED_TRACE((line_by_line ? "line by line, case " : "one write, case ") +
                   std::to_string(c));
      TestReceiver hook;
      const std::string config = WriteConfig(Hook("hook", hook), /*group_wait_ms=*/0,
                                             "'" + std::string(FAULTLINE_SOURCE_DIR) + "/rules'");
      Daemon agent({"run", "-c", config});
      ASSERT_TRUE(Eventually([&] { return Ready(); }, std::chrono::seconds(60)))
          << agent.Stderr();
      const std::string file = "build-" + std::to_string(c) + ".log";
      if (line_by_line) {
        // Each line in a read of its own: the agent has read it before the next is written.
        std::istringstream in(cases[c].lines);
        int written = 0;
        for (std::string line; std::getline(in, line);) {
          Append(file, line + "\n");
          ++written;
          ASSERT_TRUE(Eventually([&] {
            return testing::Sample(Metrics(), "faultline_lines_total{source=\"ci\"}") >= written;
          })) << Metrics();
        }
      } else {
        Append(file, cases[c].lines);
      }
      ASSERT_TRUE(hook.WaitFor(1)) << agent.Stderr();
      // Every consequence was matched and counted (its own series, as any finding's).
      const auto consequences_counted = [&] {
        std::istringstream metrics(Metrics());
        std::set<std::string> counted;
        for (std::string line; std::getline(metrics, line);) {
          if (!line.starts_with("faultline_signature_matches_total{") || line.ends_with(" 0")) {
            continue;
          }
          for (const auto* list : {&cases[c].consequences, &cases[c].counted_only}) {
            for (const std::string& s : *list) {
              if (line.find("signature=\"" + s.substr(0, s.find('{')) + "\"") !=
                  std::string::npos) {
                counted.insert(s);
              }
            }
          }
        }
        return counted.size() == cases[c].consequences.size() + cases[c].counted_only.size();
      };
      ASSERT_TRUE(Eventually(consequences_counted)) << Metrics();
      // A second message would be on its way by now: the agent's queue is empty.
      ASSERT_TRUE(Eventually([&] {
        return Metrics().find("faultline_notification_queue_depth{receiver=\"hook\"} 0") !=
               std::string::npos;
      })) << Metrics();
      ASSERT_EQ(1u, hook.count()) << "one message for the cause and its consequences";
      const json body = Body(hook.requests()[0]);
      ASSERT_EQ(1u, body["alerts"].size()) << body.dump();
      EXPECT_EQ(cases[c].root, body["signature"]) << body.dump();
      EXPECT_EQ("new", body["kind"]);
      EXPECT_EQ(json(cases[c].consequences), body["consequences"]) << body.dump();
      agent.Stop(SIGTERM);
      // The next case starts from a new store: its signatures are `new` again.
      std::filesystem::remove_all(dir_ + "/state");
      std::filesystem::remove_all(dir_ + "/logs");
      std::filesystem::create_directories(dir_ + "/logs");
    }
  }
}

}  // namespace
}  // namespace faultline
