// AlertStates through a real state store on disk: what one agent wrote, the next one reads back;
// nothing is sent before the checkpoint holding it commits; a group in group_wait survives.
#include "agent/alert/alert_states.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "agent/state/state_store.h"
#include "tests/support/http_receiver.h"
#include "tests/support/wait.h"

namespace faultline {
namespace {

using nlohmann::json;
using testing::RunUntil;
using testing::ScriptedResponse;
using testing::TestReceiver;

class AlertStatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("alert_states_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    rule_.id = "t.oom";
    rule_.title = "CUDA out of memory";
    rule_.severity = Severity::kError;
    rule_.root_cause = "r";
    rule_.fix = "f";
    rules_ = {rule_};
    config_.file = (dir_ / "faultline.yaml").string();
    config_.alerts.enabled = true;
    config_.alerts.group_wait_ms = 0;
    config_.alerts.host = "h1";
  }
  void TearDown() override {
    Close();
    std::filesystem::remove_all(dir_);
  }

  void AddReceiver(const TestReceiver& r) {
    ReceiverConfig rc;
    rc.name = "hook";
    rc.type = ReceiverConfig::Type::kWebhook;
    rc.urls = {r.url()};
    config_.alerts.receivers = {rc};
  }

  // One agent's alert side on the store in dir_ (what Agent::Start does, in its order).
  void Open() {
    registry_ = std::make_unique<prometheus::Registry>();
    alert_metrics_ = std::make_unique<AlertMetrics>(*registry_);
    Result<std::unique_ptr<Alerting>> a =
        Alerting::Create(io_, config_, rules_, *alert_metrics_, /*store_backed=*/true);
    ASSERT_TRUE(a.ok()) << FormatErrors(a.errors());
    alerting_ = std::move(a).value();
    states_ = std::make_unique<AlertStates>(*alerting_);
    Result<std::unique_ptr<StateStore>> store = StateStore::Open(dir_.string(), {states_.get()});
    ASSERT_TRUE(store.ok()) << FormatErrors(store.errors());
    store_ = std::move(store).value();
    // As the agent does: a checkpoint soon after the alert side asks for one.
    alerting_->SetCheckpointRequest([this] {
      asio::post(io_, [this] {
        if (store_) {
          ASSERT_TRUE(store_->Checkpoint().ok());
        }
      });
    });
    alerting_->Start();
  }
  void Close() {
    if (alerting_) alerting_->Stop();
    store_.reset();
    states_.reset();
    alerting_.reset();
  }

  FindingEvent Event(uint64_t line) {
    FindingEvent e;
    e.rule_id = rule_.id;
    e.signature = rule_.id;
    e.severity = Severity::kError;
    e.source_id = "ci";
    e.stream_id = 1;
    e.stream_name = "/logs/train.log";
    e.line_number = line;
    e.text = "RuntimeError: CUDA out of memory.";
    return e;
  }

  void RunFor(std::chrono::milliseconds d) {
    io_.restart();
    io_.run_for(d);
  }

  std::filesystem::path dir_;
  Rule rule_;
  std::vector<Rule> rules_;
  Config config_;
  asio::io_context io_;
  std::unique_ptr<prometheus::Registry> registry_;
  std::unique_ptr<AlertMetrics> alert_metrics_;
  std::unique_ptr<Alerting> alerting_;
  std::unique_ptr<AlertStates> states_;
  std::unique_ptr<StateStore> store_;
};

TEST_F(AlertStatesTest, NothingIsSentBeforeTheCheckpointAndNewIsOnceAcrossARestart) {
  TestReceiver hook;
  AddReceiver(hook);
  Open();
  bool asked = false;
  alerting_->SetCheckpointRequest([&] { asked = true; });
  alerting_->OnFinding(Event(1));
  RunFor(std::chrono::milliseconds(300));
  EXPECT_TRUE(asked) << "the outbox asks for a checkpoint";
  EXPECT_EQ(0u, hook.count()) << "not durable yet, not sent";
  ASSERT_TRUE(store_->Checkpoint().ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return hook.count() == 1; }));
  EXPECT_EQ("new", json::parse(hook.requests()[0].body)["kind"]);
  RunFor(std::chrono::milliseconds(100));
  ASSERT_TRUE(store_->Checkpoint().ok());  // the delivery, so the restart does not send it again
  Close();

  Open();
  const SignatureRecord* record = alerting_->tracker().Find(rule_.id);
  ASSERT_NE(nullptr, record);
  EXPECT_TRUE(record->announced);
  EXPECT_EQ(1u, record->count);
  alerting_->OnFinding(Event(1));  // the same line read again from offset 0
  ASSERT_TRUE(store_->Checkpoint().ok());
  RunFor(std::chrono::milliseconds(500));
  EXPECT_EQ(1u, hook.count()) << "no second new";
  EXPECT_EQ(2u, alerting_->tracker().Find(rule_.id)->count) << "counting goes on";
}

