// RetryPolicy: what to do after one delivery attempt (docs/alerting.md section 7, behaviour 10).
//
//   2xx                                   done.
//   429                                   pause the whole receiver (not just this message) for
//                                         Retry-After (delta seconds or an HTTP date), else
//                                         Slack's JSON `retry_after`, else 30 s; then retry.
//   5xx, 408, timeouts, connection errors retry after an exponential backoff with full jitter:
//                                         uniform(0, min(cap, base * 2^attempt)); base 1 s,
//                                         cap 5 min.
//   410, and 404 whose body says          disable the receiver (the webhook was revoked or its
//   `no_service` / `channel_is_archived`  channel archived) and raise a meta-alert.
//   any other status (3xx, 4xx)           dead-letter at once, keeping the response body
//                                         (`invalid_payload`, ...): retrying cannot help.
// A retry or pause that would end more than give_up_after after the first attempt dead-letters
// instead. Redirects are never followed (the Standard Webhooks guidance), so 3xx is a failure.
//
// Pure: the jitter's random number is an argument. Thread-safe; never throws.
#ifndef FAULTLINE_ALERT_RETRY_POLICY_H_
#define FAULTLINE_ALERT_RETRY_POLICY_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace faultline {

// What came back from one attempt.
struct DeliveryOutcome {
  enum class Transport { kCompleted, kTimeout, kConnectFailed, kFailed };
  Transport transport = Transport::kCompleted;
  std::string transport_error;  // curl's message when not kCompleted
  long status = 0;              // HTTP status when kCompleted
  std::string retry_after;      // the Retry-After header, if any
  std::string body;             // the response body, bounded by the sender
};

struct RetryDecision {
  enum class Action { kDone, kRetry, kPauseReceiver, kDeadLetter, kDisableReceiver };
  Action action = Action::kDone;
  std::chrono::milliseconds delay{0};  // kRetry: until this message; kPauseReceiver: the receiver
  std::string reason;                  // for logs, the outbox and the meta-alert
};

struct RetryPolicy {
  using ms = std::chrono::milliseconds;
  ms base = std::chrono::seconds(1);
  ms cap = std::chrono::minutes(5);
  ms give_up_after = std::chrono::hours(24);
  ms default_rate_limit_pause = std::chrono::seconds(30);
  // A Retry-After beyond this is read as this: a receiver that asks for a day of silence is
  // better retried, and dead-lettered by give_up_after, than trusted blindly.
  ms max_pause = std::chrono::hours(6);

  // `attempt`: 1 for the first attempt. `since_first_attempt`: time from the first attempt to
  // now. `now_unix_seconds`: for HTTP-date Retry-After values. `uniform01`: a random number in
  // [0, 1) for the jitter.
  RetryDecision Decide(const DeliveryOutcome& outcome, int attempt, ms since_first_attempt,
                       int64_t now_unix_seconds, double uniform01) const;

  // The backoff before attempt `attempt + 1` for a random `uniform01` in [0, 1).
  ms Backoff(int attempt, double uniform01) const;
};

// Retry-After as a delay from `now_unix_seconds`: delta seconds, or an HTTP date (IMF-fixdate,
// RFC 850, asctime). nullopt when absent or unreadable; a date in the past is 0.
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value,
                                                         int64_t now_unix_seconds);

// Slack's (and Discord's) `{"retry_after": 1.5, ...}` in a 429 body, as a delay.
std::optional<std::chrono::milliseconds> ParseJsonRetryAfter(std::string_view body);

}  // namespace faultline

#endif  // FAULTLINE_ALERT_RETRY_POLICY_H_
