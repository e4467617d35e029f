#include "agent/cmd/rule_draft.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <optional>
#include <sstream>
#include <vector>

#include "agent/discover/masker.h"
#include "agent/framing/utf8.h"
#include "agent/rules/pattern_syntax.h"

namespace faultline {
namespace {

bool IsVar(const std::string& t) { return t == kVariable; }

bool HasLetter(std::string_view t) {
  return std::any_of(t.begin(), t.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
}

// `[worker-3]`, `(pid=7)`, `<main>`, `│`: framing around a message, not its words.
bool IsTag(std::string_view t) {
  if (!HasLetter(t)) return true;
  const char open = t.front();
  const char close = t.back() == ':' && t.size() > 1 ? t[t.size() - 2] : t.back();
  return (open == '[' && close == ']') || (open == '(' && close == ')') ||
         (open == '<' && close == '>');
}

bool StartsWithAny(std::string_view t, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return t.starts_with(p); });
}

bool ContainsAny(std::string_view t, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(),
                     [&](std::string_view p) { return t.find(p) != std::string_view::npos; });
}

// The token that names the failure, per cue; else the first word of the message.
size_t Anchor(std::span<const std::string> tokens, ErrorCue cue) {
  std::function<bool(const std::string&)> names;
  switch (cue) {
    case ErrorCue::kPythonException:
    case ErrorCue::kException:
      names = [](const std::string& t) { return IsExceptionLine(t); };
      break;
    case ErrorCue::kDiagnostic:
      names = [](const std::string& t) {
        return StartsWithAny(t, {"error", "Error", "fatal", "CMake", "nvcc", "make"});
      };
      break;
    case ErrorCue::kErrorLevel:
      names = [](const std::string& t) {
        return ContainsAny(t, {"ERROR", "FATAL", "CRITICAL", "level="});
      };
      break;
    case ErrorCue::kTerminate:
      names = [](const std::string& t) { return t == "terminate"; };
      break;
    case ErrorCue::kSignal:
      names = [](const std::string& t) {
        return StartsWithAny(t, {"Segmentation", "Bus", "Floating", "Illegal", "Aborted",
                                 "(core", "Signal"}) ||
               ContainsAny(t, {"SIG"});
      };
      break;
    case ErrorCue::kKilled:
      names = [](const std::string& t) { return t == "Killed" || t == "Out"; };
      break;
    case ErrorCue::kExitStatus:
    case ErrorCue::kFailure:
      break;
  }
  if (names) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (names(tokens[i])) return i;
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!IsVariableLike(tokens[i]) && !IsTag(tokens[i])) return i;
  }
  return 0;
}

// RE2::QuoteMeta, but control bytes (and bytes of invalid UTF-8) as \xNN, so that the pattern is
// text a YAML file can hold and still matches the same bytes (patterns match Latin-1 bytes).
std::string EscapeLiteral(std::string_view text) {
  const bool utf8 = IsValidUtf8(text);
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || (u >= 0x80 && !utf8)) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else if (u >= 0x80 || std::isalnum(u) || c == '_') {
      out.push_back(c);
    } else {
      out.push_back('\\');
      out.push_back(c);
    }
  }
  return out;
}

std::string Piece(const std::string& token) {
  if (IsVar(token)) return ".{0,256}?";
  std::string out;
  size_t at = 0;
  for (size_t v; (v = token.find(kVariable, at)) != std::string::npos; at = v + kVariable.size()) {
    out += EscapeLiteral(std::string_view(token).substr(at, v - at));
    out += "\\S{1,128}";
  }
  out += EscapeLiteral(std::string_view(token).substr(at));
  return out;
}

// CamelCase and dotted names to snake_case words: `torch.OutOfMemoryError:` -> out_of_memory_error.
std::string Snake(std::string_view name) {
  while (!name.empty() && !std::isalnum(static_cast<unsigned char>(name.back()))) name.remove_suffix(1);
  while (!name.empty() && !std::isalnum(static_cast<unsigned char>(name.front()))) name.remove_prefix(1);
  if (const size_t dot = name.rfind('.'); dot != std::string_view::npos) name = name.substr(dot + 1);
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (std::isupper(c)) {
      const bool after_lower = i > 0 && (std::islower(static_cast<unsigned char>(name[i - 1])) ||
                                         std::isdigit(static_cast<unsigned char>(name[i - 1])));
      const bool before_lower = i > 0 && i + 1 < name.size() &&
                                std::isupper(static_cast<unsigned char>(name[i - 1])) &&
                                std::islower(static_cast<unsigned char>(name[i + 1]));
      if ((after_lower || before_lower) && !out.empty() && out.back() != '_') out.push_back('_');
      out.push_back(static_cast<char>(std::tolower(c)));
    } else if (std::isalnum(c)) {
      out.push_back(static_cast<char>(c));
    } else if (!out.empty() && out.back() != '_') {
      out.push_back('_');
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.substr(0, 40);
}

constexpr std::array<std::string_view, 16> kStopWords = {
    "a", "an", "the", "of", "to", "in", "on", "for", "with", "at", "by", "is", "was", "be", "and", "or"};

std::string DraftId(std::span<const std::string> tokens, size_t anchor, const TemplateStats& t) {
  std::string name = Snake(tokens.empty() ? "" : tokens[anchor]);
  if (name.empty()) name = "error";
  std::string words;
  int taken = 0;
  for (size_t i = anchor + 1; i < tokens.size() && taken < 3; ++i) {
    if (IsVariableLike(tokens[i])) continue;
    std::string w = Snake(tokens[i]);
    if (w.empty() || std::find(kStopWords.begin(), kStopWords.end(), w) != kStopWords.end()) {
      continue;
    }
    if (!words.empty()) words.push_back('_');
    words.append(w, 0, 24);
    ++taken;
  }
  return "local." + name + "." + (words.empty() ? t.id : words);
}

std::string SingleQuoted(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += "''";
    else out.push_back(c);
  }
  return out + "'";
}

