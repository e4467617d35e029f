#include "agent/alert/retry_policy.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

using Action = RetryDecision::Action;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr int64_t kNow = 1790769605;  // Wed, 30 Sep 2026 12:00:05 GMT

DeliveryOutcome Status(long status, std::string body = "", std::string retry_after = "") {
  DeliveryOutcome o;
  o.status = status;
  o.body = std::move(body);
  o.retry_after = std::move(retry_after);
  return o;
}

DeliveryOutcome Transport(DeliveryOutcome::Transport t) {
  DeliveryOutcome o;
  o.transport = t;
  o.transport_error = "x";
  return o;
}

TEST(RetryPolicyTest, SuccessIsDone) {
  const RetryPolicy policy;
  for (long status : {200L, 201L, 202L, 204L}) {
    EXPECT_EQ(Action::kDone, policy.Decide(Status(status), 1, seconds(0), kNow, 0.5).action);
  }
}

TEST(RetryPolicyTest, RateLimitPausesTheReceiverForRetryAfter) {
  const RetryPolicy policy;
  RetryDecision d = policy.Decide(Status(429, "", "7"), 1, seconds(0), kNow, 0.5);
  EXPECT_EQ(Action::kPauseReceiver, d.action);
  EXPECT_EQ(seconds(7), d.delay);
  // An HTTP date 90 s ahead.
  d = policy.Decide(Status(429, "", "Wed, 30 Sep 2026 12:01:35 GMT"), 1, seconds(0), kNow, 0.5);
  EXPECT_EQ(Action::kPauseReceiver, d.action);
  EXPECT_EQ(seconds(90), d.delay);
  // Slack's JSON body when there is no header.
  d = policy.Decide(Status(429, R"({"ok":false,"error":"rate_limited","retry_after":1.5})"), 1,
                    seconds(0), kNow, 0.5);
  EXPECT_EQ(milliseconds(1500), d.delay);
  // Neither: 30 s.
  d = policy.Decide(Status(429, "rate_limited"), 1, seconds(0), kNow, 0.5);
  EXPECT_EQ(seconds(30), d.delay);
}

TEST(RetryPolicyTest, RetryAfterDatesInEveryHttpFormat) {
  EXPECT_EQ(seconds(60), ParseRetryAfter("Wed, 30 Sep 2026 12:01:05 GMT", kNow));
  EXPECT_EQ(seconds(60), ParseRetryAfter("Wednesday, 30-Sep-26 12:01:05 GMT", kNow));
  EXPECT_EQ(seconds(60), ParseRetryAfter("Wed Sep 30 12:01:05 2026", kNow));
  EXPECT_EQ(seconds(0), ParseRetryAfter("Wed, 30 Sep 2026 11:00:00 GMT", kNow));
  EXPECT_FALSE(ParseRetryAfter("soon", kNow).has_value());
  EXPECT_FALSE(ParseRetryAfter("-5", kNow).has_value());
  EXPECT_FALSE(ParseRetryAfter("", kNow).has_value());
}

TEST(RetryPolicyTest, ServerErrorsTimeoutsAndConnectionErrorsBackOffWithFullJitter) {
  const RetryPolicy policy;
  for (const DeliveryOutcome& o :
       {Status(500), Status(502), Status(503), Status(408),
        Transport(DeliveryOutcome::Transport::kTimeout),
        Transport(DeliveryOutcome::Transport::kConnectFailed),
        Transport(DeliveryOutcome::Transport::kFailed)}) {
    const RetryDecision d = policy.Decide(o, 3, seconds(10), kNow, 0.5);
    EXPECT_EQ(Action::kRetry, d.action) << d.reason;
    EXPECT_EQ(milliseconds(2000), d.delay) << "half of 1 s * 2^2";
  }
  EXPECT_EQ(milliseconds(0), policy.Backoff(5, 0.0));
  EXPECT_EQ(milliseconds(15999), policy.Backoff(5, 0.99999999));
  EXPECT_EQ(minutes(5), policy.Backoff(40, 1.0)) << "capped, no overflow";
  EXPECT_EQ(minutes(5), policy.Backoff(1000000, 1.0));
}

TEST(RetryPolicyTest, GivesUpAfterADayAndDeadLetters) {
  const RetryPolicy policy;
  const RetryDecision d = policy.Decide(Status(503), 400, hours(24) - seconds(1), kNow, 0.9);
  EXPECT_EQ(Action::kDeadLetter, d.action);
  EXPECT_NE(d.reason.find("gave up"), std::string::npos);
  EXPECT_NE(d.reason.find("HTTP 503"), std::string::npos);
}

TEST(RetryPolicyTest, OtherClientErrorsDeadLetterAtOnceWithTheBody) {
  const RetryPolicy policy;
  for (long status : {400L, 401L, 403L, 404L, 413L, 301L}) {
    const RetryDecision d = policy.Decide(Status(status, "invalid_payload"), 1, seconds(0), kNow, 0.5);
    EXPECT_EQ(Action::kDeadLetter, d.action) << status;
    EXPECT_NE(d.reason.find("invalid_payload"), std::string::npos);
  }
}

TEST(RetryPolicyTest, GoneReceiversAreDisabled) {
  const RetryPolicy policy;
  EXPECT_EQ(Action::kDisableReceiver,
            policy.Decide(Status(404, "no_service"), 1, seconds(0), kNow, 0.5).action);
  EXPECT_EQ(Action::kDisableReceiver,
            policy.Decide(Status(410, "channel_is_archived"), 1, seconds(0), kNow, 0.5).action);
  EXPECT_EQ(Action::kDisableReceiver, policy.Decide(Status(410), 1, seconds(0), kNow, 0.5).action);
  EXPECT_EQ(Action::kDeadLetter,
            policy.Decide(Status(404, "channel_not_found"), 1, seconds(0), kNow, 0.5).action);
}

}  // namespace
}  // namespace faultline
