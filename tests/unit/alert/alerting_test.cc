// Alerting in one process: findings and batches in, HTTP requests out to the test's own
// receivers on loopback, without a state store.
#include "agent/alert/alerting.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/support/http_receiver.h"
#include "tests/support/wait.h"

namespace faultline {
namespace {

using nlohmann::json;
using testing::RunUntil;
using testing::ScriptedResponse;
using testing::TestReceiver;

class AlertingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rule_.id = "deepspeed.async_io.windows_link";
    rule_.title = "async_io cannot link aio.lib";
    rule_.severity = Severity::kError;
    rule_.root_cause = "no libaio on Windows";
    rule_.fix = "DS_BUILD_AIO=0";
    rule_.version_of = "deepspeed";
    other_.id = "t.oom";
    other_.title = "CUDA out of memory";
    other_.severity = Severity::kError;
    rules_ = {rule_, other_};
    config_.file = "test.yaml";
    config_.rule_paths = {std::string(FAULTLINE_SOURCE_DIR) + "/rules"};
    config_.alerts.enabled = true;
    config_.alerts.host = "h1";
  }

  void AddReceiver(const std::string& name, const TestReceiver& r, bool send_resolved = false,
                   ReceiverConfig::Type type = ReceiverConfig::Type::kWebhook) {
    ReceiverConfig rc;
    rc.name = name;
    rc.type = type;
    rc.urls = {r.url()};
    rc.send_resolved = send_resolved;
    config_.alerts.receivers.push_back(rc);
  }

  Alerting& Start() {
    Result<std::unique_ptr<Alerting>> a =
        Alerting::Create(io_, config_, rules_, alert_metrics_, false, SystemNow);
    EXPECT_TRUE(a.ok()) << (a.ok() ? "" : FormatErrors(a.errors()));
    alerting_ = std::move(a).value();
    alerting_->Start();
    return *alerting_;
  }

  FindingEvent Event(const Rule& rule, uint64_t line, const std::string& text,
                     uint64_t stream = 1) {
    FindingEvent e;
    e.rule_id = rule.id;
    e.signature = rule.id;
    e.severity = Severity::kError;
    e.source_id = "ci";
    e.stream_id = stream;
    e.stream_name = "/logs/build.log";
    e.line_number = line;
    e.text = text;
    e.context_before = {"line before"};
    return e;
  }

  // Feeds `lines` as one batch of stream 1 starting at `first`, with `findings` (line numbers)
  // raised between the two looks at the batch, as StreamPipeline does.
  void Feed(const std::vector<std::string>& lines, uint64_t first,
            const std::vector<FindingEvent>& findings) {
    LineBatch batch;
    for (const std::string& l : lines) batch.Append(l);
    alerting_->OnBatch(1, "ci", batch, first, false);
    for (const FindingEvent& f : findings) alerting_->OnFinding(f);
    alerting_->OnBatch(1, "ci", batch, first, true);
  }

  std::string Metrics() { return prometheus::TextSerializer().Serialize(registry_.Collect()); }

  Rule rule_;
  Rule other_;
  std::vector<Rule> rules_;
  Config config_;
  asio::io_context io_;
  prometheus::Registry registry_;
  AlertMetrics alert_metrics_{registry_};
  std::unique_ptr<Alerting> alerting_;
};

TEST_F(AlertingTest, VersionsFromTheSameBatchAndLinesAfterTheHitReachThePayload) {
  TestReceiver hook;
  AddReceiver("hook", hook);
  config_.alerts.group_wait_ms = 0;
  Start();
  ASSERT_TRUE(alerting_->Fix({rule_.id, "0.15.0", "skips aio", "alice", FixOrigin::kApi}).ok());
  Feed({"Collecting deepspeed==0.15.1", "building",
        "LINK : fatal error LNK1181: cannot open input file 'aio.lib'",
        "[ERROR] Unable to pre-compile async_io", "token=ghp_1234567890abcdefghijABCDEFGHIJ123456"},
       10, {Event(rule_, 12, "LINK : fatal error LNK1181: cannot open input file 'aio.lib'")});
  ASSERT_TRUE(RunUntil(io_, [&] { return hook.count() == 1; }));
  ASSERT_EQ(1u, hook.count());
  const json body = json::parse(hook.requests()[0].body);
  EXPECT_EQ("regression", body["kind"]);
  EXPECT_EQ("0.15.1", body["versions"]["seen_in"]);
  EXPECT_EQ("0.15.0", body["versions"]["fixed_in"]);
  EXPECT_EQ("skips aio", body["versions"]["note"]);
  EXPECT_EQ("h1", body["host"]);
  ASSERT_EQ(2u, body["context_after"].size());
  EXPECT_EQ("[ERROR] Unable to pre-compile async_io", body["context_after"][0]);
  EXPECT_EQ("token=[REDACTED]", body["context_after"][1]) << "secrets never leave the host";
  EXPECT_NE(Metrics().find("faultline_alert_events_total{kind=\"regression\"} 1"),
            std::string::npos);
}

