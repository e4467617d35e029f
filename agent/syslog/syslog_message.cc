#include "agent/syslog/syslog_message.h"

#include "agent/core/ascii.h"

namespace faultline {
namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
constexpr int kMaxPriority = 191;  // facility 23, severity 7
// Digits of a fraction of a second: RFC 5424 allows 6; some senders write nanoseconds.
constexpr int kMaxFractionDigits = 9;

bool IsPrintUsAscii(char c) { return c >= 33 && c <= 126; }

bool IsLeapYear(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int DaysInMonth(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && IsLeapYear(year) ? 29 : kDays[month - 1];
}

bool IsValid(const CivilTime& t) {
  return t.month >= 1 && t.month <= 12 && t.day >= 1 && t.day <= DaysInMonth(t.year, t.month) &&
         t.hour >= 0 && t.hour <= 23 && t.minute >= 0 && t.minute <= 59 && t.second >= 0 &&
         t.second <= 60;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t year, int month, int day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

// Reads exactly `n` decimal digits.
bool Digits(std::string_view& s, int n, int* value) {
  if (s.size() < static_cast<size_t>(n)) return false;
  int v = 0;
  for (int i = 0; i < n; ++i) {
    if (!IsAsciiDigit(s[i])) return false;
    v = v * 10 + (s[i] - '0');
  }
  *value = v;
  s.remove_prefix(n);
  return true;
}

bool Eat(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

// "<PRI>" with 1 to 3 digits and a value up to 191.
std::optional<int> Priority(std::string_view& s) {
  std::string_view t = s;
  if (!Eat(t, '<')) return std::nullopt;
  int value = 0;
  size_t digits = 0;
  while (!t.empty() && IsAsciiDigit(t.front()) && digits < 3) {
    value = value * 10 + (t.front() - '0');
    t.remove_prefix(1);
    ++digits;
  }
  if (digits == 0 || value > kMaxPriority || !Eat(t, '>')) return std::nullopt;
  s = t;
  return value;
}

// "hh:mm:ss" with an optional fraction of a second.
bool TimeOfDay(std::string_view& s, SyslogTime* time) {
  CivilTime& c = time->civil;
  if (!Digits(s, 2, &c.hour) || !Eat(s, ':') || !Digits(s, 2, &c.minute) || !Eat(s, ':') ||
      !Digits(s, 2, &c.second)) {
    return false;
  }
  if (!s.empty() && s.front() == '.') {
    s.remove_prefix(1);
    uint32_t nanos = 0;
    int digits = 0;
    while (!s.empty() && IsAsciiDigit(s.front())) {
      if (digits == kMaxFractionDigits) return false;
      nanos = nanos * 10 + static_cast<uint32_t>(s.front() - '0');
      s.remove_prefix(1);
      ++digits;
    }
    if (digits == 0) return false;
    for (int i = digits; i < kMaxFractionDigits; ++i) nanos *= 10;
    time->nanoseconds = nanos;
  }
  return true;
}

// RFC 3339: YYYY-MM-DDThh:mm:ss[.frac](Z|+hh:mm|-hh:mm); the zone may be missing only when
// `zone_required` is false (rsyslog's templates without one).
std::optional<SyslogTime> Rfc3339(std::string_view& s, bool zone_required) {
  std::string_view t = s;
  SyslogTime time;
  CivilTime& c = time.civil;
  if (!Digits(t, 4, &c.year) || !Eat(t, '-') || !Digits(t, 2, &c.month) || !Eat(t, '-') ||
      !Digits(t, 2, &c.day) || !Eat(t, 'T') || !TimeOfDay(t, &time)) {
    return std::nullopt;
  }
  if (Eat(t, 'Z')) {
    time.utc_offset_minutes = 0;
  } else if (!t.empty() && (t.front() == '+' || t.front() == '-')) {
    const int sign = t.front() == '+' ? 1 : -1;
    t.remove_prefix(1);
    int hours = 0;
    int minutes = 0;
    if (!Digits(t, 2, &hours) || !Eat(t, ':') || !Digits(t, 2, &minutes) || hours > 23 ||
        minutes > 59) {
      return std::nullopt;
    }
    time.utc_offset_minutes = sign * (hours * 60 + minutes);
  } else if (zone_required) {
    return std::nullopt;
  }
  if (!IsValid(c)) return std::nullopt;
  s = t;
  return time;
}

// RFC 3164's "Mmm dd hh:mm:ss" (dd padded with a space or a zero, or a single digit), the year
// resolved against `now`. Sets *has_timestamp when the text has that shape, even if the date
// does not exist (then the result is nullopt but the text is consumed).
std::optional<SyslogTime> BsdTimestamp(std::string_view& s, const CivilTime& now,
                                       bool* has_timestamp) {
  static constexpr std::string_view kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                                 "jul", "aug", "sep", "oct", "nov", "dec"};
  std::string_view t = s;
  if (t.size() < 4) return std::nullopt;
  int month = 0;
  for (int m = 0; m < 12; ++m) {
    bool same = true;
    for (int i = 0; i < 3; ++i) same = same && (t[i] | 0x20) == kMonths[m][i];
    if (same) month = m + 1;
  }
  if (month == 0) return std::nullopt;
  t.remove_prefix(3);
  if (!Eat(t, ' ')) return std::nullopt;
  Eat(t, ' ');  // "Jan  1"
  int day = 0;
  if (!Digits(t, 2, &day) && !Digits(t, 1, &day)) return std::nullopt;
  SyslogTime time;
  if (!Eat(t, ' ') || !TimeOfDay(t, &time)) return std::nullopt;
  s = t;
  *has_timestamp = true;
  time.civil.month = month;
  time.civil.day = day;
  const std::optional<int> year = ResolveYear(time.civil, now);
  if (!year) return std::nullopt;
  time.civil.year = *year;
  time.year_inferred = true;
  return time;
}

// A run of printable US-ASCII of at most `max` bytes ending at a space or the end; `-` alone is
// returned as an empty value. False when the run is empty, too long or holds other bytes.
bool HeaderField(std::string_view& s, size_t max, std::string_view* value) {
  size_t n = 0;
  while (n < s.size() && s[n] != ' ') {
    if (!IsPrintUsAscii(s[n]) || n == max) return false;
    ++n;
  }
  if (n == 0) return false;
  *value = s.substr(0, n) == "-" ? std::string_view() : s.substr(0, n);
  s.remove_prefix(n);
  return true;
}

// RFC 5424 STRUCTURED-DATA: `-` or one or more [SD-ID *(SP PARAM="VALUE")] elements, where a
// value escapes '"', '\' and ']' with a backslash.
bool StructuredData(std::string_view& s, std::string_view* value) {
  if (s.empty()) return false;
  if (s.front() == '-') {
    s.remove_prefix(1);
    *value = {};
    return s.empty() || s.front() == ' ';
  }
  size_t i = 0;
  while (i < s.size() && s[i] == '[') {
    ++i;
    size_t id = 0;
    while (i < s.size() && IsPrintUsAscii(s[i]) && s[i] != '=' && s[i] != ']' && s[i] != '"') {
      ++i;
      ++id;
    }
    if (id == 0) return false;
    bool quoted = false;
    bool closed = false;
    for (; i < s.size(); ++i) {
      const char c = s[i];
      if (quoted) {
        if (c == '\\' && i + 1 < s.size()) {
          ++i;
        } else if (c == '"') {
          quoted = false;
        }
      } else if (c == '"') {
        quoted = true;
      } else if (c == ']') {
        closed = true;
        ++i;
        break;
      }
    }
    if (!closed) return false;
  }
  if (i == 0 || (i < s.size() && s[i] != ' ')) return false;
  *value = s.substr(0, i);
  s.remove_prefix(i);
  return true;
}

// The rest of an RFC 5424 message after its PRI: VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME
// SP PROCID SP MSGID SP SD [SP MSG].
bool Rfc5424(std::string_view s, SyslogMessage* m) {
  if (s.empty() || s.front() < '1' || s.front() > '9') return false;
  s.remove_prefix(1);
  if (!s.empty() && IsAsciiDigit(s.front())) s.remove_prefix(1);  // VERSION is 1 or 2 digits
  if (!Eat(s, ' ')) return false;
  if (Eat(s, '-')) {
    m->time.reset();
  } else {
    m->time = Rfc3339(s, /*zone_required=*/true);
    if (!m->time) return false;
  }
  if (!Eat(s, ' ') || !HeaderField(s, SyslogMessage::kMaxHostBytes, &m->host) || !Eat(s, ' ') ||
      !HeaderField(s, SyslogMessage::kMaxAppBytes, &m->app) || !Eat(s, ' ') ||
      !HeaderField(s, SyslogMessage::kMaxProcIdBytes, &m->proc_id) || !Eat(s, ' ') ||
      !HeaderField(s, SyslogMessage::kMaxMsgIdBytes, &m->msg_id) || !Eat(s, ' ') ||
      !StructuredData(s, &m->structured_data)) {
    return false;
  }
  Eat(s, ' ');
  if (s.substr(0, kUtf8Bom.size()) == kUtf8Bom) s.remove_prefix(kUtf8Bom.size());
  m->text = s;
  m->format = SyslogFormat::kRfc5424;
  return true;
}

// TAG[PID]: at the start of `s`, as BSD syslog writes it. The tag must end in ':' or "[pid]";
// a word followed by a space alone is message text, not a tag.
void BsdTag(std::string_view& s, SyslogMessage* m) {
  size_t n = 0;
  while (n < s.size() && n < SyslogMessage::kMaxAppBytes && IsPrintUsAscii(s[n]) && s[n] != '[' &&
         s[n] != ':') {
    ++n;
  }
  if (n == 0 || n == s.size()) return;
  std::string_view t = s.substr(n);
  std::string_view pid;
  if (t.front() == '[') {
    const size_t close = t.find(']');
    if (close == std::string_view::npos || close == 1 || close > SyslogMessage::kMaxProcIdBytes) {
      return;
    }
    pid = t.substr(1, close - 1);
    for (char c : pid) {
      if (!IsPrintUsAscii(c)) return;
    }
    t.remove_prefix(close + 1);
    Eat(t, ':');
  } else if (!Eat(t, ':')) {
    return;
  }
  m->app = s.substr(0, n);
  m->proc_id = pid;
  Eat(t, ' ');
  s = t;
}

// What follows RFC 3164's PRI (or a line with no PRI): [TIMESTAMP SP [HOSTNAME SP]] [TAG: ] MSG.
// False when there is no PRI and no timestamp either: then it is not syslog at all.
bool Rfc3164(std::string_view s, bool has_priority, const CivilTime& now, SyslogMessage* m) {
  bool has_timestamp = false;
  m->time = BsdTimestamp(s, now, &has_timestamp);
  if (!has_timestamp) {
    m->time = Rfc3339(s, /*zone_required=*/false);
    has_timestamp = m->time.has_value();
  }
  if (!has_timestamp && !has_priority) return false;
  if (has_timestamp) {
    if (!Eat(s, ' ')) {
      if (!s.empty() || !has_priority) return false;
    }
    // HOSTNAME, unless the first word is already the tag (`app:` or `app[42]:`), as in the
    // messages libc's syslog() writes to /dev/log.
    const size_t end = s.find(' ');
    const std::string_view word = s.substr(0, end);
    std::string_view host;
    if (end != std::string_view::npos && !word.empty() &&
        word.find('[') == std::string_view::npos && word.back() != ':' &&
        word.size() <= SyslogMessage::kMaxHostBytes) {
      std::string_view t = s;
      if (HeaderField(t, SyslogMessage::kMaxHostBytes, &host) && Eat(t, ' ')) {
        m->host = host;
        s = t;
      }
    }
  }
  BsdTag(s, m);
  m->text = s;
  m->format = SyslogFormat::kRfc3164;
  return true;
}

}  // namespace

int64_t UtcSecondsOf(const CivilTime& t) {
  return DaysFromCivil(t.year, t.month, t.day) * 86400 + t.hour * 3600 + t.minute * 60 + t.second;
}

std::optional<int> ResolveYear(const CivilTime& yearless, const CivilTime& now) {
  const int64_t latest = UtcSecondsOf(now) + kFutureToleranceSeconds;
  for (const int year : {now.year + 1, now.year, now.year - 1}) {
    CivilTime candidate = yearless;
    candidate.year = year;
    if (IsValid(candidate) && UtcSecondsOf(candidate) <= latest) return year;
  }
  return std::nullopt;
}

SyslogMessage ParseSyslogMessage(std::string_view message, const CivilTime& now) {
  SyslogMessage m;
  std::string_view rest = message;
  const std::optional<int> priority = Priority(rest);
  if (priority && Rfc5424(rest, &m)) {
    m.priority = *priority;
    return m;
  }
  m = SyslogMessage();
  if (Rfc3164(rest, priority.has_value(), now, &m)) {
    m.priority = priority.value_or(SyslogMessage::kNoPriority);
    return m;
  }
  m = SyslogMessage();
  m.text = message;
  return m;
}

}  // namespace faultline
