#include "agent/discover/error_cues.h"

#include <re2/re2.h>

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/rules/pattern_syntax.h"

namespace faultline {
namespace {

// Whether a watch pattern other than the traceback's matches `line`, as the matcher would see.
bool Watched(std::string_view line) {
  const std::vector<std::string>& patterns = WatchPatterns();
  for (uint32_t w = kTracebackWatch + 1; w < patterns.size(); ++w) {
    const RE2 re(patterns[w], RulePatternOptions());
    EXPECT_TRUE(re.ok()) << patterns[w] << ": " << re.error();
    if (RE2::PartialMatch(line, re)) return true;
  }
  return false;
}

struct Case {
  const char* line;
  std::optional<ErrorCue> cue;
};

class Cues : public ::testing::TestWithParam<Case> {};

TEST_P(Cues, ShapeIsRecognised) {
  const Case& c = GetParam();
  const std::optional<ErrorCue> got = CueOf(c.line);
  EXPECT_EQ(c.cue.has_value(), got.has_value()) << c.line;
  // The cheap watch patterns the matcher scans find every line a cue names.
  if (got) {
    EXPECT_TRUE(Watched(c.line)) << c.line;
  }
  if (c.cue && got) {
    EXPECT_EQ(CueName(*c.cue), CueName(*got)) << c.line;
  }
}

INSTANTIATE_TEST_SUITE_P(
    ErrorCues, Cues,
    ::testing::Values(
        Case{"RuntimeError: CUDA error: an illegal memory access was encountered",
             ErrorCue::kException},
        Case{"[rank3]: torch.OutOfMemoryError: CUDA out of memory.", ErrorCue::kException},
        Case{"(Runner pid=1234) safetensors_rust.SafetensorError: Error while deserializing",
             ErrorCue::kException},
        Case{"ray.exceptions.RayTaskError(RuntimeError): boom", ErrorCue::kException},
        Case{"Exception in thread \"main\" java.lang.IllegalStateException: x",
             ErrorCue::kException},
        Case{"thread 'main' panicked at src/main.rs:2:5:", ErrorCue::kException},
        Case{"    raise RuntimeError(\"x\")", std::nullopt},
        Case{"    except RuntimeError:", std::nullopt},
        Case{"/src/a.cu:12:10: fatal error: cusparse.h: No such file or directory",
             ErrorCue::kDiagnostic},
        Case{"error: command '/usr/bin/gcc' failed with exit code 1", ErrorCue::kDiagnostic},
        Case{"  error: subprocess-exited-with-error", ErrorCue::kDiagnostic},
        Case{"LINK : fatal error LNK1181: cannot open input file 'aio.lib'",
             ErrorCue::kDiagnostic},
        Case{"error[E0425]: cannot find value `x` in this scope", ErrorCue::kDiagnostic},
        Case{"Error: Cannot find module 'express'", ErrorCue::kDiagnostic},
        Case{"nvcc fatal   : Unsupported gpu architecture 'compute_90a'", ErrorCue::kDiagnostic},
        Case{"make[2]: *** [Makefile:12: all] Error 2", ErrorCue::kDiagnostic},
        Case{"epoch 3 train error: 0.125 val error: 0.2", std::nullopt},
        Case{"ERROR: Could not find a version that satisfies the requirement x",
             ErrorCue::kErrorLevel},
        Case{"[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog",
             ErrorCue::kErrorLevel},
        Case{"E0501 12:34:56.789012 1234 main.cc:12] boom", ErrorCue::kErrorLevel},
        Case{"ts=1 level=error msg=\"disk full\"", ErrorCue::kErrorLevel},
        Case{"{\"level\": \"fatal\", \"msg\": \"x\"}", ErrorCue::kErrorLevel},
        Case{"ERRORS: 0", std::nullopt},
        Case{"> THCudaCheck FAIL file=/x/THCTensorMath.cu line=26 error=59 : device-side assert",
             ErrorCue::kErrorLevel},
        Case{"F tensorflow/stream_executor/lib/statusor.cc:34] Attempting to fetch value",
             ErrorCue::kErrorLevel},
        Case{"tests passed: 12, failures: 0", std::nullopt},
        Case{"terminate called after throwing an instance of 'c10::Error'",
             ErrorCue::kTerminate},
        Case{"/bin/bash: line 1: 4242 Segmentation fault      (core dumped) python train.py",
             ErrorCue::kSignal},
        Case{"Bus error (core dumped)", ErrorCue::kSignal},
        Case{"Fatal Python error: Segmentation fault", ErrorCue::kDiagnostic},
        Case{"Aborted", ErrorCue::kSignal},
        Case{"Signal 11 (SIGSEGV) received by PID 77", ErrorCue::kSignal},
        Case{"subprocess.CalledProcessError: Command 'x' returned non-zero exit status 1.",
             ErrorCue::kException},
        Case{"  │ exit code: 1", ErrorCue::kExitStatus},
        Case{"failed (exitcode: -9) local_rank: 5", ErrorCue::kExitStatus},
        Case{"Process exited with code 137", ErrorCue::kExitStatus},
        Case{"process finished with exit code 0", std::nullopt},
        Case{"exit status 0", std::nullopt},
        Case{"Killed", ErrorCue::kKilled},
        Case{"Memory cgroup out of memory: Killed process 4242 (python)", ErrorCue::kKilled},
        Case{"the job was not Killed by anyone", std::nullopt},
        Case{"FAILED: cpu_adam.o", ErrorCue::kFailure},
        Case{"x.so: undefined symbol: _ZN2at4_ops5zeros4call", ErrorCue::kFailure},
        Case{"libstdc++.so.6: version `GLIBCXX_3.4.29' not found (required by x.so)",
             ErrorCue::kFailure},
        Case{"Assertion `t >= 0 && t < n_classes` failed.", ErrorCue::kFailure},
        Case{"step 100 | loss 2.31 | lr 3e-4", std::nullopt},
        Case{"NCCL INFO Channel 00/32 : 0 1 2 3", std::nullopt},
        Case{"warning: unused variable 'x' [-Wunused-variable]", std::nullopt}));

TEST(ExceptionLine, NamesInCapWordsWithAnOptionalMessage) {
  EXPECT_TRUE(IsExceptionLine("RuntimeError: CUDA error: out of memory"));
  EXPECT_TRUE(IsExceptionLine("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "));
  EXPECT_TRUE(IsExceptionLine("KeyboardInterrupt"));
  EXPECT_TRUE(IsExceptionLine("jinja2.exceptions.TemplateNotFound: index.html"));
  EXPECT_TRUE(IsExceptionLine("ray.exceptions.RayTaskError(RuntimeError): x"));
  EXPECT_FALSE(IsExceptionLine("wandb: train/loss 2.5"));
  EXPECT_FALSE(IsExceptionLine("During handling of the above exception, another exception occurred:"));
  EXPECT_FALSE(IsExceptionLine("RuntimeError:x"));
  EXPECT_FALSE(IsExceptionLine(""));
}

TEST(Traceback, FoundAfterAPrefix) {
  EXPECT_EQ(9u, TracebackAt("[rank3]: Traceback (most recent call last):"));
  EXPECT_FALSE(TracebackAt("Traceback (most recent call first):").has_value());
}

TEST(BelowErrorLevel, ALineThatCallsItselfInfoOrWarningIsNoError) {
  EXPECT_TRUE(BelowErrorLevel(
      ErrorCue::kFailure,
      "node1:77:77 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot "
      "open shared object file: No such file or directory"));
  EXPECT_TRUE(BelowErrorLevel(ErrorCue::kFailure,
                              "2023-05-01 12:00:00.1: W tensorflow/x/dso_loader.cc:64] Could not "
                              "load dynamic library 'libnvinfer.so.7'; dlerror: cannot open shared "
                              "object file"));
  EXPECT_TRUE(BelowErrorLevel(ErrorCue::kExitStatus, "[WARNING] worker exited with code 1, retrying"));
  EXPECT_TRUE(BelowErrorLevel(ErrorCue::kDiagnostic, "W0501 12:00:00.1 x.cc:1] error: retrying"));
  // Naming an error level, or being an exception or a crash, it is an error whatever else it says.
  EXPECT_FALSE(BelowErrorLevel(ErrorCue::kErrorLevel, "[INFO] ERROR: disk full"));
  EXPECT_FALSE(BelowErrorLevel(ErrorCue::kException, "INFO RuntimeError: boom"));
  EXPECT_FALSE(BelowErrorLevel(ErrorCue::kSignal, "WARNING: Segmentation fault (core dumped)"));
  EXPECT_FALSE(BelowErrorLevel(ErrorCue::kFailure, "FAILED: cpu_adam.o"));
  // Words that merely contain a level word are no level.
  EXPECT_FALSE(BelowErrorLevel(ErrorCue::kFailure, "INFORMATION: undefined symbol: foo"));
}

TEST(CueSeverity, DeathsAreCritical) {
  EXPECT_EQ(Severity::kCritical, CueSeverity(ErrorCue::kSignal));
  EXPECT_EQ(Severity::kCritical, CueSeverity(ErrorCue::kKilled));
  EXPECT_EQ(Severity::kError, CueSeverity(ErrorCue::kDiagnostic));
}

}  // namespace
}  // namespace faultline
