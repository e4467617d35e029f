// `faultline watch -- CMD` with the real binary: output passed through byte for byte (pipes, and
// a pty when faultline's own output is a terminal), the command's exit status and signals, the
// diagnosis at the end, and a command that writes 100 MB as fast as it can.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/process.h"

namespace faultline {
namespace {

using testing::Eventually;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Watched {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class WatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    // One rule loads in milliseconds; the shipped pack (PrintsTheDiagnosisNamingThePackRule)
    // takes about a second in a debug build.
    std::filesystem::create_directories(dir_ + "/rules");
    std::ofstream(dir_ + "/rules/t.yaml") << "id: t.oom\ntitle: CUDA out of memory\n"
                                          << "severity: error\ncategory: memory\n"
                                          << "match: ['CUDA out of memory']\n"
                                          << "root_cause: r\nfix: f\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `faultline watch --rules <the test rule> ARGS` with stdout and stderr to files (not
  // terminals) and stdin from /dev/null; `while_running` is called with its pid until the process
  // exits. Killed after a minute: a deadlock fails the test instead of hanging it.
  Watched Watch(const std::vector<std::string>& args,
                const std::function<void(pid_t)>& while_running = {}) {
    std::vector<std::string> with_rules{"--rules", dir_ + "/rules"};
    with_rules.insert(with_rules.end(), args.begin(), args.end());
    return WatchWith(with_rules, while_running);
  }
  Watched WatchWith(const std::vector<std::string>& args,
                    const std::function<void(pid_t)>& while_running = {}) {
    const std::string out = dir_ + "/stdout";
    const std::string err = dir_ + "/stderr";
    std::vector<std::string> storage{FAULTLINE_BINARY, "watch"};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : storage) argv.push_back(s.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(open("/dev/null", O_RDONLY), 0);
      dup2(open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
      dup2(open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
      execv(argv[0], argv.data());
      _exit(127);
    }
    int status = 0;
    const bool exited = Eventually(
        [&] {
          if (waitpid(pid, &status, WNOHANG) == pid) return true;
          if (while_running) while_running(pid);
          return false;
        },
        std::chrono::seconds(60));
    if (!exited) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "faultline watch did not finish within a minute";
    }
    Watched w;
    w.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    w.out = ReadTextFile(out);
    w.err = ReadTextFile(err);
    return w;
  }

  std::string dir_;
};

// Every byte value, progress redraws with bare '\r', ANSI colours, a NUL and invalid UTF-8.
std::string Garbage(char tag) {
  std::string bytes = std::string("\x1b[31m") + tag + " in red\x1b[0m\n";
  for (int i = 0; i <= 100; i += 10) bytes += "progress " + std::to_string(i) + "%\r";
  bytes += "\n";
  for (int round = 0; round < 64; ++round) {
    for (int b = 0; b < 256; ++b) bytes += static_cast<char>(b);
  }
  bytes += "\xff\xfe\xc3(\n";
  bytes += "no newline at the end";
  return bytes;
}

TEST_F(WatchTest, PassesStdoutAndStderrThroughByteForByte) {
  const std::string out_bytes = Garbage('O');
  const std::string err_bytes = Garbage('E');
  std::ofstream(dir_ + "/out.bin", std::ios::binary) << out_bytes;
  std::ofstream(dir_ + "/err.bin", std::ios::binary) << err_bytes;
  const Watched w = Watch(
      {"--", "sh", "-c", "cat \"$1\"; cat \"$2\" >&2", "sh", dir_ + "/out.bin", dir_ + "/err.bin"});
  EXPECT_EQ(0, w.exit_code) << w.err;
  EXPECT_TRUE(w.out == out_bytes) << "stdout differs: " << w.out.size() << " bytes, expected "
                                  << out_bytes.size();
  ASSERT_GE(w.err.size(), err_bytes.size());
  EXPECT_TRUE(w.err.substr(0, err_bytes.size()) == err_bytes) << "stderr differs";
  // The diagnosis follows on a line of its own, after the command's last (unterminated) line.
  EXPECT_THAT(w.err.substr(err_bytes.size()), StartsWith("\nfaultline: no known failure found"));
}

TEST_F(WatchTest, ExitsWithTheCommandsStatusOrSignal) {
  EXPECT_EQ(3, Watch({"--", "sh", "-c", "exit 3"}).exit_code);
  EXPECT_EQ(0, WatchWith({"true"}).exit_code);  // no `--`: the command is the first non-option
  EXPECT_EQ(128 + SIGTERM, Watch({"--", "sh", "-c", "kill -TERM $$"}).exit_code);
  EXPECT_EQ(128 + SIGKILL, Watch({"--", "sh", "-c", "kill -KILL $$"}).exit_code);
  const Watched missing = Watch({"--", "no-such-command-faultline"});
  EXPECT_EQ(127, missing.exit_code);
  EXPECT_THAT(missing.err, HasSubstr("faultline watch: cannot run 'no-such-command-faultline': "
                                     "No such file or directory"));
  const Watched usage = WatchWith({});
  EXPECT_EQ(2, usage.exit_code);
  EXPECT_THAT(usage.err, HasSubstr("name the command to run"));
  // The command's own --version, not faultline's.
  EXPECT_EQ("tool 1.0\n", Watch({"--", "sh", "-c", "echo tool 1.0", "--version"}).out);
}

// A rule of the shipped pack whose context sits on the other stream: pip prints that it is
// building on stdout, the linker fails on stderr.
TEST_F(WatchTest, PrintsTheDiagnosisNamingThePackRule) {
  const Watched w = WatchWith(
      {"--", "sh", "-c",
       "echo 'Building deepspeed wheel'; echo test.c;"
       "echo \"LINK : fatal error LNK1181: cannot open input file 'aio.lib'\" >&2; exit 1"});
  EXPECT_EQ(1, w.exit_code);
  EXPECT_EQ("Building deepspeed wheel\ntest.c\n", w.out);
  EXPECT_THAT(w.err, StartsWith("LINK : fatal error LNK1181: cannot open input file 'aio.lib'\n"
                                "faultline: "));
  EXPECT_THAT(w.err, HasSubstr("ERROR  DeepSpeed async_io/gds op builder cannot link"));
  EXPECT_THAT(w.err, HasSubstr("signature:  deepspeed.async_io.windows_link  (1 line)"));
  EXPECT_THAT(w.err, HasSubstr("first:      sh -c echo 'Building deepspeed wheel'"));
  EXPECT_THAT(w.err, HasSubstr("(3 lines)"));

  const Watched json = WatchWith(
      {"--json", "--", "sh", "-c",
       "echo 'Building deepspeed wheel'; echo \"LINK : fatal error LNK1181: cannot open input "
       "file 'aio.lib'\""});
  EXPECT_EQ(0, json.exit_code);
  EXPECT_THAT(json.err, HasSubstr("\"signature\": \"deepspeed.async_io.windows_link\""));
}

TEST_F(WatchTest, ForwardsSigtermAndSigintToTheCommand) {
  for (int signal_number : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(signal_number);
    bool sent = false;
    const Watched w =
        Watch({"--", "sh", "-c",
               "trap 'echo got signal; exit 7' INT TERM; echo ready; while :; do sleep 0.05; done"},
              [&](pid_t pid) {
                if (!sent && ReadTextFile(dir_ + "/stdout") == "ready\n") {
                  kill(pid, signal_number);
                  sent = true;
                }
              });
    EXPECT_TRUE(sent);
    EXPECT_EQ(7, w.exit_code) << w.err;
    EXPECT_EQ("ready\ngot signal\n", w.out);
  }
}

TEST_F(WatchTest, HundredMegabytesOnBothStreamsWithoutDeadlock) {
  std::string line(99, 'x');
  line += '\n';
  std::string hit = "CUDA out of memory";
  hit += std::string(99 - hit.size(), ' ') + "\n";
  {
    std::ofstream a(dir_ + "/a.log", std::ios::binary);
    std::ofstream b(dir_ + "/b.log", std::ios::binary);
    for (int i = 1; i <= 500000; ++i) a << (i % 100000 == 0 ? hit : line);  // 50 MB each
    for (int i = 1; i <= 500000; ++i) b << (i % 50000 == 0 ? hit : line);
  }
  const auto started = std::chrono::steady_clock::now();
  const Watched w = Watch({"--", "sh", "-c", "cat \"$1\" >&2 & cat \"$2\"; wait", "sh",
                           dir_ + "/a.log", dir_ + "/b.log"});
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
  EXPECT_EQ(0, w.exit_code);
  EXPECT_EQ(50000000u, w.out.size());
  EXPECT_TRUE(w.out == ReadTextFile(dir_ + "/b.log"));
  ASSERT_GE(w.err.size(), 50000000u);
  EXPECT_TRUE(w.err.substr(0, 50000000) == ReadTextFile(dir_ + "/a.log"));
  EXPECT_THAT(w.err.substr(50000000), HasSubstr("(1000000 lines)"));
  EXPECT_THAT(w.err.substr(50000000), HasSubstr("signature:  t.oom  (15 lines)"));
  std::cout << "watch passed through and matched 100 MB in " << seconds.count() << " s\n";
}

// With a config that sets http.listen, the command's findings are on /metrics while it runs.
TEST_F(WatchTest, WithAConfigThatListensServesMetricsWhileTheCommandRuns) {
  const uint16_t port = testing::FreePort();
  std::ofstream(dir_ + "/faultline.yaml")
      << "rules:\n  paths: [rules]\nhttp:\n  listen: 127.0.0.1:" << port << "\n";
  const std::string done = dir_ + "/done";
  bool seen = false;
  const Watched w = WatchWith(
      {"-c", dir_ + "/faultline.yaml", "--", "sh", "-c",
       "echo 'CUDA out of memory'; echo step; echo 'CUDA out of memory' >&2;"
       "while [ ! -e \"$1\" ]; do sleep 0.05; done",
       "sh", done},
      [&](pid_t) {
        std::string body;
        if (seen || testing::HttpGet(port, "/metrics", &body) != 200) return;
        if (body.find(
                "faultline_signature_matches_total{severity=\"error\",signature=\"t.oom\"} 2\n") ==
                std::string::npos ||
            body.find("faultline_lines_total{source=\"watch\"} 3\n") == std::string::npos) {
          return;
        }
        seen = true;
        std::ofstream(done) << "";
      });
  EXPECT_TRUE(seen) << w.err;
  EXPECT_EQ(0, w.exit_code);
  EXPECT_THAT(w.err, HasSubstr("signature:  t.oom  (2 lines)"));
}

// A command that leaves a process behind holding its output open: watch still ends.
TEST_F(WatchTest, EndsWhenTheCommandExitsEvenIfItsOutputStaysOpen) {
  const Watched w = Watch({"--", "sh", "-c", "sleep 30 & echo started"});
  EXPECT_EQ(0, w.exit_code);
  EXPECT_EQ("started\n", w.out);
  EXPECT_THAT(w.err, HasSubstr("no known failure found"));
}

// faultline started on a terminal, as from a shell: a pty this test holds, which is the
// controlling terminal of faultline's session, with faultline its foreground job. Its stdin and
// stderr are the terminal; its stdout too, or a file when `stdout_file` is given.
class OnTerminal {
 public:
  OnTerminal(const std::vector<std::string>& args, const std::string& stdout_file = "") {
    master_ = posix_openpt(O_RDWR | O_NOCTTY);
    grantpt(master_);
    unlockpt(master_);
    const std::string slave_name = ptsname(master_);
    std::vector<std::string> storage{FAULTLINE_BINARY};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : storage) argv.push_back(s.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      // A login session starts with every signal at its default: a test run from a background
      // job of a non-interactive shell (as CI's is) inherits SIGINT and SIGQUIT ignored, and then
      // Ctrl-C would reach nobody.
      for (const int signal_number : {SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGHUP, SIGTERM}) {
        signal(signal_number, SIG_DFL);
      }
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      setsid();
      const int slave = open(slave_name.c_str(), O_RDWR);  // becomes the controlling terminal
      termios mode{};
      tcgetattr(slave, &mode);
      mode.c_oflag &= ~OPOST;  // bytes as written, so they can be compared
      mode.c_lflag &= ~ECHO;
      tcsetattr(slave, TCSANOW, &mode);
      winsize size{};
      size.ws_row = 33;
      size.ws_col = 111;
      ioctl(slave, TIOCSWINSZ, &size);
      dup2(slave, 0);
      dup2(stdout_file.empty() ? slave : open(stdout_file.c_str(), O_WRONLY | O_CREAT, 0644), 1);
      dup2(slave, 2);
      close(slave);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~OnTerminal() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(master_);
  }
  // What the terminal shows, once it shows `text`.
  bool Shows(const std::string& text) {
    return Eventually([&] {
      ReadSome();
      return seen_.find(text) != std::string::npos;
    });
  }
  void Type(const std::string& keys) {
    ASSERT_EQ(static_cast<ssize_t>(keys.size()), write(master_, keys.data(), keys.size()));
  }
  // faultline's exit status; -1 when it was killed by a signal itself or did not exit.
  int Exit() {
    int status = 0;
    const bool exited = Eventually([&] {
      ReadSome();
      return waitpid(pid_, &status, WNOHANG) == pid_;
    });
    if (!exited) return -1;
    pid_ = -1;
    while (ReadSome()) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  const std::string& seen() const { return seen_; }
  pid_t pid() const { return pid_; }

 private:
  bool ReadSome() {
    char buffer[4096];
    pollfd ready{master_, POLLIN, 0};
    if (poll(&ready, 1, 50) <= 0) return false;
    const ssize_t n = read(master_, buffer, sizeof buffer);
    if (n <= 0) return false;
    seen_.append(buffer, static_cast<size_t>(n));
    return true;
  }

  int master_ = -1;
  pid_t pid_ = -1;
  std::string seen_;
};

// On a terminal the command sees a terminal of the same size, its bytes arrive unchanged, it
// reads what is typed, and Ctrl-C reaches it, as the foreground job; faultline survives to report.
TEST_F(WatchTest, OnATerminalTheCommandRunsOnAPtyInTheForeground) {
  OnTerminal terminal({"watch", "--rules", dir_ + "/rules", "--", "sh", "-c",
                       "test -t 1 && echo stdout-is-a-tty; test -t 2 && echo stderr-is-a-tty >&2;"
                       "stty size <&1; printf '\\033[32mgreen\\033[0m 50%%\\r100%%\\n';"
                       "echo 'proceed?'; read answer; echo \"answer: $answer\";"
                       // Armed only once the trap is set: a Ctrl-C that reached sh just before it
                       // started a plain `sleep` would wait for the sleep to end (dash).
                       "trap 'echo interrupted; trap - INT; kill -INT $$' INT; echo armed;"
                       "while :; do sleep 0.05; done"});
  ASSERT_TRUE(terminal.Shows("proceed?\n")) << terminal.seen();
  EXPECT_THAT(terminal.seen(), HasSubstr("stdout-is-a-tty\n"));
  EXPECT_THAT(terminal.seen(), HasSubstr("stderr-is-a-tty\n"));
  EXPECT_THAT(terminal.seen(), HasSubstr("33 111\n"));
  EXPECT_THAT(terminal.seen(), HasSubstr("\x1b[32mgreen\x1b[0m 50%\r100%\n"));
  terminal.Type("yes\n");
  ASSERT_TRUE(terminal.Shows("answer: yes\narmed\n")) << terminal.seen();
  terminal.Type("\x03");  // Ctrl-C
  EXPECT_EQ(128 + SIGINT, terminal.Exit()) << terminal.seen();
  EXPECT_THAT(terminal.seen(), HasSubstr("interrupted\n"));
  EXPECT_THAT(terminal.seen(), HasSubstr("faultline: no known failure found"));
}

// Ctrl-Z stops the command, and faultline stops too so that the shell gets the terminal back;
// continued in the foreground (`fg`: SIGCONT, faultline's group holding the terminal), faultline
// gives the terminal back to the command and continues it.
TEST_F(WatchTest, OnATerminalCtrlZStopsBothAndFgContinuesBoth) {
  // Only builtins after `ready`: a Ctrl-Z that reaches dash while it vforks a command stops the
  // child before exec and leaves dash waiting in vfork, never stopped (so does any shell above it).
  OnTerminal terminal({"watch", "--rules", dir_ + "/rules", "--", "sh", "-c",
                       "echo ready; read answer; echo \"answer: $answer\""});
  ASSERT_TRUE(terminal.Shows("ready\n")) << terminal.seen();
  terminal.Type("\x1a");  // Ctrl-Z
  int status = 0;
  ASSERT_TRUE(
      Eventually([&] { return waitpid(terminal.pid(), &status, WNOHANG | WUNTRACED) > 0; }));
  ASSERT_TRUE(WIFSTOPPED(status));
  const std::string command = "/proc/" + ReadTextFile("/proc/" + std::to_string(terminal.pid()) +
                                                 "/task/" + std::to_string(terminal.pid()) +
                                                 "/children");
  EXPECT_THAT(ReadTextFile(command.substr(0, command.find(' ')) + "/stat"), HasSubstr(") T "));
  kill(terminal.pid(), SIGCONT);
  terminal.Type("yes\n");  // read by the command once it has the terminal again
  EXPECT_EQ(0, terminal.Exit()) << terminal.seen();
  EXPECT_THAT(terminal.seen(), HasSubstr("answer: yes\n"));
}

// In the foreground with stdout to a file (`> log`, `| tee`): the command shares faultline's
// process group, so it still reads the terminal (no SIGTTIN), and Ctrl-C reaches it from the
// terminal. The command here survives SIGINT; faultline, which got it too, waits for it to end.
TEST_F(WatchTest, OnATerminalWithOutputElsewhereTheCommandSharesTheTerminal) {
  const std::string out = dir_ + "/out.log";
  OnTerminal terminal({"watch", "--rules", dir_ + "/rules", "--", "sh", "-c",
                       "test -t 1 || echo stdout-is-not-a-tty; echo 'proceed?' >&2; read answer;"
                       "echo \"answer: $answer\" >&2; trap 'echo interrupted >&2' INT;"
                       "echo armed >&2; i=0; while [ $i -lt 20 ]; do sleep 0.05; i=$((i+1)); done;"
                       "exit 3"},
                      out);
  ASSERT_TRUE(terminal.Shows("proceed?\n")) << terminal.seen();
  terminal.Type("yes\n");
  ASSERT_TRUE(terminal.Shows("answer: yes\narmed\n")) << terminal.seen();
  terminal.Type("\x03");
  EXPECT_EQ(3, terminal.Exit()) << terminal.seen();
  EXPECT_THAT(terminal.seen(), HasSubstr("interrupted\n"));
  EXPECT_EQ("stdout-is-not-a-tty\n", ReadTextFile(out));
}

}  // namespace
}  // namespace faultline
