#include "agent/alert/text_budget.h"

namespace faultline {
namespace {

constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // …

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

std::size_t CodePoints(std::string_view text) {
  std::size_t n = 0;
  for (char c : text) n += IsContinuation(c) ? 0 : 1;
  return n;
}

std::string CutToCodePoints(std::string_view text, std::size_t max_code_points) {
  if (CodePoints(text) <= max_code_points) return std::string(text);
  if (max_code_points == 0) return "";
  // Keep max - 1 code points and the ellipsis.
  std::size_t kept = 0;
  std::size_t end = 0;
  while (end < text.size()) {
    if (!IsContinuation(text[end])) {
      if (kept == max_code_points - 1) break;
      ++kept;
    }
    ++end;
  }
  std::string out(text.substr(0, end));
  out += kEllipsis;
  return out;
}

std::string EscapeMrkdwn(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string JoinLinesWithin(const std::vector<std::string>& lines, std::size_t max_code_points,
                            std::string (*escape)(std::string_view)) {
  const auto note = [](std::size_t omitted) {
    return std::string(kEllipsis) + "(" + std::to_string(omitted) + " more lines)";
  };
  std::string out;
  std::size_t used = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string line = escape != nullptr ? escape(lines[i]) : lines[i];
    const std::size_t separator = i == 0 ? 0 : 1;
    const std::size_t after = lines.size() - i - 1;
    // Room for this line and, if lines follow, for the note that would say they were left out.
    const std::size_t reserve = after > 0 ? 1 + CodePoints(note(after)) : 0;
    if (used + separator + CodePoints(line) + reserve <= max_code_points) {
      if (separator != 0) out.push_back('\n');
      out += line;
      used += separator + CodePoints(line);
      continue;
    }
    const std::size_t omitted = lines.size() - i;
    if (i == 0) {
      // Not even the first line fits: cut it, and still say what follows.
      const std::string tail = omitted > 1 ? "\n" + note(omitted - 1) : "";
      const std::size_t budget =
          max_code_points > CodePoints(tail) ? max_code_points - CodePoints(tail) : 0;
      return CutToCodePoints(line, budget) + tail;
    }
    out += "\n" + note(omitted);
    return out;
  }
  return out;
}

}  // namespace faultline
