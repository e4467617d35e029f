#include "agent/source/child_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace faultline {
namespace {

// Opens a pty whose slave side passes the child's bytes through unchanged.
Result<void> OpenPty(int window_size_from, int* master, int* slave) {
  const int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0) {
    Error error = Failure(std::string("cannot open a pseudo-terminal: ") + std::strerror(errno));
    if (m >= 0) close(m);
    return error;
  }
  char name[128];
  if (ptsname_r(m, name, sizeof name) != 0) {
    Error error = Failure(std::string("cannot name the pseudo-terminal: ") + std::strerror(errno));
    close(m);
    return error;
  }
  const int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (s < 0) {
    Error error = Failure(std::string("cannot open ") + name + ": " + std::strerror(errno));
    close(m);
    return error;
  }
  termios mode{};
  if (tcgetattr(s, &mode) == 0) {
    mode.c_oflag &= ~OPOST;  // the real terminal translates "\n" itself
    tcsetattr(s, TCSANOW, &mode);
  }
  winsize size{};
  if (window_size_from >= 0 && ioctl(window_size_from, TIOCGWINSZ, &size) == 0) {
    ioctl(s, TIOCSWINSZ, &size);
  }
  *master = m;
  *slave = s;
  return {};
}

Result<void> OpenPipe(int* read_end, int* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return Failure(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  *read_end = fds[0];
  *write_end = fds[1];
  return {};
}

void CloseIfOpen(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Whether this process is the foreground job of the terminal on its stdin.
bool InForeground() { return isatty(STDIN_FILENO) == 1 && tcgetpgrp(STDIN_FILENO) == getpgrp(); }

// tcsetpgrp from a background process group raises SIGTTOU unless it is blocked.
void SetTerminalGroup(pid_t group) {
  sigset_t ttou, previous;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &previous);
  tcsetpgrp(STDIN_FILENO, group);
  sigprocmask(SIG_SETMASK, &previous, nullptr);
}

}  // namespace

std::set<int> OpenDescriptors() {
  std::set<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  const int own = dirfd(dir);
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && fd != own) fds.insert(static_cast<int>(fd));
  }
  closedir(dir);
  return fds;
}

ChildProcess::~ChildProcess() = default;

Result<void> ChildProcess::Spawn(const ChildSpec& spec) {
  spawn_exit_status_ = 1;
  if (spec.argv.empty()) return Failure("no command to run");
  int out_read = -1, out_write = -1, err_read = -1, err_write = -1, status_read = -1,
      status_write = -1;
  auto close_all = [&] {
    for (int* fd : {&out_read, &out_write, &err_read, &err_write, &status_read, &status_write}) {
      CloseIfOpen(*fd);
    }
  };
  Result<void> opened = spec.stdout_pty ? OpenPty(spec.window_size_from, &out_read, &out_write)
                                        : OpenPipe(&out_read, &out_write);
  if (opened.ok() && !spec.shared_pty) {
    opened = spec.stderr_pty ? OpenPty(spec.window_size_from, &err_read, &err_write)
                             : OpenPipe(&err_read, &err_write);
  }
  if (opened.ok()) opened = OpenPipe(&status_read, &status_write);
  if (!opened.ok()) {
    close_all();
    return opened;
  }

  // Everything this process opened itself stays out of the command.
  for (int fd : OpenDescriptors()) {
    if (fd > STDERR_FILENO && !spec.inherited_fds.contains(fd)) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  std::vector<std::string> args = spec.argv;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const bool in_foreground = spec.foreground && InForeground();
  foreground_ = in_foreground && isatty(STDOUT_FILENO) == 1;
  shares_group_ = in_foreground && !foreground_;

  // Signals stay blocked across fork: a signal that reached the child before exec would run the
  // watcher's handler there, which writes to the watcher's own signal pipe.
  sigset_t all, previous;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = fork();
  if (pid == 0) {
    // The child: only async-signal-safe calls from here to exec.
    if (!shares_group_) setpgid(0, 0);
    if (foreground_) tcsetpgrp(STDIN_FILENO, getpid());  // SIGTTOU is blocked
    dup2(out_write, STDOUT_FILENO);
    dup2(spec.shared_pty ? out_write : err_write, STDERR_FILENO);
    for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
      struct sigaction current {};
      if (sigaction(signal_number, nullptr, &current) == 0 && current.sa_handler != SIG_DFL &&
          current.sa_handler != SIG_IGN) {
        signal(signal_number, SIG_DFL);  // the watcher's handlers, which exec would reset too
      }
    }
    sigaction(SIGPIPE, &spec.original_sigpipe, nullptr);
    sigaction(SIGTTOU, &spec.original_sigttou, nullptr);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    execvp(argv[0], argv.data());
    const int exec_errno = errno;
    [[maybe_unused]] const ssize_t written = write(status_write, &exec_errno, sizeof exec_errno);
    _exit(127);
  }
  const int fork_errno = errno;
  if (pid > 0 && !shares_group_) {
    setpgid(pid, pid);  // also here, so that the group exists before either side relies on it
    if (foreground_) tcsetpgrp(STDIN_FILENO, pid);
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  CloseIfOpen(out_write);
  CloseIfOpen(err_write);
  CloseIfOpen(status_write);
  if (pid < 0) {
    close_all();
    return Failure(std::string("cannot start the command: ") + std::strerror(fork_errno));
  }
  pid_ = pid;

  // The status pipe closes at exec (it is close-on-exec); the errno arrives when exec failed.
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(status_read, &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  CloseIfOpen(status_read);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    TakeTerminal();
    spawn_exit_status_ = exec_errno == ENOENT ? 127 : 126;
    close_all();
    return Failure("cannot run '" + spec.argv[0] + "': " + std::strerror(exec_errno));
  }
  spawn_exit_status_ = 0;
  stdout_fd_ = out_read;
  stderr_fd_ = err_read;
  return {};
}

bool ChildProcess::Signal(int signal) {
  if (pid_ <= 0 || reaped_) return false;
  // The command may have left the group it was started in (setsid): then only its own pid.
  if (shares_group_ || kill(-pid_, signal) != 0) kill(pid_, signal);
  return true;
}

bool ChildProcess::Reap(int* exit_status, bool* stopped) {
  *stopped = false;
  if (pid_ <= 0 || reaped_) return false;
  int status = 0;
  pid_t got;
  do {
    got = waitpid(pid_, &status, WNOHANG | WUNTRACED);
  } while (got < 0 && errno == EINTR);
  if (got != pid_) return false;
  if (WIFSTOPPED(status)) {
    *stopped = true;
    return false;
  }
  reaped_ = true;
  *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  TakeTerminal();
  return true;
}

void ChildProcess::TakeTerminal() {
  if (foreground_) SetTerminalGroup(getpgrp());
}

void ChildProcess::GiveTerminal() {
  // Continued with `bg`, the watcher is not the foreground job: the command runs in the
  // background then, as a job continued with `bg` does.
  if (foreground_ && !reaped_ && InForeground()) SetTerminalGroup(pid_);
}

}  // namespace faultline