TEST_F(AlertStatesTest, AQueuedNotificationIsSentByTheNextAgent) {
  TestReceiver down;
  down.SetDefault(ScriptedResponse{503, "down"});
  AddReceiver(down);
  Open();
  alerting_->OnFinding(Event(7));
  ASSERT_TRUE(RunUntil(io_, [&] { return down.count() >= 1; }));
  ASSERT_TRUE(store_->Checkpoint().ok());
  Close();

  // The receiver is back; the notification that was refused goes out from the store, once.
  down.SetDefault(ScriptedResponse{200, "ok"});
  // Counted before Open: the next agent may send at once, before the test reads the count.
  const std::size_t before = down.count();
  Open();
  ASSERT_TRUE(RunUntil(io_, [&] { return down.count() == before + 1; }));
  RunFor(std::chrono::milliseconds(200));
  ASSERT_TRUE(store_->Checkpoint().ok());
  EXPECT_EQ(before + 1, down.count());
  const json body = json::parse(down.requests().back().body);
  EXPECT_EQ("new", body["kind"]);
  EXPECT_EQ(7, body["line"]);
  EXPECT_EQ(down.requests().front().header("webhook-id"),
            down.requests().back().header("webhook-id"))
      << "the same message, not a new one";
  Close();
  Open();
  RunFor(std::chrono::milliseconds(300));
  EXPECT_EQ(before + 1, down.count()) << "delivered is forgotten, not sent a third time";
}

TEST_F(AlertStatesTest, AGroupInGroupWaitSurvivesTheRestart) {
  TestReceiver hook;
  AddReceiver(hook);
  config_.alerts.group_wait_ms = 60000;
  Open();
  alerting_->OnFinding(Event(3));
  ASSERT_TRUE(store_->Checkpoint().ok());
  Close();
  EXPECT_EQ(0u, hook.count());

  config_.alerts.group_wait_ms = 0;  // (the group keeps its due time; make it due now)
  Open();
  // The restored group is due in a minute; what matters is that it is there and goes out.
  ASSERT_EQ(1u, alerting_->PendingGroups().size());
  EXPECT_EQ(rule_.id, alerting_->PendingGroups()[0].items.items[0].signature);
}

TEST_F(AlertStatesTest, RecordsAndFixesRoundTripThroughTheirJson) {
  SignatureRecord r;
  r.signature = "t.oom{gpu=3}";
  r.rule_id = "t.oom";
  r.labels = {{"gpu", "3"}};
  r.count = 42;
  r.announced = true;
  r.versions_seen = {"0.14.2", "0.15.1"};
  r.notified_by_receiver = {{"hook", 1234}};
  r.mute = MuteRecord{.set_at_ms = 1, .until_ms = 2, .reason = "node07", .by = "bob"};
  r.mute->runs = {"ci#1"};
  r.failed_in_job = "ci";
  r.clean_runs = 2;
  r.resolved_at_ms = {10, 20, 30};
  r.flapping = true;
  r.flap_notified_ms = 30;
  r.flap_held = AlertKind::kResolved;
  std::optional<SignatureRecord> back =
      AlertStates::SignatureFromJson(AlertStates::SignatureToJson(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(r.signature, back->signature);
  EXPECT_EQ(r.labels, back->labels);
  EXPECT_EQ(42u, back->count);
  EXPECT_TRUE(back->announced);
  EXPECT_EQ(r.versions_seen, back->versions_seen);
  EXPECT_EQ(r.notified_by_receiver, back->notified_by_receiver);
  ASSERT_TRUE(back->mute.has_value());
  EXPECT_EQ("node07", back->mute->reason);
  EXPECT_EQ(r.mute->runs, back->mute->runs);
  EXPECT_EQ("ci", back->failed_in_job);
  EXPECT_EQ(2u, back->clean_runs);
  EXPECT_EQ(r.resolved_at_ms, back->resolved_at_ms);
  EXPECT_TRUE(back->flapping);
  EXPECT_EQ(30, back->flap_notified_ms);
  EXPECT_EQ(AlertKind::kResolved, back->flap_held);

  FixRecord f;
  f.id = 3;
  f.selector = "t.oom";
  f.fixed_in = "0.15.0";
  f.note = "n";
  f.origin = FixOrigin::kConfig;
  f.regressed_signatures = {"t.oom{gpu=3}"};
  std::optional<FixRecord> fix = AlertStates::FixFromJson(AlertStates::FixToJson(f));
  ASSERT_TRUE(fix.has_value());
  EXPECT_EQ(3, fix->id);
  EXPECT_EQ("0.15.0", fix->fixed_in);
  EXPECT_EQ(FixOrigin::kConfig, fix->origin);
  EXPECT_EQ(f.regressed_signatures, fix->regressed_signatures);
  EXPECT_FALSE(AlertStates::SignatureFromJson("{\"signature\": 1}").has_value());
}

}  // namespace
}  // namespace faultline
