// Error cues: the generic shapes by which discovery recognises an error line that no rule named.
// Each is documented here and in README.md ("Unrecognised errors"); none names a library.
//
//   python_exception  the exception line that ends a Python traceback: after
//                     `Traceback (most recent call last):`, the first line (with the same prefix,
//                     `[rank3]: ` say) that is not indented, when it reads `Name: message` or
//                     `Name` with a CapWords, optionally dotted, name (`torch.OutOfMemoryError`)
//   exception         an exception line on its own: `RuntimeError: ...`, `[rank0]: x.FooError`
//                     (a name ending in Error or Exception, after `[...]`, `(...)` or `<...>`
//                     tags), Java's `Exception in thread "...`, Go's `panic: `, Rust's
//                     `panicked at`
//   diagnostic        compiler and tool diagnostics: `error: <text>`, `fatal error: <text>`,
//                     `error[E0425]:`, `Error: ` at the start of a line, MSVC `error C2065:` /
//                     `fatal error LNK1181:`, `nvcc fatal :`, `CMake Error`, make's `*** ... Error N`
//                     (`error: 0.25`, a metric, is not one)
//   error_level       log levels: the words ERROR, FATAL, CRITICAL; glog/torch `E0501 12:34:56`,
//                     `[E file.cpp:12]`; `level=error`, `"level": "fatal"`
//   terminate         C++ `terminate called after throwing an instance of`, `... without an active
//                     exception`, `... recursively`
//   signal            `Segmentation fault`, `Bus error`, `(core dumped)`, `Floating point
//                     exception`, `Illegal instruction`, a bare `Aborted`, SIGSEGV, SIGABRT
//   exit_status       a non-zero `exit status N`, `exit code N`, `exitcode: N`, `return code = N`,
//                     `exited with code N`, `returned non-zero exit status`
//   killed            a bare `Killed` (the shell's report of SIGKILL), bash's `line N: PID Killed`,
//                     the kernel's `Killed process N`, `Out of memory: Kill`
//   failure           build, link and load failures: ninja's `FAILED: `, `undefined symbol`,
//                     `undefined reference to`, `not found (required by`, `cannot open shared
//                     object file`, `Assertion ... failed`
//
// Every cue but python_exception is an RE2 pattern that the matcher's Vectorscan pass scans with
// the rules (WatchPatterns), so lines that show no cue cost nothing; python_exception is found by
// looking at the lines after a traceback's first line (discovery.h).
#ifndef FAULTLINE_DISCOVER_ERROR_CUES_H_
#define FAULTLINE_DISCOVER_ERROR_CUES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/rules/rule.h"

namespace faultline {

enum class ErrorCue : uint8_t {
  kPythonException,
  kException,
  kDiagnostic,
  kErrorLevel,
  kTerminate,
  kSignal,
  kExitStatus,
  kKilled,
  kFailure,
};

std::string_view CueName(ErrorCue cue);
// How bad a line of this cue is: critical for a process that died (signal, terminate, killed),
// error for the rest. Every cue is error-level.
Severity CueSeverity(ErrorCue cue);

// The watch patterns for RuleSet::Compile: watch 0 opens a Python traceback, the others are
// cues (CueOfWatch).
const std::vector<std::string>& WatchPatterns();
inline constexpr uint32_t kTracebackWatch = 0;
// The cue of watch pattern `watch` (not kTracebackWatch).
ErrorCue CueOfWatch(uint32_t watch);

// Where `Traceback (most recent call last):` starts in `line`, if it holds it.
std::optional<size_t> TracebackAt(std::string_view line);
// Whether `text` (a line with its prefix taken off) reads as the exception line of a traceback.
bool IsExceptionLine(std::string_view text);

}  // namespace faultline

#endif  // FAULTLINE_DISCOVER_ERROR_CUES_H_
