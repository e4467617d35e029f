#include "agent/alert/line_timestamp.h"

#include <ctime>

namespace faultline {
namespace {

constexpr int64_t kDayMs = 24LL * 3600 * 1000;

bool Digits(std::string_view s, std::size_t at, std::size_t n, int* out) {
  if (at + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

bool ValidClock(int month, int day, int hour, int minute, int second) {
  return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && minute <= 59 &&
         second <= 60;
}

// tm as UTC, or as local time, in Unix milliseconds.
int64_t ToUnixMs(std::tm tm, bool utc, int millis) {
  const std::time_t t = utc ? timegm(&tm) : (tm.tm_isdst = -1, mktime(&tm));
  return static_cast<int64_t>(t) * 1000 + millis;
}

// YYYY-MM-DD[T ]hh:mm:ss[.fff|,fff][Z|+hh:mm|+hhmm] at `at`.
std::optional<int64_t> IsoAt(std::string_view s, std::size_t at) {
  int year, month, day, hour, minute, second;
  if (!Digits(s, at, 4, &year)) return std::nullopt;
  const char date_sep = at + 4 < s.size() ? s[at + 4] : '\0';
  if (date_sep != '-' && date_sep != '/') return std::nullopt;
  if (!Digits(s, at + 5, 2, &month) || at + 7 >= s.size() || s[at + 7] != date_sep ||
      !Digits(s, at + 8, 2, &day)) {
    return std::nullopt;
  }
  if (at + 10 >= s.size() || (s[at + 10] != 'T' && s[at + 10] != ' ')) return std::nullopt;
  if (!Digits(s, at + 11, 2, &hour) || at + 13 >= s.size() || s[at + 13] != ':' ||
      !Digits(s, at + 14, 2, &minute) || at + 16 >= s.size() || s[at + 16] != ':' ||
      !Digits(s, at + 17, 2, &second)) {
    return std::nullopt;
  }
  if (year < 1970 || !ValidClock(month, day, hour, minute, second)) return std::nullopt;
  std::size_t i = at + 19;
  int millis = 0;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    ++i;
    int scale = 100;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      millis += (s[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  if (i < s.size() && s[i] == 'Z') return ToUnixMs(tm, true, millis);
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    const int sign = s[i] == '+' ? 1 : -1;
    int oh, om;
    if (Digits(s, i + 1, 2, &oh)) {
      std::size_t m = i + 3;
      if (m < s.size() && s[m] == ':') ++m;
      if (Digits(s, m, 2, &om) && oh <= 14 && om <= 59) {
        return ToUnixMs(tm, true, millis) - sign * (oh * 3600 + om * 60) * 1000LL;
      }
    }
  }
  return ToUnixMs(tm, false, millis);
}

// "Sep 30 12:00:02" at `at`.
std::optional<int64_t> SyslogAt(std::string_view s, std::size_t at, int64_t now_ms) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (at + 15 > s.size()) return std::nullopt;
  int month = -1;
  for (int m = 0; m < 12; ++m) {
    if (s.substr(at, 3) == kMonths[m]) month = m + 1;
  }
  if (month < 0 || s[at + 3] != ' ') return std::nullopt;
  const std::size_t d = s[at + 4] == ' ' ? at + 5 : at + 4;
  int day, hour, minute, second;
  const std::size_t day_digits = d == at + 5 ? 1 : 2;
  if (!Digits(s, d, day_digits, &day)) return std::nullopt;
  const std::size_t c = d + day_digits;
  if (c + 9 > s.size() || s[c] != ' ' || !Digits(s, c + 1, 2, &hour) || s[c + 3] != ':' ||
      !Digits(s, c + 4, 2, &minute) || s[c + 6] != ':' || !Digits(s, c + 7, 2, &second)) {
    return std::nullopt;
  }
  if (!ValidClock(month, day, hour, minute, second)) return std::nullopt;
  const std::time_t now = static_cast<std::time_t>(now_ms / 1000);
  std::tm local{};
  localtime_r(&now, &local);
  std::tm tm{};
  tm.tm_year = local.tm_year;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  int64_t at_ms = ToUnixMs(tm, false, 0);
  if (at_ms > now_ms + kDayMs) {
    tm = std::tm{};
    tm.tm_year = local.tm_year - 1;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = second;
    at_ms = ToUnixMs(tm, false, 0);
  }
  return at_ms;
}

}  // namespace

std::optional<int64_t> ParseLineTimestamp(std::string_view line, int64_t now_ms) {
  const std::string_view head = line.substr(0, kTimestampSearchBytes + 32);
  const std::size_t limit = std::min(head.size(), kTimestampSearchBytes);
  for (std::size_t i = 0; i < limit; ++i) {
    const bool boundary = i == 0 || !((head[i - 1] >= '0' && head[i - 1] <= '9'));
    if (!boundary) continue;
    if (head[i] >= '0' && head[i] <= '9') {
      if (auto t = IsoAt(head, i)) return t;
    } else if (head[i] >= 'A' && head[i] <= 'S') {
      if (auto t = SyslogAt(head, i, now_ms)) return t;
    }
  }
  return std::nullopt;
}

}  // namespace faultline
