#include "agent/discover/error_cues.h"

#include <array>

namespace faultline {
namespace {

constexpr std::string_view kTraceback = "Traceback (most recent call last):";

struct CuePattern {
  ErrorCue cue;
  const char* pattern;
};

// RE2 syntax, matched against one line (^ and $ are its ends). Bounded repeats are avoided where
// an unbounded class does: Vectorscan took 0.9 s to compile the exception cue's `{0,80}` tags. The order is the order of the
// watch bits after the traceback's; a line showing several cues is filed under the first.
constexpr std::array<CuePattern, 8> kCuePatterns = {{
    {ErrorCue::kException,
     R"re(^(?:[\[(<][^\]>)]*[\])>]:? ?|[`>] ?)*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:\(\w+\))?(?::(?:\s|$)|$)|^Exception in thread "|panicked at |^panic: )re"},
    {ErrorCue::kDiagnostic,
     R"re((?:^|[\s:\])>|])(?:fatal )?error(?:\[[\w-]+\])?:(?:\s+[^\s\d.+-]|\s*$)|^\s*(?:[\w.-]+: )?(?:fatal )?Error: |\b(?:fatal )?error [A-Z]{1,4}\d{3,5}\s*:|\bnvcc fatal\s*:|\bCMake Error\b|\bmake(?:\[\d+\])?: \*\*\* .*Error \d+)re"},
    {ErrorCue::kErrorLevel,
     R"re(\b(?:ERROR|FATAL|CRITICAL)\b|(?:^|[\[\s:])[EF]\d{3,4} \d\d:\d\d:\d\d|\[[EF] [\w.]+:\d+\]|\blevel=(?:error|fatal|crit)\b|"level":\s*"(?:error|fatal)")re"},
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
  static const std::vector<std::string> patterns = [] {
    std::vector<std::string> out = {R"(Traceback \(most recent call last\):)"};
    for (const CuePattern& c : kCuePatterns) out.emplace_back(c.pattern);
    return out;
  }();
  return patterns;
}

ErrorCue CueOfWatch(uint32_t watch) {
  if (watch == kTracebackWatch || watch > kCuePatterns.size()) return ErrorCue::kErrorLevel;
  return kCuePatterns[watch - 1].cue;
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
