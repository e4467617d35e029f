#include "agent/discover/masker.h"

#include <array>
#include <span>

#include "agent/core/ascii.h"

namespace faultline {
namespace {

// ASCII classes only: a byte of a multibyte character is never a word character, a digit or a
// separator here, so masking never splits a character.
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsWord(char c) { return IsAsciiDigit(c) || IsAlpha(c) || c == '_'; }
bool IsHex(char c) { return IsAsciiDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' || c == '\n';
}
bool IsPathChar(char c) {
  return IsWord(c) || c == '.' || c == '@' || c == '+' || c == '~' || c == '%' || c == '?' ||
         c == '&' || c == '=' || c == ',' || c == ':' || c == '-';
}

// Each Match* returns the length of its shape starting at s[i], or 0. They look only forward;
// the caller checks what comes before and after.

size_t Run(std::string_view s, size_t i, bool (*in)(char)) {
  size_t j = i;
  while (j < s.size() && in(s[j])) ++j;
  return j - i;
}

size_t Spaces(std::string_view s, size_t i) { return Run(s, i, IsSpace); }

// `count` characters of class `in` exactly, at s[i].
bool Exactly(std::string_view s, size_t i, size_t count, bool (*in)(char)) {
  if (i + count > s.size()) return false;
  for (size_t k = 0; k < count; ++k) {
    if (!in(s[i + k])) return false;
  }
  return true;
}

bool OneOf(std::string_view s, size_t i, std::span<const std::string_view> words) {
  for (std::string_view w : words) {
    if (s.substr(i, w.size()) == w) return true;
  }
  return false;
}

constexpr std::array<std::string_view, 7> kWeekdays = {"Mon", "Tue", "Wed", "Thu",
                                                        "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// hh:mm:ss with a one- or two-digit hour.
size_t MatchClock(std::string_view s, size_t i) {
  const size_t h = Run(s, i, IsAsciiDigit);
  if (h < 1 || h > 2) return 0;
  size_t j = i + h;
  for (int part = 0; part < 2; ++part) {
    if (j >= s.size() || s[j] != ':' || !Exactly(s, j + 1, 2, IsAsciiDigit)) return 0;
    j += 3;
  }
  return j - i;
}

// `Sat Jul  9 11:35:59 2005` (the year optional), as ctime() and many daemons print it.
size_t MatchCtime(std::string_view s, size_t i) {
  if (!OneOf(s, i, kWeekdays)) return 0;
  size_t j = i + 3;
  size_t sp = Spaces(s, j);
  if (sp == 0 || !OneOf(s, j + sp, kMonths)) return 0;
  j += sp + 3;
  sp = Spaces(s, j);
  const size_t day = Run(s, j + sp, IsAsciiDigit);
  if (sp == 0 || day < 1 || day > 2) return 0;
  j += sp + day;
  sp = Spaces(s, j);
  const size_t clock = sp == 0 ? 0 : MatchClock(s, j + sp);
  if (clock == 0) return 0;
  j += sp + clock;
  sp = Spaces(s, j);
  if (sp > 0 && Exactly(s, j + sp, 4, IsAsciiDigit) && (j + sp + 4 == s.size() || !IsWord(s[j + sp + 4]))) {
    j += sp + 4;
  }
  return j - i;
}

// 2024-06-01 12:00:00,123 / 2024-06-01T12:00:00.5+02:00
size_t MatchIsoTime(std::string_view s, size_t i) {
  if (!Exactly(s, i, 4, IsAsciiDigit) || i + 10 > s.size() || s[i + 4] != '-' ||
      !Exactly(s, i + 5, 2, IsAsciiDigit) || s[i + 7] != '-' || !Exactly(s, i + 8, 2, IsAsciiDigit)) {
    return 0;
  }
  size_t j = i + 10;
  if (j >= s.size() || (s[j] != 'T' && s[j] != ' ')) return 0;
  const size_t clock = MatchClock(s, j + 1);
  if (clock != 8) return 0;
  j += 1 + clock;
  if (j + 1 < s.size() && (s[j] == '.' || s[j] == ',') && IsAsciiDigit(s[j + 1])) {
    j += 1 + Run(s, j + 1, IsAsciiDigit);
  }
  if (j < s.size() && s[j] == 'Z') {
    ++j;
  } else if (j + 2 < s.size() && (s[j] == '+' || s[j] == '-') && Exactly(s, j + 1, 2, IsAsciiDigit)) {
    size_t k = j + 3;
    if (k < s.size() && s[k] == ':') ++k;
    if (Exactly(s, k, 2, IsAsciiDigit)) j = k + 2;
  }
  return j - i;
}

size_t MatchUuid(std::string_view s, size_t i) {
  static constexpr std::array<size_t, 5> kGroups = {8, 4, 4, 4, 12};
  size_t j = i;
  for (size_t g = 0; g < kGroups.size(); ++g) {
    if (g > 0) {
      if (j >= s.size() || s[j] != '-') return 0;
      ++j;
    }
    if (!Exactly(s, j, kGroups[g], IsHex)) return 0;
    j += kGroups[g];
  }
  return j - i;
}

size_t MatchUrl(std::string_view s, size_t i) {
  if (i >= s.size() || !IsAlpha(s[i])) return 0;
  size_t j = i + 1;
  while (j < s.size() && (IsAlpha(s[j]) || IsAsciiDigit(s[j]) || s[j] == '+' || s[j] == '.' ||
                          s[j] == '-')) {
    ++j;
  }
  if (s.substr(j, 3) != "://") return 0;
  j += 3;
  const size_t body = j;
  while (j < s.size() && !IsSpace(s[j]) && s[j] != '"' && s[j] != '\'' && s[j] != '<' &&
         s[j] != '>') {
    ++j;
  }
  return j > body ? j - i : 0;
}

// Groups of hex digits separated by ':': a MAC address (six groups of two) or an IPv6 address
// (four to eight groups of one to four). Clock times (three groups) are not addresses.
size_t MatchColonHex(std::string_view s, size_t i) {
  size_t j = i;
  int groups = 0;
  bool all_pairs = true;
  while (true) {
    const size_t n = Run(s, j, IsHex);
    if (n < 1 || n > 4) break;
    all_pairs = all_pairs && n == 2;
    ++groups;
    j += n;
    if (j + 1 < s.size() && s[j] == ':' && IsHex(s[j + 1]) && groups < 8) {
      ++j;
      continue;
    }
    break;
  }
  if (groups >= 4 || (groups == 6 && all_pairs)) return j - i;
  return 0;
}

size_t MatchIpv4(std::string_view s, size_t i) {
  size_t j = i;
  for (int part = 0; part < 4; ++part) {
    if (part > 0) {
      if (j >= s.size() || s[j] != '.') return 0;
      ++j;
    }
    const size_t n = Run(s, j, IsAsciiDigit);
    if (n < 1 || n > 3) return 0;
    j += n;
  }
  if (j + 1 < s.size() && s[j] == ':' && IsAsciiDigit(s[j + 1])) j += 1 + Run(s, j + 1, IsAsciiDigit);
  return j - i;
}

size_t MatchHexNumber(std::string_view s, size_t i) {
  if (i + 2 >= s.size() || s[i] != '0' || (s[i + 1] != 'x' && s[i + 1] != 'X') ||
      !IsHex(s[i + 2])) {
    return 0;
  }
  return 2 + Run(s, i + 2, IsHex);
}

// label.label...:port
size_t MatchHostPort(std::string_view s, size_t i) {
  size_t j = i;
  int labels = 0;
  while (true) {
    const size_t n =
        Run(s, j, [](char c) { return IsAlpha(c) || IsAsciiDigit(c) || c == '-'; });
    if (n == 0) return 0;
    j += n;
    ++labels;
    if (j < s.size() && s[j] == '.') {
      ++j;
      continue;
    }
    break;
  }
  if (labels < 2 || j + 1 >= s.size() || s[j] != ':' || !IsAsciiDigit(s[j + 1])) return 0;
  return j + 1 + Run(s, j + 1, IsAsciiDigit) - i;
}

// /a/b, C:\a\b, and relative a/b/c: at least two separators, each followed by a segment.
size_t MatchPath(std::string_view s, size_t i) {
  size_t j = i;
  if (j + 2 < s.size() && IsAlpha(s[j]) && s[j + 1] == ':' && (s[j + 2] == '\\' || s[j + 2] == '/')) {
    j += 2;
  } else if (j < s.size() && s[j] != '/' && s[j] != '\\') {
    // A relative path begins with a segment.
    const size_t n = Run(s, j, [](char c) { return IsWord(c) || c == '.' || c == '-'; });
    if (n == 0) return 0;
    j += n;
  }
  int separators = 0;
  while (j + 1 < s.size() && (s[j] == '/' || s[j] == '\\') && IsPathChar(s[j + 1])) {
    j += 1 + Run(s, j + 1, IsPathChar);
    ++separators;
  }
  if (separators < 2) return 0;
  if (j < s.size() && (s[j] == '/' || s[j] == '\\')) ++j;
  return j - i;
}

size_t MatchHexId(std::string_view s, size_t i) {
  const size_t n = Run(s, i, IsHex);
  if (n < 8) return 0;
  for (size_t k = i; k < i + n; ++k) {
    if (IsAsciiDigit(s[k])) return n;
  }
  return 0;
}

// [-+]?digits([.,:]digits)*unit{0,4}; the end may not be followed by a word character or '.'.
size_t MatchNumber(std::string_view s, size_t i) {
  size_t j = i;
  if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
  const size_t digits = Run(s, j, IsAsciiDigit);
  if (digits == 0) return 0;
  j += digits;
  while (j + 1 < s.size() && (s[j] == '.' || s[j] == ',' || s[j] == ':') && IsAsciiDigit(s[j + 1])) {
    j += 1 + Run(s, j + 1, IsAsciiDigit);
  }
  size_t unit = 0;
  while (unit < 4 && j + unit < s.size() && (IsAlpha(s[j + unit]) || s[j + unit] == '%')) ++unit;
  j += unit;
  if (j < s.size() && (IsWord(s[j]) || s[j] == '.')) return 0;
  return j - i;
}

// A quoted string without whitespace inside, the quotes included.
size_t MatchQuoted(std::string_view s, size_t i) {
  const char quote = s[i];
  if (quote != '\'' && quote != '"' && quote != '`') return 0;
  for (size_t j = i + 1; j < s.size() && !IsSpace(s[j]); ++j) {
    if (s[j] == quote) return j + 1 - i;
  }
  return 0;
}

// The first shape that starts at s[i] (where no word character or '.' precedes) and ends
// before a word character.
size_t MatchVariable(std::string_view s, size_t i) {
  using Matcher = size_t (*)(std::string_view, size_t);
  static constexpr std::array<Matcher, 10> kShapes = {
      MatchCtime,   MatchIsoTime, MatchUuid, MatchUrl,      MatchColonHex,
      MatchIpv4,    MatchHexNumber, MatchHostPort, MatchPath, MatchHexId};
  for (Matcher m : kShapes) {
    const size_t n = m(s, i);
    if (n > 0 && (i + n == s.size() || !IsWord(s[i + n]))) return n;
  }
  return MatchNumber(s, i);
}

}  // namespace

void MaskLine(std::string_view line, std::vector<std::string>& tokens) {
  std::string masked;
  masked.reserve(line.size());
  for (size_t i = 0; i < line.size();) {
    size_t n = MatchQuoted(line, i);
    if (n == 0 && (i == 0 || (!IsWord(line[i - 1]) && line[i - 1] != '.'))) {
      n = MatchVariable(line, i);
    }
    if (n > 0) {
      masked.append(kVariable);
      i += n;
    } else {
      masked.push_back(line[i]);
      ++i;
    }
  }
  tokens.clear();
  for (size_t i = 0; i < masked.size();) {
    while (i < masked.size() && IsSpace(masked[i])) ++i;
    size_t end = i;
    while (end < masked.size() && !IsSpace(masked[end])) ++end;
    if (end == i) break;
    const std::string_view token(masked.data() + i, end - i);
    // key=value: the key with its '=' is one token, the value another.
    const size_t eq = token.find('=');
    if (eq != std::string_view::npos && eq > 0 && eq + 1 < token.size()) {
      tokens.emplace_back(token.substr(0, eq + 1));
      tokens.emplace_back(token.substr(eq + 1));
    } else {
      tokens.emplace_back(token);
    }
    i = end;
  }
}

bool IsVariableLike(std::string_view token) {
  if (token.find(kVariable) != std::string_view::npos) return true;
  for (char c : token) {
    if (IsAsciiDigit(c)) return true;
  }
  return false;
}

}  // namespace faultline
