// ParseSyslogMessage: reads the header of one syslog message, RFC 5424 or RFC 3164 (BSD syslog),
// as senders really write them, and says where the message text begins.
//
// RFC 5424:  <PRI>VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP SD [SP MSG]
//            `-` for any field is "no value"; a UTF-8 BOM before MSG is dropped.
// RFC 3164:  <PRI>Mmm dd hh:mm:ss HOSTNAME TAG[PID]: MSG
//            and what rsyslog, syslog-ng, journald and libc's syslog() send under that name: an
//            RFC 3339 timestamp in place of `Mmm dd hh:mm:ss`, no HOSTNAME at all (a token
//            ending in ':' or holding '[' is the tag, as rsyslog reads it), no PRI (a line
//            relayed from a file).
// Anything else (a plain line in a syslog stream, a header cut short) comes back with
// format kNone and `text` the whole input, so no line is ever dropped for its header.
//
// RFC 3164 timestamps have no year: the year is the latest one that does not put the timestamp
// more than kFutureTolerance ahead of `now` (the receiver's civil time). Logs come from the past,
// so `Dec 31 23:59:59` read on January 1st, or `Nov 3` read in June, is last year's; a sender
// whose clock or time zone runs a little ahead across New Year (`Jan  1 00:00:01` read on
// December 31st) is next year's (ResolveYear).
//
// Field limits are RFC 5424's (HOSTNAME 255, APP-NAME 48, PROCID 128, MSGID 32 bytes of
// printable US-ASCII); a field beyond them, or holding other bytes, is not a header. Views point
// into the input and live as long as it. A pure function: never throws, never allocates,
// thread-safe.
#ifndef FAULTLINE_SYSLOG_SYSLOG_MESSAGE_H_
#define FAULTLINE_SYSLOG_SYSLOG_MESSAGE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace faultline {

// A date and time of day with no zone: what a clock on the wall says.
struct CivilTime {
  int year = 1970;
  int month = 1;  // 1..12
  int day = 1;    // 1..31
  int hour = 0;
  int minute = 0;
  int second = 0;  // 0..60 (a leap second)
  bool operator==(const CivilTime&) const = default;
};

struct SyslogTime {
  CivilTime civil;
  uint32_t nanoseconds = 0;
  // Minutes east of UTC, when the timestamp says (RFC 3339 `Z` or `+hh:mm`); RFC 3164 never does.
  std::optional<int> utc_offset_minutes;
  // The message gave no year (RFC 3164's `Mmm dd hh:mm:ss`): civil.year is ResolveYear's.
  bool year_inferred = false;
  bool operator==(const SyslogTime&) const = default;
};

enum class SyslogFormat { kNone, kRfc3164, kRfc5424 };

struct SyslogMessage {
  static constexpr int kNoPriority = -1;
  static constexpr size_t kMaxHostBytes = 255;
  static constexpr size_t kMaxAppBytes = 48;
  static constexpr size_t kMaxProcIdBytes = 128;
  static constexpr size_t kMaxMsgIdBytes = 32;

  SyslogFormat format = SyslogFormat::kNone;
  int priority = kNoPriority;  // facility * 8 + severity, 0..191
  std::optional<SyslogTime> time;
  std::string_view host;             // empty when the message names none
  std::string_view app;              // RFC 5424 APP-NAME, RFC 3164 TAG; empty when none
  std::string_view proc_id;          // empty when none
  std::string_view msg_id;           // RFC 5424 only; empty when none
  std::string_view structured_data;  // RFC 5424 only, the elements as written; empty for `-`
  std::string_view text;             // MSG; the whole input when format is kNone

  int facility() const { return priority < 0 ? -1 : priority / 8; }
  int severity() const { return priority < 0 ? -1 : priority % 8; }
};

// `message` is one message without its frame (no octet count, no trailing LF).
SyslogMessage ParseSyslogMessage(std::string_view message, const CivilTime& now);

// Seconds since the Unix epoch of `t` read as UTC (proleptic Gregorian, no leap seconds).
int64_t UtcSecondsOf(const CivilTime& t);

// How far ahead of the receiver a sender's civil time may be: clocks drift, and local times of
// two zones differ by up to 26 hours.
inline constexpr int64_t kFutureToleranceSeconds = 2 * 86400;

// The year of a yearless timestamp (month, day and time of day; its year is ignored) read at
// `now`: the latest of now.year + 1, now.year and now.year - 1 in which it is a date no more than
// kFutureToleranceSeconds after now. nullopt when there is none (February 29th away from a leap
// year, a day that no month has).
std::optional<int> ResolveYear(const CivilTime& yearless, const CivilTime& now);

}  // namespace faultline

#endif  // FAULTLINE_SYSLOG_SYSLOG_MESSAGE_H_
