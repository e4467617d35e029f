// ParseLineTimestamp: the time a log line says it was written, so that a line replayed or shipped
// late is judged by when it happened, not when it arrived (docs/alerting.md section 7,
// behaviour 4).
//
// Recognised near the start of the line (within its first kSearchBytes, after prefixes such as
// `[rank0]:` or `INFO `):
//   2026-09-30T12:00:02Z, 2026-09-30T12:00:02.123+02:00, 2026-09-30 12:00:02,123 (Python
//   logging), 2026/09/30 12:00:02, with an optional fraction and offset (Z, +hh:mm, +hhmm);
//   Sep 30 12:00:02 (BSD syslog), whose year is the current one, or the previous when that would
//   put it more than a day in the future.
// A time without an offset is local time on the agent's host, as the tools that print it mean.
// Impossible dates (month 13, 25:00) are not timestamps.
//
// Pure apart from reading the local time zone; thread-safe; never throws.
#ifndef FAULTLINE_ALERT_LINE_TIMESTAMP_H_
#define FAULTLINE_ALERT_LINE_TIMESTAMP_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace faultline {

inline constexpr std::size_t kTimestampSearchBytes = 64;

// Unix milliseconds, or nullopt when the line carries no timestamp. `now_ms` decides the year of
// a syslog timestamp.
std::optional<int64_t> ParseLineTimestamp(std::string_view line, int64_t now_ms);

}  // namespace faultline

#endif  // FAULTLINE_ALERT_LINE_TIMESTAMP_H_