// A fleet-wide fix that arrives with a reload: the webhook (even one that asks for resolved)
// hears nothing of it, since every host would say it; Alertmanager is told the alert is over
// (endsAt), or a regression after the fix would be the same firing alert and deduplicated away.
TEST_F(AlertingTest, AConfigFixAddedLaterResolvesTheAlertAtAlertmanagerOnly) {
  TestReceiver hook;
  TestReceiver am;
  AddReceiver("hook", hook, /*send_resolved=*/true);
  AddReceiver("am", am, /*send_resolved=*/false, ReceiverConfig::Type::kAlertmanager);
  config_.alerts.group_wait_ms = 0;
  Start();
  Feed({"[ERROR] Unable to pre-compile async_io"}, 1,
       {Event(rule_, 1, "[ERROR] Unable to pre-compile async_io")});
  ASSERT_TRUE(RunUntil(io_, [&] { return hook.count() == 1 && am.count() == 1; }));
  ASSERT_EQ(1u, am.count());
  const json fired = json::parse(am.requests()[0].body);
  EXPECT_EQ("new", fired[0]["annotations"]["kind"]);

  FixConfig fix;
  fix.signature = rule_.id;
  fix.version = "0.15.0";
  fix.note = "fixed fleet-wide";
  config_.fixes.push_back(fix);
  alerting_->ApplyConfigFixes();
  alerting_->ApplyConfigFixes();  // a second reload with the same file adds nothing
  ASSERT_TRUE(RunUntil(io_, [&] { return am.count() == 2; }));
  io_.restart();
  io_.run_for(std::chrono::milliseconds(200));
  ASSERT_EQ(2u, am.count());
  EXPECT_EQ(1u, hook.count()) << "a fleet-wide fix is not news from every host";
  const json resolved = json::parse(am.requests()[1].body);
  EXPECT_EQ("resolved", resolved[0]["annotations"]["kind"]);
  EXPECT_EQ(fired[0]["labels"], resolved[0]["labels"]) << "the same alert, so Alertmanager ends it";
  EXPECT_LT(resolved[0]["endsAt"].get<std::string>(),
            FormatTimestampMs(UnixMs(SystemNow()) + 60'000))
      << "ends now, not a quiet_for after the last occurrence: " << resolved;
}

// Every time Alerting records comes from the clock it was given, not the system's.
TEST_F(AlertingTest, TimesComeFromTheGivenWallClock) {
  int64_t now_ms = 1'700'000'000'000;
  Result<std::unique_ptr<Alerting>> a = Alerting::Create(io_, config_, rules_, alert_metrics_,
                                                         false, [&] { return FromUnixMs(now_ms); });
  ASSERT_TRUE(a.ok()) << (a.ok() ? "" : FormatErrors(a.errors()));
  alerting_ = std::move(a).value();
  alerting_->OnFinding(Event(rule_, 1, "LNK1181 aio.lib"));
  now_ms += 5'000;
  alerting_->OnFinding(Event(rule_, 2, "LNK1181 aio.lib"));
  const json signatures = json::parse(alerting_->SignaturesJson());
  ASSERT_EQ(1u, signatures["signatures"].size());
  EXPECT_EQ(FormatTimestampMs(1'700'000'000'000), signatures["signatures"][0]["first_seen"]);
  EXPECT_EQ(FormatTimestampMs(1'700'000'005'000), signatures["signatures"][0]["last_seen"]);
}

TEST_F(AlertingTest, GroupWaitBatchesOneRunIntoOneMessage) {
  TestReceiver hook;
  AddReceiver("hook", hook);
  config_.alerts.group_wait_ms = 300;
  Start();
  Feed({"a", "b", "c"}, 1,
       {Event(rule_, 1, "LNK1181 aio.lib"), Event(other_, 2, "CUDA out of memory")});
  Feed({"CUDA out of memory"}, 4, {Event(other_, 4, "CUDA out of memory")});
  ASSERT_TRUE(RunUntil(io_, [&] { return hook.count() == 1; }));
  io_.restart();
  io_.run_for(std::chrono::milliseconds(400));
  ASSERT_EQ(1u, hook.count());
  const json body = json::parse(hook.requests()[0].body);
  ASSERT_EQ(2u, body["alerts"].size());
  EXPECT_EQ("new", body["alerts"][0]["kind"]);
  EXPECT_EQ("t.oom", body["alerts"][1]["signature"]);
  EXPECT_EQ(2, body["alerts"][1]["count"]) << "a repeat while waiting updates the count";
}

// Root cause and consequences: one rank's OOM, then the watchdog timeouts and torchrun's summary
// it causes. Receivers hear of the OOM once, naming the rest; the consequences still count.
class ConsequenceAlertingTest : public AlertingTest {
 protected:
  void SetUp() override {
    AlertingTest::SetUp();
    watchdog_.id = "t.watchdog";
    watchdog_.title = "NCCL watchdog timeout";
    watchdog_.severity = Severity::kError;
    watchdog_.role = RuleRole::kSymptom;
    child_.id = "t.child_failed";
    child_.title = "ChildFailedError";
    child_.severity = Severity::kError;
    child_.role = RuleRole::kSymptom;
    child_.consequence_of = {"t.oom", "t.watchdog"};
    rules_ = {rule_, other_, watchdog_, child_};
    config_.alerts.group_wait_ms = 300;
  }
  std::vector<json> Alerts(const TestReceiver& hook) {
    std::vector<json> alerts;
    for (const auto& request : hook.requests()) {
      const json body = json::parse(request.body);
      for (const json& a : body["alerts"]) alerts.push_back(a);
    }
    return alerts;
  }
  void Settle() {
    io_.restart();
    io_.run_for(std::chrono::milliseconds(500));
  }
  Rule watchdog_;
  Rule child_;
};

TEST_F(ConsequenceAlertingTest, TheRootCauseIsNotifiedOnceNamingItsConsequences) {
  TestReceiver hook;
  AddReceiver("hook", hook);
  Start();
  Feed({"oom", "wd", "wd", "child"}, 1,
       {Event(other_, 1, "CUDA out of memory"), Event(watchdog_, 2, "Watchdog caught collective"),
        Event(watchdog_, 3, "Watchdog caught collective"), Event(child_, 4, "ChildFailedError")});
  ASSERT_TRUE(RunUntil(io_, [&] { return hook.count() == 1; }));
  Settle();
  const std::vector<json> alerts = Alerts(hook);
  ASSERT_EQ(1u, alerts.size()) << hook.requests()[0].body;
  EXPECT_EQ("t.oom", alerts[0]["signature"]);
  EXPECT_EQ(json({"t.watchdog", "t.child_failed"}), alerts[0]["consequences"]);
  const std::string metrics = Metrics();
  EXPECT_NE(std::string::npos, metrics.find("signature=\"t.watchdog\""))
      << "consequences still count";
}

TEST_F(ConsequenceAlertingTest, ASymptomNothingExplainsIsNotifiedAndExplainsTheSymptomsAfterIt) {
  TestReceiver hook;
  AddReceiver("hook", hook);
  Start();
  Feed({"wd", "child"}, 1,
       {Event(watchdog_, 1, "Watchdog caught collective"), Event(child_, 2, "ChildFailedError")});
  ASSERT_TRUE(RunUntil(io_, [&] { return hook.count() == 1; }));
  Settle();
  const std::vector<json> alerts = Alerts(hook);
  ASSERT_EQ(1u, alerts.size());
  EXPECT_EQ("t.watchdog", alerts[0]["signature"]);
  EXPECT_EQ(json({"t.child_failed"}), alerts[0]["consequences"]);
}

TEST_F(ConsequenceAlertingTest, AConsequencePrintedBeforeItsCauseGoesUnderItWithinGroupWait) {
  TestReceiver hook;
  AddReceiver("hook", hook);
  Start();
  Feed({"wd"}, 1, {Event(watchdog_, 1, "Watchdog caught collective")});
  Feed({"oom"}, 2, {Event(other_, 2, "CUDA out of memory")});
  ASSERT_TRUE(RunUntil(io_, [&] { return hook.count() == 1; }));
  Settle();
  const std::vector<json> alerts = Alerts(hook);
  ASSERT_EQ(1u, alerts.size());
  EXPECT_EQ("t.oom", alerts[0]["signature"]);
  EXPECT_EQ(json({"t.watchdog"}), alerts[0]["consequences"]);
}

TEST_F(ConsequenceAlertingTest, OnlyTheSameRunExplains) {
  TestReceiver hook;
  AddReceiver("hook", hook);
  Start();
  Feed({"oom"}, 1, {Event(other_, 1, "CUDA out of memory")});
  alerting_->OnFinding(Event(watchdog_, 1, "Watchdog caught collective", /*stream=*/2));
  ASSERT_TRUE(RunUntil(io_, [&] { return hook.count() == 2; }));
  Settle();
  std::set<std::string> signatures;
  for (const json& a : Alerts(hook)) {
    signatures.insert(a["signature"].get<std::string>());
    EXPECT_EQ(json::array(), a["consequences"]);
  }
  EXPECT_EQ((std::set<std::string>{"t.oom", "t.watchdog"}), signatures);
}

TEST_F(AlertingTest, ResolvedGoesOnlyToReceiversThatAskForIt) {
  TestReceiver plain;
  TestReceiver closing;
  AddReceiver("plain", plain);
  AddReceiver("closing", closing, /*send_resolved=*/true);
  config_.alerts.group_wait_ms = 0;
  Start();
  Feed({"CUDA out of memory"}, 1, {Event(other_, 1, "CUDA out of memory")});
  ASSERT_TRUE(RunUntil(io_, [&] { return plain.count() == 1 && closing.count() == 1; }));
  ASSERT_TRUE(alerting_->Fix({"t.oom", "", "", "bob", FixOrigin::kApi}).ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return closing.count() == 2; }));
  io_.restart();
  io_.run_for(std::chrono::milliseconds(200));
  EXPECT_EQ(1u, plain.count());
  ASSERT_EQ(2u, closing.count());
  const json resolved = json::parse(closing.requests()[1].body);
  EXPECT_EQ("resolved", resolved["kind"]);
  EXPECT_EQ(json::parse(closing.requests()[0].body)["alert_id"], resolved["alert_id"])
      << "the same alert id as the message it closes";
}

