#include "agent/discover/error_cues.h"

#include <re2/re2.h>

#include <array>
#include <memory>

#include "agent/rules/pattern_syntax.h"

namespace faultline {
namespace {

// Without the colon: IPython writes none.
constexpr std::string_view kTraceback = "Traceback (most recent call last)";

struct CuePattern {
  ErrorCue cue;
  const char* pattern;
};

// RE2 syntax, matched against one line (^ and $ are its ends). Bounded repeats are avoided where
// an unbounded class does: Vectorscan took 0.9 s to compile the exception cue's `{0,80}` tags. The order is the order of the
// watch bits after the traceback's; a line showing several cues is filed under the first, so
// the most general, the log level, comes last.
constexpr std::array<CuePattern, 8> kCuePatterns = {{
    {ErrorCue::kException,
     R"re(^(?:[\[(<][^\]>)]*[\])>]:? ?|[`>] ?)*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:\(\w+\))?(?::(?:\s|$)|$)|^Exception in thread "|panicked at |^panic: )re"},
    {ErrorCue::kDiagnostic,
     R"re((?:^|[\s:\])>|])(?:fatal )?error(?:\[[\w-]+\])?:(?:\s+[^\s\d.+-]|\s*$)|^\s*(?:[\w.-]+: )?(?:fatal )?Error: |\b(?:fatal )?error [A-Z]{1,4}\d{3,5}\s*:|\bnvcc fatal\s*:|\bCMake Error\b|\bmake(?:\[\d+\])?: \*\*\* .*Error \d+)re"},
    {ErrorCue::kTerminate,
     R"re(terminate called (?:after throwing an instance of|without an active exception|recursively))re"},
    {ErrorCue::kSignal,
     R"re(Segmentation fault|\bBus error\b|\(core dumped\)|Floating point exception|Illegal instruction|^\s*Aborted\s*$|\bSIG(?:SEGV|ABRT|BUS|FPE|ILL)\b)re"},
    {ErrorCue::kExitStatus,
     R"re(\bexit (?:status|code)[ :=]*-?[1-9]\d*|\bexit ?code[ :=]+-?[1-9]\d*|\bexitcode[ :=]+-?[1-9]\d*|\breturn(?:ed)? (?:code|status)[ :=]+-?[1-9]\d*|\bexited with (?:code|status) -?[1-9]|returned non-zero exit status)re"},
    {ErrorCue::kKilled,
     R"re(^\s*Killed\s*$|: line \d+: +\d+ Killed\b|\bKilled process \d+|\bOut of memory: Kill)re"},
    {ErrorCue::kFailure,
     R"re(^FAILED: |\bundefined (?:symbol|reference to)\b|\bnot found \(required by\b|\bcannot open shared object file\b|\bAssertion\b.*\bfailed\b)re"},
    {ErrorCue::kErrorLevel,
     R"re(\b(?:ERROR|FATAL|CRITICAL|FAIL|FAILED|FAILURE)\b|(?:^|[\[\s:])[EF]\d{3,4} \d\d:\d\d:\d\d|(?:^|[\[\s])[EF] [\w./-]+:\d+\]|\blevel=(?:error|fatal|crit)\b|"level":\s*"(?:error|fatal)")re"},
}};

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsIdentifierStart(char c) {
  return (c >= 'a' && c <= 'z') || IsUpper(c) || c == '_';
}
bool IsIdentifier(char c) { return IsIdentifierStart(c) || (c >= '0' && c <= '9'); }

}  // namespace

std::string_view CueName(ErrorCue cue) {
  switch (cue) {
    case ErrorCue::kPythonException:
      return "python_exception";
    case ErrorCue::kException:
      return "exception";
    case ErrorCue::kDiagnostic:
      return "diagnostic";
    case ErrorCue::kErrorLevel:
      return "error_level";
    case ErrorCue::kTerminate:
      return "terminate";
    case ErrorCue::kSignal:
      return "signal";
    case ErrorCue::kExitStatus:
      return "exit_status";
    case ErrorCue::kKilled:
      return "killed";
    case ErrorCue::kFailure:
      return "failure";
  }
  return "unknown";
}

Severity CueSeverity(ErrorCue cue) {
  switch (cue) {
    case ErrorCue::kSignal:
    case ErrorCue::kTerminate:
    case ErrorCue::kKilled:
      return Severity::kCritical;
    default:
      return Severity::kError;
  }
}

const std::vector<std::string>& WatchPatterns() {
  static const std::vector<std::string> patterns = {
      R"(Traceback \(most recent call last\))",
      // A word every cue pattern holds.
      R"re(Error|Exception|panic|error|ERROR|FATAL|CRITICAL|FAIL|fatal|terminate called|Segmentation fault|Bus error|core dumped|Floating point exception|Illegal instruction|Aborted|SIG(?:SEGV|ABRT|BUS|FPE|ILL)|exit|return(?:ed)? (?:code|status)|Killed|Out of memory|undefined (?:symbol|reference)|not found \(required by|cannot open shared object|Assertion|level=|"level"|\*\*\*)re",
      // The glog and TensorFlow level prefixes, which hold no word.
      R"re((?:^|[\[\s:])[EF]\d{3,4} \d\d:)re",
      R"re((?:^|[\[\s])[EF] [\w./-]+:\d+\])re",
  };
  return patterns;
}

std::optional<ErrorCue> CueOf(std::string_view line) {
  static const std::vector<std::unique_ptr<RE2>> regexes = [] {
    std::vector<std::unique_ptr<RE2>> out;
    for (const CuePattern& c : kCuePatterns) {
      out.push_back(std::make_unique<RE2>(c.pattern, RulePatternOptions()));
    }
    return out;
  }();
  for (size_t i = 0; i < kCuePatterns.size(); ++i) {
    if (RE2::PartialMatch(line, *regexes[i])) return kCuePatterns[i].cue;
  }
  return std::nullopt;
}

bool BelowErrorLevel(ErrorCue cue, std::string_view line) {
  switch (cue) {
    case ErrorCue::kFailure:
    case ErrorCue::kExitStatus:
    case ErrorCue::kDiagnostic:
    case ErrorCue::kErrorLevel:
      break;
    default:
      return false;
  }
  // Compiled once; RE2 is safe to share between threads for matching.
  static const RE2 kLowLevel(
      R"re((?:^|[\s\[(|:])(?:INFO|WARN|WARNING|DEBUG|NOTICE)(?:[\s\]):|]|$)|(?:^|[\[\s:])[IWD]\d{3,4} \d\d:\d\d:\d\d|(?:^|[\[\s])[IW] [\w./-]+:\d+\]|\blevel=(?:info|warn|warning|debug)\b|"level":\s*"(?:info|warn|warning|debug)")re",
      RulePatternOptions());
  static const RE2 kErrorLevel(R"re(\b(?:ERROR|FATAL|CRITICAL)\b)re", RulePatternOptions());
  return RE2::PartialMatch(line, kLowLevel) && !RE2::PartialMatch(line, kErrorLevel);
}

std::optional<size_t> TracebackAt(std::string_view line) {
  const size_t at = line.find(kTraceback);
  if (at == std::string_view::npos) return std::nullopt;
  return at;
}

bool IsExceptionLine(std::string_view text) {
  // (identifier '.')* CapWordsIdentifier ['(' identifier ')'] (':' (' ' | end) | end)
  size_t i = 0;
  size_t last_start = 0;
  while (true) {
    if (i >= text.size() || !IsIdentifierStart(text[i])) return false;
    last_start = i;
    while (i < text.size() && IsIdentifier(text[i])) ++i;
    if (i + 1 < text.size() && text[i] == '.' && IsIdentifierStart(text[i + 1])) {
      ++i;
      continue;
    }
    break;
  }
  if (!IsUpper(text[last_start])) return false;
  if (i < text.size() && text[i] == '(') {
    const size_t close = text.find(')', i);
    if (close == std::string_view::npos) return false;
    for (size_t k = i + 1; k < close; ++k) {
      if (!IsIdentifier(text[k]) && text[k] != '.') return false;
    }
    i = close + 1;
  }
  if (i == text.size()) return true;
  return text[i] == ':' && (i + 1 == text.size() || text[i + 1] == ' ');
}

}  // namespace faultline
