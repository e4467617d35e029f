// Error cues: the generic shapes by which discovery recognises an error line that no rule named.
// Each is documented here and in docs/unrecognised.md; none names a library.
//
//   python_exception  the exception line that ends a Python traceback: after
//                     `Traceback (most recent call last):`, the first line (with the same prefix,
//                     `[rank3]: ` say) that is not indented, when it reads `Name: message` or
//                     `Name` with a CapWords, optionally dotted, name (`torch.OutOfMemoryError`);
//                     and IPython's (Jupyter's) `Name    Traceback (most recent call last)`
//   exception         an exception line on its own: `RuntimeError: ...`, `[rank0]: x.FooError`
//                     (a name ending in Error or Exception, after `[...]`, `(...)` or `<...>`
//                     tags), Java's `Exception in thread "...`, Go's `panic: `, Rust's
//                     `panicked at`
//   diagnostic        compiler and tool diagnostics: `error: <text>`, `fatal error: <text>`,
//                     `error[E0425]:`, `Error: ` at the start of a line, MSVC `error C2065:` /
//                     `fatal error LNK1181:`, `nvcc fatal :`, `CMake Error`, make's `*** ... Error N`
//                     (`error: 0.25`, a metric, is not one)
//   error_level       log levels and verdicts: the words ERROR, FATAL, CRITICAL, FAIL, FAILED,
//                     FAILURE; glog/torch/TensorFlow `E0501 12:34:56`, `[E file.cpp:12]`,
//                     `F tensorflow/x.cc:34]`; `level=error`, `"level": "fatal"`
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
// A line that shows a cue but says of itself that it is below error level (INFO, WARN, WARNING,
// DEBUG, NOTICE words; glog/TensorFlow `I0501 ...`, `W tensorflow/x.cc:64]`; `level=warn`), and
// names no error level (ERROR, FATAL, CRITICAL), is not an error line for the failure,
// exit_status, diagnostic and error_level cues (`NCCL INFO ...: cannot open shared object file`
// is a plugin probe); exceptions, crashes and kills are errors whatever the line's level says.
//
// Every cue but python_exception is an RE2 pattern (CueOf). They are not what the matcher scans:
// its Vectorscan pass over every line takes the watch patterns (WatchPatterns), mostly literal
// words that each cue's pattern needs (`error`, `Exception`, `exit`, `Killed`, ...), which cost
// about nothing per line (the cue patterns themselves, anchored at line starts and built of
// character classes, cost Vectorscan 3 ms per MB). Only a line a watch pattern matched is then
// tried against the cue patterns, by RE2. python_exception is found by looking at the lines after
// a traceback's first line (discovery.h).
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

// The watch patterns for RuleSet::Compile: watch 0 is a Python traceback's first line; a line
// any other matched may show a cue (CueOf says which). Every line CueOf names a cue for matches
// one of them.
const std::vector<std::string>& WatchPatterns();
inline constexpr uint32_t kTracebackWatch = 0;
// The first cue (in the order of the list at the top, error_level last) whose pattern matches
// `line`; nothing when none does. Python exceptions after a traceback are not seen here.
std::optional<ErrorCue> CueOf(std::string_view line);

// Whether a line of `cue` is not an error by its own level (see the top).
bool BelowErrorLevel(ErrorCue cue, std::string_view line);

// Where `Traceback (most recent call last)` starts in `line`, if it holds it.
std::optional<size_t> TracebackAt(std::string_view line);
// Whether `text` (a line with its prefix taken off) reads as the exception line of a traceback.
bool IsExceptionLine(std::string_view text);

}  // namespace faultline

#endif  // FAULTLINE_DISCOVER_ERROR_CUES_H_