TEST_F(AlertingTest, AFloodOfNewSignaturesIsThreeMessagesThenADigestForSlack) {
  TestReceiver slack;
  AddReceiver("chat", slack, false, ReceiverConfig::Type::kSlack);
  config_.alerts.group_wait_ms = 0;
  Start();
  // 50 runs, each with its own new signature, within a moment.
  for (uint64_t run = 1; run <= 50; ++run) {
    FindingEvent e = Event(other_, 1, "CUDA out of memory", run);
    e.signature = "t.oom{gpu=" + std::to_string(run) + "}";
    alerting_->OnFinding(e);
  }
  ASSERT_TRUE(RunUntil(io_, [&] { return slack.count() >= 4; }, std::chrono::seconds(30)));
  io_.restart();
  io_.run_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(4u, slack.count());
  const json digest = json::parse(slack.requests()[3].body);
  EXPECT_NE(digest["text"].get<std::string>().find("and 46 more"), std::string::npos)
      << digest["text"];
  EXPECT_NE(digest["blocks"][0]["text"]["text"].get<std::string>().find("47 new signatures"),
            std::string::npos);
  EXPECT_NE(Metrics().find("faultline_notifications_coalesced_total{receiver=\"chat\"} 47"),
            std::string::npos);
}

TEST_F(AlertingTest, TestNotificationsGoThroughThePipelineAndReportTheResult) {
  TestReceiver hook;
  hook.Script({ScriptedResponse{503, "busy"}, ScriptedResponse{200, "fine"}});
  AddReceiver("hook", hook);
  Start();
  std::string result;
  long status = 0;
  ASSERT_TRUE(alerting_
                  ->Test("hook", "t.oom",
                         [&](const std::string& target, const RetryDecision& d,
                             const DeliveryOutcome& last) {
                           result = target + " " + d.reason;
                           status = last.status;
                         })
                  .ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return !result.empty(); }));
  EXPECT_EQ("hook HTTP 200", result);
  EXPECT_EQ(200, status);
  ASSERT_EQ(2u, hook.count()) << "retried after the 503";
  EXPECT_EQ(true, json::parse(hook.requests()[1].body)["test"]);
  EXPECT_FALSE(alerting_->Test("nobody", "", nullptr).ok());
  EXPECT_TRUE(alerting_->tracker().records().empty()) << "a test records nothing";
}

}  // namespace
}  // namespace faultline
