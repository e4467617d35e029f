// Test helpers that drive the real faultline binary as a user would: run a command to completion
// (with optional stdin) or start a daemon in the background, and fetch HTTP from it.
#ifndef FAULTLINE_TESTS_INTEGRATION_PROCESS_H_
#define FAULTLINE_TESTS_INTEGRATION_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/wait.h"  // Eventually

namespace faultline::testing {

struct Completed {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs FAULTLINE_BINARY with `args`, feeding `stdin_text` on its standard input.
Completed RunFaultline(const std::vector<std::string>& args, const std::string& stdin_text = "");

// A background faultline process; killed (SIGKILL) on destruction if still running.
class Daemon {
 public:
  // `max_open_files` > 0 sets the child's RLIMIT_NOFILE (soft and hard) before exec. `wrapper`,
  // when not empty, is a command (absolute path first) that runs FAULTLINE_BINARY and `args`
  // as its last arguments, e.g. {"/usr/bin/unshare", "-m", ...}. `in_child`, when given, runs in
  // the child just before exec (a failure there is the child's to report and exit with).
  explicit Daemon(const std::vector<std::string>& args, int max_open_files = 0,
                  const std::vector<std::string>& wrapper = {},
                  const std::function<void()>& in_child = nullptr);
  ~Daemon();
  // Sends `signal` and waits for exit; returns the exit status (or 128+signal).
  int Stop(int signal);
  std::string Stderr() const;
  bool running();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::string stderr_path_;
};

// A program other than faultline (Alertmanager, Prometheus), in the background with its output
// in `log`; SIGKILLed on destruction.
class Program {
 public:
  Program(const std::vector<std::string>& args, const std::string& log);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

 private:
  pid_t pid_ = -1;
};

// GET http://127.0.0.1:port/path; returns the status (0 when the connection failed) and body.
int HttpGet(uint16_t port, const std::string& path, std::string* body);

// POST http://127.0.0.1:port/path with no body and, when given, "Authorization: Bearer TOKEN".
int HttpPost(uint16_t port, const std::string& path, const std::string& bearer_token,
             std::string* body);

// The value of the sample `series` (name and labels exactly as serialised) in a /metrics body,
// or `absent` when it is not there.
double Sample(const std::string& metrics, const std::string& series, double absent = -1);

// A TCP port on 127.0.0.1 that was free a moment ago and that no other caller gets while this
// process lives, in this process or any other: ctest runs each test in a process of its own, in
// parallel, and the agent is told its port in its config before it binds it, so the port has to
// be reserved across processes. Each port given is an flock(2) on kPortLockDir/<port>.lock that
// this process holds until it exits (the kernel releases it, kill -9 included); a port another
// process holds is skipped, as is one something else has bound. Throws when none is found.
inline constexpr char kPortLockDir[] = "/tmp/faultline-test-ports";
uint16_t FreePort();

// A fresh temporary folder for one test, removed by the caller's fixture.
std::string TempDir(const std::string& name);

// In an ASan build, turns off the allocator's quarantine for the agents this process starts from
// now on (ASAN_OPTIONS is inherited): the quarantine keeps freed blocks resident on purpose, so an
// agent's RSS would grow with every free and a bound on its memory would measure ASan, not the
// agent. Does nothing in other builds.
void WithoutAsanQuarantine();

// What a bound on an agent's memory can mean in this build. A sanitizer runtime adds memory of its
// own: ASan about 50 MiB of runtime before any line, shadow of 1/8 of what the program touches,
// and the quarantine above; so under ASan (with WithoutAsanQuarantine) a peak bound applies to the
// growth over the memory held before the work (kPeakOverBaseline). TSan keeps about 4 bytes of
// shadow per byte touched and megabytes per thread, which no bound on the program's own memory
// can allow for: there a test checks everything else and prints the figures, but asserts no
// memory bound (kMemoryIsMeasurable).
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kMemoryIsMeasurable = false;
#else
inline constexpr bool kMemoryIsMeasurable = true;
#endif
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kPeakOverBaseline = true;
#else
inline constexpr bool kPeakOverBaseline = false;
#endif

}  // namespace faultline::testing

#endif  // FAULTLINE_TESTS_INTEGRATION_PROCESS_H_
