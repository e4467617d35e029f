#include "agent/framing/utf8.h"

#include <cstdint>
#include <cstdio>

namespace faultline {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one.
size_t ValidSequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return 0;  // continuation byte, overlong lead (C0, C1) or beyond U+10FFFF (F5..FF)
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const uint8_t b = byte(i + k);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

// The code point of the valid `len`-byte sequence at s[i].
uint32_t CodePoint(std::string_view s, size_t i, size_t len) {
  static constexpr uint8_t kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t cp = static_cast<uint8_t>(s[i]) & kLeadMask[len];
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  return cp;
}

// Code points a terminal acts on rather than shows: C1 controls (U+0085 and U+009B are a newline
// and a CSI to some terminals), the bidirectional controls (Unicode's Bidi_Control set: U+061C,
// U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), which reorder the text around them so a line can
// display as something else than it says, and the line and paragraph separators U+2028/U+2029.
bool IsInvisibleControl(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

template <typename OnAscii, typename OnMultibyte>
std::string Sanitize(std::string_view bytes, OnAscii on_ascii, OnMultibyte on_multibyte) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const size_t len = ValidSequenceLength(bytes, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
    } else if (len == 1) {
      on_ascii(bytes[i], out);
      ++i;
    } else {
      on_multibyte(bytes, i, len, out);
      i += len;
    }
  }
  return out;
}

}  // namespace

bool IsValidUtf8(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const size_t len = ValidSequenceLength(bytes, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string SanitizeUtf8(std::string_view bytes) {
  return Sanitize(
      bytes, [](char c, std::string& out) { out += c; },
      [](std::string_view s, size_t i, size_t len, std::string& out) { out.append(s, i, len); });
}

std::string SanitizeForDisplay(std::string_view bytes) {
  return Sanitize(
      bytes,
      [](char c, std::string& out) {
        const auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && c != '\t') || u == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", u);
          out += buf;
        } else {
          out += c;
        }
      },
      [](std::string_view s, size_t i, size_t len, std::string& out) {
        const uint32_t cp = CodePoint(s, i, len);
        if (IsInvisibleControl(cp)) {
          char buf[16];  // room for any unsigned value: g++ -O3 checks the bound, not the range
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
          out += buf;
        } else {
          out.append(s, i, len);
        }
      });
}

}  // namespace faultline
