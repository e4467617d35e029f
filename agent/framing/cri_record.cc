#include "agent/framing/cri_record.h"

namespace faultline {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Reads `count` digits at `at`; false when a byte there is not a digit or the head ends.
bool Digits(std::string_view s, size_t& at, size_t count) {
  if (at + count > s.size()) return false;
  for (size_t i = 0; i < count; ++i) {
    if (!IsDigit(s[at + i])) return false;
  }
  at += count;
  return true;
}

bool Byte(std::string_view s, size_t& at, char c) {
  if (at >= s.size() || s[at] != c) return false;
  ++at;
  return true;
}

// RFC 3339 as Go's time.RFC3339Nano prints it: 2024-05-01T12:00:00[.fraction](Z|+hh:mm|-hh:mm).
bool Rfc3339Time(std::string_view s, size_t& at) {
  if (!(Digits(s, at, 4) && Byte(s, at, '-') && Digits(s, at, 2) && Byte(s, at, '-') &&
        Digits(s, at, 2) && Byte(s, at, 'T') && Digits(s, at, 2) && Byte(s, at, ':') &&
        Digits(s, at, 2) && Byte(s, at, ':') && Digits(s, at, 2))) {
    return false;
  }
  if (Byte(s, at, '.')) {
    const size_t fraction = at;
    while (at < s.size() && IsDigit(s[at]) && at - fraction < 9) ++at;
    if (at == fraction) return false;
  }
  if (Byte(s, at, 'Z')) return true;
  if (at >= s.size() || (s[at] != '+' && s[at] != '-')) return false;
  ++at;
  return Digits(s, at, 2) && Byte(s, at, ':') && Digits(s, at, 2);
}

bool Word(std::string_view s, size_t& at, std::string_view word) {
  if (s.substr(at, word.size()) != word) return false;
  at += word.size();
  return true;
}

}  // namespace

CriPrefix ParseCriPrefix(std::string_view head) {
  size_t at = 0;
  if (!Rfc3339Time(head, at) || !Byte(head, at, ' ')) return {};
  if (!Word(head, at, "stdout") && !Word(head, at, "stderr")) return {};
  if (!Byte(head, at, ' ')) return {};
  if (at >= head.size() || (head[at] != 'P' && head[at] != 'F')) return {};
  const bool partial = head[at] == 'P';
  ++at;
  // Further tags, if a runtime ever writes them: ":<tag>" up to the space before the message.
  if (at < head.size() && head[at] == ':') {
    while (at < head.size() && head[at] != ' ') ++at;
  }
  // A prefix must end within kMaxCriPrefixBytes, so that the first kMaxCriPrefixBytes bytes of a
  // record decide it as the whole record would (a reader may hold no more before it decides).
  if (at == head.size()) {  // an empty message
    return at < kMaxCriPrefixBytes ? CriPrefix{true, partial, at} : CriPrefix{};
  }
  if (head[at] != ' ' || at + 1 > kMaxCriPrefixBytes) return {};
  return CriPrefix{true, partial, at + 1};
}

}  // namespace faultline