// Lines YAML can hold as they are: valid UTF-8 without control characters but tab.
bool Writable(std::string_view line) {
  if (!IsValidUtf8(line)) return false;
  return std::none_of(line.begin(), line.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

std::vector<std::string> Split(std::string_view text) {
  std::vector<std::string> tokens;
  std::istringstream in{std::string(text)};
  std::string token;
  while (in >> token) tokens.push_back(token);
  return tokens;
}

std::string_view CategoryOf(ErrorCue cue) {
  switch (cue) {
    case ErrorCue::kDiagnostic:
    case ErrorCue::kFailure:
      return "build";
    case ErrorCue::kKilled:
      return "memory";
    default:
      return "runtime";
  }
}

}  // namespace

std::string DraftPattern(std::span<const std::string> tokens, ErrorCue cue) {
  if (tokens.empty()) return "";
  const size_t anchor = Anchor(tokens, cue);
  const size_t end = std::min(tokens.size(), anchor + kMaxPatternTokens);
  std::string pattern;
  for (size_t i = anchor; i < end; ++i) {
    if (i > anchor) pattern += IsVar(tokens[i]) || IsVar(tokens[i - 1]) ? "\\s*" : "\\s+";
    pattern += Piece(tokens[i]);
  }
  // Trailing wildcards match nothing a rule needs.
  while (pattern.ends_with("\\s*.{0,256}?")) pattern.resize(pattern.size() - 12);
  return pattern;
}

RuleDraft DraftRule(const TemplateStats& t, std::string_view log) {
  const std::vector<std::string> tokens = Split(t.text);
  const size_t anchor = tokens.empty() ? 0 : Anchor(tokens, t.cue);
  RuleDraft draft;
  draft.id = DraftId(tokens, anchor, t);
  draft.pattern = DraftPattern(tokens, t.cue);
  const auto usable = [](const std::string& pattern) {
    const RE2 re(pattern, RulePatternOptions());
    return !pattern.empty() && Writable(pattern) && re.ok() && !RE2::PartialMatch("", re);
  };
  if (!usable(draft.pattern)) {
    // A template of variables only: the first line itself, escaped.
    draft.pattern = EscapeLiteral(std::string_view(t.first.text).substr(0, 200));
  }
  std::string title;
  for (size_t i = anchor; i < tokens.size(); ++i) {
    if (!title.empty()) title.push_back(' ');
    title.append(IsVar(tokens[i]) ? std::string_view("...") : std::string_view(tokens[i]));
  }
  title = SanitizeForDisplay(title);
  if (title.size() > 120) {
    title = SanitizeUtf8(std::string_view(title).substr(0, 117));
    title.append("...");
  }

  const RE2 re(draft.pattern, RulePatternOptions());
  std::vector<std::string> examples;
  std::vector<std::string> left_out;
  for (const std::string& e : t.examples) {
    (Writable(e) && re.ok() && RE2::PartialMatch(e, re) ? examples : left_out).push_back(e);
  }

  std::ostringstream y;
  y << "# Drafted by `faultline rules suggest` from " << SanitizeForDisplay(log) << ", template "
    << t.id << " (" << t.count << (t.count == 1 ? " line" : " lines") << ", " << CueName(t.cue)
    << "):\n#   " << SanitizeForDisplay(t.text) << "\n"
    << "# To finish it: write root_cause and fix (the rule loader, and so `faultline check`,\n"
    << "# rejects the FILL IN placeholders), check the id, title and pattern, add lines that must\n"
    << "# not match to examples.no_match, then move the file into your rule folder and run\n"
    << "# `faultline rules test DIR`.\n";
  if (!left_out.empty()) {
    y << "# " << left_out.size() << " example line(s) left out: not valid UTF-8 text, or not\n"
      << "# matched by the drafted pattern; review the pattern against the log.\n";
  }
  y << "id: " << draft.id << "\n"
    << "title: " << SingleQuoted(title.empty() ? draft.id : title) << "\n"
    << "severity: " << SeverityName(CueSeverity(t.cue)) << "\n"
    << "category: " << CategoryOf(t.cue) << "\n"
    << "tags: [drafted, " << CueName(t.cue) << "]\n"
    << "match:\n  - " << SingleQuoted(draft.pattern) << "\n"
    << "root_cause: " << SingleQuoted(std::string(kDraftPlaceholder) + " what fails, and why") << "\n"
    << "fix: " << SingleQuoted(std::string(kDraftPlaceholder) + " how to fix it") << "\n"
    << "examples:\n  match:\n";
  for (const std::string& e : examples) y << "    - " << SingleQuoted(e) << "\n";
  if (examples.empty()) y << "    []\n";
  y << "  no_match: []\n";
  draft.yaml = y.str();
  return draft;
}

}  // namespace faultline
