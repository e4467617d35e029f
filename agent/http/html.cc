#include "agent/http/html.h"

#include <cstdint>
#include <cstdio>

namespace faultline {
namespace {

// Decodes one UTF-8 character at the start of `text`. Returns its length in bytes (at least 1)
// and sets *code, or U+FFFD for a byte that does not start a valid, shortest-form character.
std::size_t DecodeUtf8(std::string_view text, char32_t* code) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  *code = 0xFFFD;
  if (lead < 0x80) {
    *code = lead;
    return 1;
  }
  std::size_t length = 0;
  char32_t value = 0;
  char32_t min = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    value = lead & 0x1F;
    min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    value = lead & 0x0F;
    min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    value = lead & 0x07;
    min = 0x10000;
  } else {
    return 1;
  }
  if (text.size() < length) return 1;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 1;
    value = (value << 6) | (byte(i) & 0x3F);
  }
  if (value < min || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 1;
  *code = value;
  return length;
}

// Characters that change how the text around them is shown, or are not shown at all.
bool IsInvisibleOrReordering(char32_t c) {
  return (c >= 0x80 && c <= 0x9F) ||      // C1 controls
         c == 0xAD ||                     // soft hyphen
         c == 0x061C ||                   // Arabic letter mark
         (c >= 0x180B && c <= 0x180E) ||  // Mongolian selectors and vowel separator
         (c >= 0x200B && c <= 0x200F) ||  // zero-width space, joiners, LRM, RLM
         (c >= 0x2028 && c <= 0x202E) ||  // line/paragraph separators, bidi embeddings, overrides
         (c >= 0x2060 && c <= 0x206F) ||  // word joiner, invisible operators, bidi isolates
         c == 0xFEFF ||                   // zero-width no-break space (BOM)
         (c >= 0xFFF9 && c <= 0xFFFB) ||  // interlinear annotation
         (c >= 0xE0000 && c <= 0xE007F);  // tag characters
}

void AppendUtf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

void AppendCharacter(std::string& out, char32_t c) {
  switch (c) {
    case '&':
      out += "&amp;";
      return;
    case '<':
      out += "&lt;";
      return;
    case '>':
      out += "&gt;";
      return;
    case '"':
      out += "&quot;";
      return;
    case '\'':
      out += "&#39;";
      return;
    case '\t':
      out += '\t';
      return;
    default:
      break;
  }
  if (c < 0x20) {
    AppendUtf8(out, 0x2400 + c);  // Control Pictures: U+2400 NUL .. U+241F US
  } else if (c == 0x7F) {
    AppendUtf8(out, 0x2421);  // DEL
  } else if (IsInvisibleOrReordering(c)) {
    char name[16];
    std::snprintf(name, sizeof name, "U+%04X", static_cast<unsigned>(c));
    out += "<span class=\"esc\">";
    out += name;
    out += "</span>";
  } else {
    AppendUtf8(out, c);
  }
}

}  // namespace

void AppendHtmlText(std::string& out, std::string_view text) {
  AppendBoundedHtmlText(out, text, text.size());
}

void AppendBoundedHtmlText(std::string& out, std::string_view text, std::size_t max_bytes) {
  std::size_t i = 0;
  while (i < text.size()) {
    char32_t c = 0;
    const std::size_t length = DecodeUtf8(text.substr(i), &c);
    if (i + length > max_bytes) break;
    AppendCharacter(out, c);
    i += length;
  }
  if (i < text.size()) {
    out += "<span class=\"cut\">… ";
    out += std::to_string(text.size() - i);
    out += " more bytes</span>";
  }
}

std::string HtmlText(std::string_view text) {
  std::string out;
  AppendHtmlText(out, text);
  return out;
}

}  // namespace faultline
