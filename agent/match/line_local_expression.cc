#include "agent/match/line_local_expression.h"

namespace faultline {
namespace {

// The space characters but '\n', as class members.
constexpr std::string_view kSpacesButNewline = "\\t\\f\\r \\x0b";

// Where the class opening at `open` ('[') ends (the index of its ']'), or npos when it does not
// end or holds something this rewrite leaves alone (see the header).
size_t ClassEnd(std::string_view p, size_t open, bool* rewritable) {
  size_t i = open + 1;
  if (i < p.size() && p[i] == '^') ++i;
  const size_t first = i;
  *rewritable = true;
  if (i < p.size() && (p[i] == ']' || p[i] == '-')) {
    *rewritable = false;
    ++i;  // a leading ']' is a member, not the end
  }
  for (; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
      continue;
    }
    if (p[i] == '[' && i + 1 < p.size() && p[i + 1] == ':') *rewritable = false;
    if (p[i] == ']') {
      if (i > first && p[i - 1] == '-' && (i < 2 || p[i - 2] != '\\')) *rewritable = false;
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::string LineLocalExpression(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 'Q') {  // quoted until \E: copied as it is
        const size_t end = p.find("\\E", i + 2);
        const size_t stop = end == std::string_view::npos ? p.size() : end + 2;
        out.append(p.substr(i, stop - i));
        i = stop - 1;
        continue;
      }
      if (e == 'b' || e == 'B') {
        // Dropped: see the header (RE2 confirms the word boundary).
      } else if (e == 's') {
        out.append("[").append(kSpacesButNewline).append("]");
      } else if (e == 'W') {
        out.append("[^\\w\\n]");
      } else if (e == 'D') {
        out.append("[^\\d\\n]");
      } else {
        out.push_back(c);
        out.push_back(e);
      }
      ++i;
      continue;
    }
    if (c != '[') {
      out.push_back(c);
      continue;
    }
    bool rewritable = false;
    const size_t end = ClassEnd(p, i, &rewritable);
    if (end == std::string_view::npos) {  // not a class Vectorscan will accept either
      out.append(p.substr(i));
      break;
    }
    const std::string_view cls = p.substr(i, end - i + 1);
    if (!rewritable) {
      out.append(cls);
      i = end;
      continue;
    }
    const bool negated = cls.size() > 1 && cls[1] == '^';
    for (size_t k = 0; k + 1 < cls.size(); ++k) {  // everything but the closing ']'
      if (cls[k] == '\\' && k + 2 < cls.size()) {
        if (cls[k + 1] == 's' && !negated) {
          out.append(kSpacesButNewline);
        } else {
          out.push_back(cls[k]);
          out.push_back(cls[k + 1]);
        }
        ++k;
        continue;
      }
      out.push_back(cls[k]);
    }
    if (negated) out.append("\\n");
    out.push_back(']');
    i = end;
  }
  return out;
}

}  // namespace faultline
