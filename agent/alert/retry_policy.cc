#include "agent/alert/retry_policy.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <string>

namespace faultline {
namespace {

using Action = RetryDecision::Action;
using ms = std::chrono::milliseconds;

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string Bounded(std::string_view body) {
  constexpr std::size_t kMaxReasonBody = 512;
  return std::string(body.substr(0, kMaxReasonBody));
}

}  // namespace

std::optional<ms> ParseRetryAfter(std::string_view value, int64_t now_unix_seconds) {
  value = Trim(value);
  if (value.empty()) return std::nullopt;
  int64_t seconds = 0;
  const char* end = value.data() + value.size();
  if (auto [ptr, ec] = std::from_chars(value.data(), end, seconds);
      ec == std::errc() && ptr == end) {
    if (seconds < 0) return std::nullopt;
    return ms(std::min<int64_t>(seconds, int64_t{1} << 40) * 1000);
  }
  const std::string text(value);
  // IMF-fixdate, the obsolete RFC 850 form, and asctime (RFC 9110 section 5.6.7).
  for (const char* format : {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
                             "%a %b %e %H:%M:%S %Y"}) {
    std::tm tm{};
    const char* parsed = strptime(text.c_str(), format, &tm);
    if (parsed != nullptr && *parsed == '\0') {
      const int64_t at = static_cast<int64_t>(timegm(&tm));
      return ms(std::max<int64_t>(0, at - now_unix_seconds) * 1000);
    }
  }
  return std::nullopt;
}

std::optional<ms> ParseJsonRetryAfter(std::string_view body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find("retry_after");
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double seconds = it->get<double>();
  if (!(seconds >= 0) || seconds > 1e9) return std::nullopt;
  return ms(static_cast<int64_t>(std::ceil(seconds * 1000)));
}

ms RetryPolicy::Backoff(int attempt, double uniform01) const {
  // base * 2^(attempt-1), computed without overflow: stop doubling at the cap.
  ms ceiling = base;
  for (int i = 1; i < attempt && ceiling < cap; ++i) ceiling *= 2;
  ceiling = std::min(ceiling, cap);
  const double u = std::clamp(uniform01, 0.0, 1.0);
  return ms(static_cast<int64_t>(u * static_cast<double>(ceiling.count())));
}

RetryDecision RetryPolicy::Decide(const DeliveryOutcome& outcome, int attempt,
                                  ms since_first_attempt, int64_t now_unix_seconds,
                                  double uniform01) const {
  const auto later = [&](Action action, ms delay, std::string reason) {
    if (since_first_attempt + delay >= give_up_after) {
      return RetryDecision{Action::kDeadLetter, ms(0),
                           "gave up after " +
                               std::to_string(std::chrono::duration_cast<std::chrono::minutes>(
                                                  since_first_attempt)
                                                  .count()) +
                               " min and " + std::to_string(attempt) + " attempt(s); last: " +
                               reason};
    }
    return RetryDecision{action, delay, std::move(reason)};
  };

  switch (outcome.transport) {
    case DeliveryOutcome::Transport::kTimeout:
      return later(Action::kRetry, Backoff(attempt, uniform01),
                   "timed out: " + outcome.transport_error);
    case DeliveryOutcome::Transport::kConnectFailed:
      return later(Action::kRetry, Backoff(attempt, uniform01),
                   "cannot connect: " + outcome.transport_error);
    case DeliveryOutcome::Transport::kFailed:
      return later(Action::kRetry, Backoff(attempt, uniform01),
                   "transfer failed: " + outcome.transport_error);
    case DeliveryOutcome::Transport::kCompleted:
      break;
  }
  const long status = outcome.status;
  const std::string status_text = "HTTP " + std::to_string(status);
  if (status >= 200 && status < 300) return RetryDecision{Action::kDone, ms(0), status_text};
  if (status == 429) {
    std::optional<ms> pause = ParseRetryAfter(outcome.retry_after, now_unix_seconds);
    if (!pause) pause = ParseJsonRetryAfter(outcome.body);
    const ms delay = std::min(pause.value_or(default_rate_limit_pause), max_pause);
    return later(Action::kPauseReceiver, delay, status_text + " rate limited");
  }
  if (status >= 500 || status == 408) {
    return later(Action::kRetry, Backoff(attempt, uniform01),
                 status_text + (outcome.body.empty() ? "" : ": " + Bounded(outcome.body)));
  }
  if (status == 410 ||
      (status == 404 && (Contains(outcome.body, "no_service") ||
                         Contains(outcome.body, "channel_is_archived")))) {
    return RetryDecision{Action::kDisableReceiver, ms(0),
                         status_text + (outcome.body.empty() ? "" : ": " + Bounded(outcome.body))};
  }
  return RetryDecision{Action::kDeadLetter, ms(0),
                       status_text + (outcome.body.empty() ? "" : ": " + Bounded(outcome.body))};
}

}  // namespace faultline
