#include "agent/alert/outbox.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace faultline {
namespace {

using State = OutboxEntry::State;
constexpr int64_t kOutboxT0 = 1790000000000;

Notification Note(const std::string& signature) {
  Notification n;
  n.id = "ntf_" + signature;
  AlertItem item;
  item.kind = AlertKind::kNew;
  item.signature = signature;
  n.items.push_back(item);
  return n;
}

DeliveryOutcome Http(long status, std::string body = "", std::string retry_after = "") {
  DeliveryOutcome o;
  o.status = status;
  o.body = std::move(body);
  o.retry_after = std::move(retry_after);
  return o;
}

OutboxTarget Target(const std::string& name, double rate = 100, double burst = 100) {
  OutboxTarget t;
  t.name = name;
  t.rate_per_second = rate;
  t.burst = burst;
  return t;
}

TEST(OutboxTest, NothingIsSentBeforeTheStoreHasIt) {
  Outbox outbox({Target("hook")}, /*store_backed=*/true);
  const int64_t seq = outbox.Add("hook", Note("a"), kOutboxT0);
  EXPECT_TRUE(outbox.TakeDue(kOutboxT0).empty());
  EXPECT_FALSE(outbox.NextWakeup(kOutboxT0).has_value());
  outbox.MarkDurable({seq});
  const auto sends = outbox.TakeDue(kOutboxT0);
  ASSERT_EQ(1u, sends.size());
  EXPECT_EQ(seq, sends[0].seq);
}

TEST(OutboxTest, OneAtATimeInOrderPerTarget) {
  Outbox outbox({Target("hook")}, false);
  const int64_t a = outbox.Add("hook", Note("a"), kOutboxT0);
  const int64_t b = outbox.Add("hook", Note("b"), kOutboxT0);
  auto sends = outbox.TakeDue(kOutboxT0);
  ASSERT_EQ(1u, sends.size());
  EXPECT_EQ(a, sends[0].seq);
  EXPECT_TRUE(outbox.TakeDue(kOutboxT0).empty()) << "a is in flight";
  outbox.OnResult(a, Http(200), kOutboxT0 + 5, 0.5);
  sends = outbox.TakeDue(kOutboxT0 + 5);
  ASSERT_EQ(1u, sends.size());
  EXPECT_EQ(b, sends[0].seq);
}

TEST(OutboxTest, OnlyTheFailingTargetRetriesAndTheOtherIsNotDelayed) {
  Outbox outbox({Target("slack"), Target("hook")}, false);
  const int64_t s = outbox.Add("slack", Note("a"), kOutboxT0);
  const int64_t h = outbox.Add("hook", Note("a"), kOutboxT0);
  EXPECT_EQ(2u, outbox.TakeDue(kOutboxT0).size());
  EXPECT_EQ(RetryDecision::Action::kRetry, outbox.OnResult(s, Http(500), kOutboxT0 + 1, 0.5).action);
  EXPECT_EQ(RetryDecision::Action::kDone, outbox.OnResult(h, Http(200), kOutboxT0 + 1, 0.5).action);
  EXPECT_EQ(nullptr, outbox.Find(h)) << "delivered: forgotten";
  const OutboxEntry* slack = outbox.Find(s);
  ASSERT_NE(nullptr, slack);
  EXPECT_EQ(kOutboxT0 + 1 + 500, slack->next_attempt_ms) << "half of the 1 s first backoff";
  EXPECT_TRUE(outbox.TakeDue(kOutboxT0 + 100).empty());
  const auto retry = outbox.TakeDue(kOutboxT0 + 501);
  ASSERT_EQ(1u, retry.size());
  EXPECT_EQ(s, retry[0].seq);
  EXPECT_EQ(2, retry[0].attempt);
}

TEST(OutboxTest, RateLimitedTargetIsPausedWholeAndOthersGoOn) {
  Outbox outbox({Target("slack"), Target("hook")}, false);
  const int64_t s1 = outbox.Add("slack", Note("a"), kOutboxT0);
  outbox.Add("slack", Note("b"), kOutboxT0);
  outbox.TakeDue(kOutboxT0);
  EXPECT_EQ(RetryDecision::Action::kPauseReceiver,
            outbox.OnResult(s1, Http(429, "", "3"), kOutboxT0, 0.5).action);
  EXPECT_EQ(kOutboxT0 + 3000, outbox.targets().at("slack").paused_until_ms);
  const int64_t h = outbox.Add("hook", Note("c"), kOutboxT0 + 10);
  const auto sends = outbox.TakeDue(kOutboxT0 + 10);
  ASSERT_EQ(1u, sends.size());
  EXPECT_EQ(h, sends[0].seq);
  EXPECT_EQ(kOutboxT0 + 3000, outbox.NextWakeup(kOutboxT0 + 10));
  const auto after = outbox.TakeDue(kOutboxT0 + 3000);
  ASSERT_EQ(1u, after.size());
  EXPECT_EQ(s1, after[0].seq) << "the same message, first";
}

TEST(OutboxTest, AFloodBeyondTheBurstBecomesOneDigestNothingDropped) {
  Outbox outbox({Target("slack", 1, 3)}, false);
  for (int i = 0; i < 50; ++i) outbox.Add("slack", Note("sig" + std::to_string(i)), kOutboxT0);
  std::vector<std::size_t> items_per_message;
  uint64_t more = 0;
  int64_t now = kOutboxT0;
  for (int round = 0; round < 100 && items_per_message.size() < 4; ++round) {
    for (const auto& send : outbox.TakeDue(now)) {
      const OutboxEntry* e = outbox.Find(send.seq);
      items_per_message.push_back(e->notification.items.size());
      more += e->notification.more;
      outbox.OnResult(send.seq, Http(200), now, 0.5);
    }
    const auto next = outbox.NextWakeup(now);
    if (!next) break;
    now = std::max(now + 1, *next);
  }
  ASSERT_EQ(4u, items_per_message.size());
  EXPECT_EQ(1u, items_per_message[0]);
  EXPECT_EQ(1u, items_per_message[1]);
  EXPECT_EQ(1u, items_per_message[2]);
  EXPECT_EQ(47u, items_per_message[3] + more) << "47 more new signatures, in one message";
  EXPECT_LE(now - kOutboxT0, 60000) << "within a minute";
  EXPECT_EQ(47u, outbox.targets().at("slack").coalesced);
  EXPECT_FALSE(outbox.NextWakeup(now).has_value()) << "nothing left";
}

TEST(OutboxTest, ClientErrorsDeadLetterAndGoneReceiversAreDisabled) {
  Outbox outbox({Target("a"), Target("b")}, false);
  const int64_t a = outbox.Add("a", Note("x"), kOutboxT0);
  const int64_t b = outbox.Add("b", Note("x"), kOutboxT0);
  outbox.TakeDue(kOutboxT0);
  outbox.OnResult(a, Http(400, "invalid_payload"), kOutboxT0, 0.5);
  ASSERT_NE(nullptr, outbox.Find(a));
  EXPECT_EQ(State::kDeadLettered, outbox.Find(a)->state);
  EXPECT_NE(outbox.Find(a)->last_result.find("invalid_payload"), std::string::npos);
  EXPECT_EQ(RetryDecision::Action::kDisableReceiver,
            outbox.OnResult(b, Http(404, "no_service"), kOutboxT0, 0.5).action);
  EXPECT_TRUE(outbox.targets().at("b").disabled);
  outbox.Add("b", Note("y"), kOutboxT0 + 1);
  EXPECT_TRUE(outbox.TakeDue(kOutboxT0 + 10).empty());
}

TEST(OutboxTest, RestoredEntriesInFlightAreSentAgainInOrder) {
  Outbox before({Target("hook")}, true);
  const int64_t a = before.Add("hook", Note("a"), kOutboxT0);
  const int64_t b = before.Add("hook", Note("b"), kOutboxT0);
  before.MarkDurable({a, b});
  before.TakeDue(kOutboxT0);  // a in flight, then the agent dies
  Outbox after({Target("hook")}, true);
  after.Restore(before.TakeDirty().changed);
  auto sends = after.TakeDue(kOutboxT0 + 1);
  ASSERT_EQ(1u, sends.size());
  EXPECT_EQ(a, sends[0].seq);
  after.OnResult(a, Http(200), kOutboxT0 + 2, 0.5);
  sends = after.TakeDue(kOutboxT0 + 2);
  ASSERT_EQ(1u, sends.size());
  EXPECT_EQ(b, sends[0].seq);
  EXPECT_GT(after.Add("hook", Note("c"), kOutboxT0 + 3), b) << "seqs go on after the restored ones";
}

// A crash-looping agent must not try a dead receiver once per start: the backoff (and a 429's
// pause) chosen before the restart holds after it.
TEST(OutboxTest, ARestoredEntryWaitsOutTheBackoffChosenBeforeTheRestart) {
  Outbox before({Target("hook")}, true);
  const int64_t a = before.Add("hook", Note("a"), kOutboxT0);
  before.MarkDurable({a});
  ASSERT_EQ(1u, before.TakeDue(kOutboxT0).size());
  const RetryDecision d = before.OnResult(a, Http(500), kOutboxT0 + 10, 1.0);
  ASSERT_EQ(RetryDecision::Action::kRetry, d.action);
  ASSERT_GT(d.delay.count(), 100);
  const int64_t due = kOutboxT0 + 10 + d.delay.count();
  Outbox after({Target("hook")}, true);
  after.Restore(before.TakeDirty().changed);
  EXPECT_TRUE(after.TakeDue(kOutboxT0 + 20).empty()) << "tried again at once after the restart";
  EXPECT_EQ(due, after.NextWakeup(kOutboxT0 + 20));
  const auto sends = after.TakeDue(due);
  ASSERT_EQ(1u, sends.size());
  EXPECT_EQ(2, sends[0].attempt);
}

}  // namespace
}  // namespace faultline
