#include "agent/framing/ansi.h"

#include <cstring>

namespace faultline {
namespace {

constexpr char kBell = '\x07';

// Returns the index just past the escape sequence starting at `begin` (which holds ESC).
size_t SkipEscape(std::string_view s, size_t begin) {
  size_t i = begin + 1;
  if (i >= s.size()) return i;
  const char kind = s[i++];
  if (kind == '[') {
    // CSI: parameter bytes 0x30-0x3F, intermediate bytes 0x20-0x2F, one final byte 0x40-0x7E.
    while (i < s.size()) {
      const unsigned char c = static_cast<unsigned char>(s[i++]);
      if (c >= 0x40 && c <= 0x7E) return i;
      if (c < 0x20 || c >= 0x7F) return i - 1;  // not a CSI byte: stop before it
    }
    return i;
  }
  if (kind == ']') {
    // OSC (hyperlinks, window titles): ends at BEL or ESC '\'.
    while (i < s.size()) {
      if (s[i] == kBell) return i + 1;
      if (s[i] == kEscape && i + 1 < s.size() && s[i + 1] == '\\') return i + 2;
      ++i;
    }
    return i;
  }
  return i;  // two-byte sequence such as ESC ( or ESC =
}

}  // namespace

void AppendWithoutAnsi(std::string_view line, std::string& out) {
  size_t pos = 0;
  while (pos < line.size()) {
    const void* esc = std::memchr(line.data() + pos, kEscape, line.size() - pos);
    if (esc == nullptr) {
      out.append(line.data() + pos, line.size() - pos);
      return;
    }
    const size_t at = static_cast<const char*>(esc) - line.data();
    out.append(line.data() + pos, at - pos);
    pos = SkipEscape(line, at);
  }
}

void StripAnsiInPlace(std::string& line) {
  const std::string_view view(line);
  size_t kept = 0;
  size_t pos = 0;
  while (pos < view.size()) {
    const void* esc = std::memchr(view.data() + pos, kEscape, view.size() - pos);
    const size_t at = esc == nullptr ? view.size() : static_cast<const char*>(esc) - view.data();
    if (kept != pos) std::memmove(line.data() + kept, line.data() + pos, at - pos);
    kept += at - pos;
    if (esc == nullptr) break;
    pos = SkipEscape(view, at);
  }
  line.resize(kept);
}

}  // namespace faultline
