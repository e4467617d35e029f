// ChildProcess: a command run by `faultline watch`, with its stdout and stderr captured so the
// watcher can pass them on and match them.
//
// Capture: each of the child's stdout and stderr is a pipe, or a pseudo-terminal when the
// watcher's own output is a terminal, so the command still sees a terminal and keeps its colours
// and progress bars. When both of the watcher's outputs are the same terminal, both of the
// child's share one pty, which keeps their interleaving exact. The pty passes bytes through
// unchanged (output processing off: no "\n" -> "\r\n", the real terminal does that) and has the
// real terminal's window size. The child's stdin, and every other descriptor the watcher itself
// inherited (`3>file`), are the watcher's own; descriptors the watcher opened (its HTTP socket,
// the state store) are closed in the child.
//
// Process group and signals: the child leads a process group of its own, so a signal sent to the
// watcher's group (a CI runner cancelling the job, Ctrl-C on a terminal where the watcher runs in
// the foreground) reaches the child only through the watcher, which forwards it once (Signal).
// When the watcher is the foreground job of the terminal on its stdin and its stdout is that
// terminal, the child's group is made the foreground instead, as a shell would: Ctrl-C, Ctrl-Z and
// typed input (a prompt, a password read from /dev/tty) go to the command directly.
// TakeTerminal/GiveTerminal move the terminal back and forth when the command is stopped and
// continued. When the watcher is in the foreground but its output goes elsewhere (`| less`,
// `| tee log`, `> log`), taking the terminal would stop `less` from reading it; then the child
// stays in the watcher's group (shares_group()): the terminal's Ctrl-C reaches it directly and
// must not be forwarded again. Signals the watcher's parent ignored (nohup's SIGHUP) stay
// ignored in the child. The pty keeps the window size the terminal had when the command started.
//
// Exec failure (no such command, not executable) is reported by Spawn with the shell's exit
// status for it (127, 126). Not thread-safe; Spawn forks, so call it before any thread starts.
#ifndef FAULTLINE_SOURCE_CHILD_PROCESS_H_
#define FAULTLINE_SOURCE_CHILD_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

#include "agent/core/result.h"

namespace faultline {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  bool stdout_pty = false;
  bool stderr_pty = false;
  bool shared_pty = false;    // both on one pty (requires stdout_pty and stderr_pty)
  int window_size_from = -1;  // a terminal whose window size the pty takes; -1: none
  // Let the child have the terminal on descriptor 0 (its own foreground group, or the watcher's
  // group) when the watcher is that terminal's foreground job; false: always a group of its own.
  bool foreground = false;
  // Descriptors the watcher inherited: passed on. Every other one is closed in the child.
  std::set<int> inherited_fds;
  // Dispositions of SIGPIPE and SIGTTOU before the watcher changed them, restored in the child.
  struct sigaction original_sigpipe {};
  struct sigaction original_sigttou {};
};

// The open descriptors of this process (from /proc/self/fd).
std::set<int> OpenDescriptors();

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts the command, or says why it could not (then spawn_exit_status() is set).
  Result<void> Spawn(const ChildSpec& spec);
  // After a failed Spawn, the exit status a shell would give: 127 command not found, 126 found but
  // not runnable, 1 for anything else; 0 after one that started.
  int spawn_exit_status() const { return spawn_exit_status_; }

  // Read ends of the captured output, owned by the caller from Spawn on: stdout, and stderr or -1
  // when it shares stdout's pty.
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }
  pid_t pid() const { return pid_; }
  // Whether the child's process group holds the terminal while it runs.
  bool foreground() const { return foreground_; }
  // Whether the child is in the watcher's own process group (it then gets the terminal's signals
  // itself).
  bool shares_group() const { return shares_group_; }

  // Sends `signal` to the child's process group (to the child alone when it shares the watcher's
  // group); false once it has been reaped.
  bool Signal(int signal);
  // waitpid without blocking. Returns true when the child has exited or was killed; its exit
  // status as a shell shows it (the code, or 128 + the signal) goes to `exit_status`. Sets
  // `stopped` when it was stopped (Ctrl-Z, SIGSTOP) instead.
  bool Reap(int* exit_status, bool* stopped);

  // The terminal goes to the watcher's process group (the child stopped, or exited) or back to
  // the child's (it continues; only when the watcher was continued in the foreground, with `fg`).
  // No-ops unless the child runs in the foreground.
  void TakeTerminal();
  void GiveTerminal();

 private:
  pid_t pid_ = -1;
  bool foreground_ = false;
  bool shares_group_ = false;
  bool reaped_ = false;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  int spawn_exit_status_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_CHILD_PROCESS_H_
