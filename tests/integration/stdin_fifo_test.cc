// `type: stdin` and `type: fifo` sources with the real binary: a pipe, a file and a closed
// descriptor on stdin, and a named pipe whose writer closes and reopens.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/agent_folder.h"
#include "tests/integration/process.h"

namespace faultline {
namespace {

using testing::Eventually;
using ::testing::HasSubstr;
using testing::HttpGet;

constexpr char kStdinRules[] = R"(id: t.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
---
id: t.aio
title: aio link
severity: error
category: build
match: ['LNK1181.*aio\.lib']
context:
  within_lines: 100
  requires_any: ['Unable to pre-compile async_io']
  unconfirmed_severity: warning
root_cause: r
fix: f
)";

constexpr char kStdinOom[] =
    "faultline_signature_matches_total{severity=\"error\",signature=\"t.cuda_oom\"}";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// faultline with stdin set up by the caller: `stdin_fd` (closed in the parent), or closed in the
// child when -1; stdout and stderr go to one file.
class AgentProcess {
 public:
  AgentProcess(const std::vector<std::string>& args, int stdin_fd, const std::string& log_path)
      : log_path_(log_path) {
    std::vector<std::string> storage{FAULTLINE_BINARY};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : storage) argv.push_back(s.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(log, 1);
      dup2(log, 2);
      close(log);
      if (stdin_fd >= 0) {
        dup2(stdin_fd, 0);
        close(stdin_fd);
      } else {
        close(0);
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (stdin_fd >= 0) close(stdin_fd);
  }
  ~AgentProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // The exit status once it exits by itself within `timeout`; -1 when it did not.
  int WaitForExit(std::chrono::milliseconds timeout) {
    int status = 0;
    const bool exited =
        Eventually([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
    if (!exited) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  int Stop(int signal) {
    kill(pid_, signal);
    return WaitForExit(std::chrono::seconds(20));
  }
  std::string Log() const { return ReadAll(log_path_); }

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

class StdinFifoTest : public testing::AgentFolderTest {
 protected:
  void SetUp() override {
    AgentFolderTest::SetUp();
    WriteFile("rules/t.yaml", kStdinRules);
  }

  std::string WriteConfig(const std::string& sources) {
    const std::string path = dir_ + "/faultline.yaml";
    std::ofstream(path) << "rules:\n  paths: [rules]\n  context_idle_flush_ms: 300\n"
                        << "http:\n  listen: 127.0.0.1:" << port_ << "\nlog:\n  level: debug\n"
                        << "sources:\n"
                        << sources;
    return path;
  }
  std::string Metrics() {
    std::string body;
    return HttpGet(port_, "/metrics", &body) == 200 ? body : "";
  }
};

// 20,000 lines through a pipe, 200 of them matching: counted exactly while the pipe is open; then
// a last line without a newline and the close: the agent settles it and exits 0 by itself.
TEST_F(StdinFifoTest, StdinPipeIsCountedExactlyAndTheAgentExitsZeroWhenItCloses) {
  int fds[2];
  ASSERT_EQ(0, pipe2(fds, O_CLOEXEC));  // the agent must not hold the write end itself
  AgentProcess agent({"run", "-c", WriteConfig("  - {id: piped, type: stdin}\n")}, fds[0],
                     dir_ + "/agent.log");
  std::string text;
  for (int i = 1; i <= 20000; ++i) {
    text += i % 100 == 0 ? "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB\n"
                         : "step " + std::to_string(i) + " loss 0.25\n";
  }
  text += "LINK : fatal error LNK1181: cannot open input file 'aio.lib'\n";  // waits for context
  for (size_t at = 0; at < text.size();) {  // in pieces, as a producer writes
    const ssize_t n = write(fds[1], text.data() + at, std::min<size_t>(text.size() - at, 4093));
    ASSERT_GT(n, 0);
    at += static_cast<size_t>(n);
  }
  const std::string lines = "faultline_lines_total{source=\"piped\"}";
  ASSERT_TRUE(Eventually([&] {
    const std::string m = Metrics();
    return testing::Sample(m, lines) == 20001 && testing::Sample(m, kStdinOom) == 200;
  })) << Metrics()
      << agent.Log();
  // The hit still waiting for context settles once the pipe is quiet (300 ms), as a warning.
  const std::string aio =
      "faultline_signature_matches_total{severity=\"warning\",signature=\"t.aio\"}";
  ASSERT_TRUE(Eventually([&] { return testing::Sample(Metrics(), aio) == 1; })) << Metrics();
  const std::string final_metrics = Metrics();
  EXPECT_EQ(20001, testing::Sample(final_metrics, lines));
  EXPECT_EQ(200, testing::Sample(final_metrics, kStdinOom));

  ASSERT_EQ(29, write(fds[1], "CUDA out of memory at the end", 29));  // no newline
  close(fds[1]);
  EXPECT_EQ(0, agent.WaitForExit(std::chrono::seconds(20))) << agent.Log();
  const std::string log = agent.Log();
  EXPECT_THAT(log, HasSubstr("reading standard input (a pipe or terminal)"));
  EXPECT_THAT(log, HasSubstr("t.cuda_oom [error] line 20002: CUDA out of memory at the end"));
  EXPECT_EQ(201u, Occurrences(log, "t.cuda_oom [error] line "));
  EXPECT_EQ(1u, Occurrences(log, "t.aio [warning] line 20001:"));
  EXPECT_THAT(log, HasSubstr("every source has ended, stopping"));
}

// `faultline run < build.log`: a regular file cannot be polled; it is read as a file, to its end.
TEST_F(StdinFifoTest, StdinRedirectedFromAFileIsReadToItsEndAndTheAgentExitsZero) {
  const std::string input = dir_ + "/build.log";
  {
    std::ofstream out(input, std::ios::binary);
    for (int i = 1; i <= 100000; ++i) {
      out << (i % 250 == 0 ? "torch.OutOfMemoryError: CUDA out of memory.\n" : "compiling\n");
    }
    out << "Unable to pre-compile async_io\nLINK : fatal error LNK1181: cannot open 'aio.lib'";
  }
  const int fd = open(input.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  AgentProcess agent({"run", "-c", WriteConfig("  - {id: file, type: stdin}\n")}, fd,
                     dir_ + "/agent.log");
  EXPECT_EQ(0, agent.WaitForExit(std::chrono::seconds(60))) << agent.Log();
  const std::string log = agent.Log();
  EXPECT_THAT(log, HasSubstr("reading standard input (a file, read to its end)"));
  EXPECT_EQ(400u, Occurrences(log, "t.cuda_oom [error] line "));
  // The partial last line is a line at the end, confirmed by the line before it.
  EXPECT_EQ(1u, Occurrences(log, "t.aio [error] line 100002:"));
}

TEST_F(StdinFifoTest, ClosedStdinIsAnEmptyStreamThatEndsAtOnce) {
  AgentProcess agent({"run", "-c", WriteConfig("  - {id: none, type: stdin}\n")}, -1,
                     dir_ + "/agent.log");
  EXPECT_EQ(0, agent.WaitForExit(std::chrono::seconds(20))) << agent.Log();
  EXPECT_THAT(agent.Log(), HasSubstr("standard input closed"));
}

TEST_F(StdinFifoTest, StdinSourceBesideAFileSourceKeepsTheAgentRunning) {
  std::filesystem::create_directories(dir_ + "/logs");
  const int null = open("/dev/null", O_RDONLY);
  AgentProcess agent({"run", "-c",
                      WriteConfig("  - {id: none, type: stdin}\n"
                                  "  - {id: logs, type: file, paths: ['logs/*.log']}\n")},
                     null, dir_ + "/agent.log");
  ASSERT_TRUE(Eventually([&] {
    return agent.Log().find("standard input closed") != std::string::npos;
  })) << agent.Log();
  ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); }));  // still serving
  EXPECT_EQ(0, agent.Stop(SIGTERM)) << agent.Log();
}

// A writer that closes the pipe and opens it again three times: every line of the four sessions
// is counted once, a last line without a newline included, and a writer never finds the pipe
// without its reader (O_NONBLOCK opens would fail with ENXIO).
TEST_F(StdinFifoTest, FifoSurvivesItsWriterClosingAndReopeningThreeTimes) {
  std::filesystem::create_directories(dir_ + "/run");
  const std::string fifo = dir_ + "/run/train.fifo";
  AgentProcess agent(
      {"run", "-c", WriteConfig("  - {id: pipe, type: fifo, path: run/train.fifo}\n")},
      open("/dev/null", O_RDONLY), dir_ + "/agent.log");
  struct stat st {};
  ASSERT_TRUE(Eventually([&] { return stat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode); }))
      << agent.Log();
  EXPECT_EQ(0600u, st.st_mode & 0777);
  ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); })) << agent.Log();

  uint64_t lines = 0;
  for (int session = 0; session < 4; ++session) {
    const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    ASSERT_GE(fd, 0) << "session " << session << ": " << std::strerror(errno);
    fcntl(fd, F_SETFL, 0);  // blocking writes: the pipe holds 64 KiB
    std::string text;
    for (int i = 1; i <= 2500; ++i, ++lines) {
      text += i % 100 == 0 ? "CUDA out of memory\n" : "session " + std::to_string(session) + "\n";
    }
    if (session == 3) {
      text += "CUDA out of memory, the writer's last words";  // no newline
      ++lines;
    }
    ASSERT_EQ(static_cast<ssize_t>(text.size()), write(fd, text.data(), text.size()));
    close(fd);
  }
  const std::string series = "faultline_lines_total{source=\"pipe\"}";
  ASSERT_TRUE(Eventually([&] {
    const std::string m = Metrics();
    return testing::Sample(m, series) == static_cast<double>(lines) &&
           testing::Sample(m, kStdinOom) == 101;
  })) << Metrics()
      << agent.Log();
  EXPECT_EQ(10001u, lines);
  const std::string after = Metrics();  // and nothing more
  EXPECT_EQ(10001, testing::Sample(after, series));
  EXPECT_EQ(101, testing::Sample(after, kStdinOom));
  EXPECT_EQ(0, agent.Stop(SIGTERM)) << agent.Log();
  EXPECT_THAT(agent.Log(), HasSubstr("created the named pipe " + fifo));
}

// A pipe has no positions: what the agent read is gone from it. Across restarts its counters
// continue from the state store, and the pipe resumes with the next writer: a writer that opens it
// while the agent is down waits (or, non-blocking, retries) and is read by the next agent. After
// SIGTERM (a checkpoint at stop) and after a kill -9 that came after a checkpoint, every line is
// counted once; lines read after the last checkpoint before a kill -9 would be lost, never
// counted twice.
TEST_F(StdinFifoTest, FifoAcrossRestartsResumesWithTheNextWriterAndCountsNoLineTwice) {
  std::filesystem::create_directories(dir_ + "/run");
  const std::string fifo = dir_ + "/run/train.fifo";
  const std::string config = WriteConfig(
      "  - {id: pipe, type: fifo, path: run/train.fifo}\nstate:\n  checkpoint_interval_ms: 100\n");
  const std::string series = "faultline_lines_total{source=\"pipe\"}";
  uint64_t lines = 0;
  uint64_t ooms = 0;
  // One writer session: waits for a reader (ENXIO while there is none) for up to 20 s.
  const auto session = [&](int count, bool* wrote) {
    std::string text;
    for (int i = 1; i <= count; ++i) {
      text += i % 100 == 0 ? "CUDA out of memory\n" : "step " + std::to_string(i) + "\n";
    }
    int fd = -1;
    Eventually([&] { return (fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK)) >= 0; });
    if (fd < 0) return;
    fcntl(fd, F_SETFL, 0);
    *wrote = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
  };
  const auto counted = [&] {
    const std::string m = Metrics();
    return testing::Sample(m, series) == static_cast<double>(lines) &&
           testing::Sample(m, kStdinOom) == static_cast<double>(ooms);
  };
  const auto checkpoints = [&] {
    return testing::Sample(Metrics(), "faultline_checkpoints_total");
  };

  {
    AgentProcess agent({"run", "-c", config}, open("/dev/null", O_RDONLY), dir_ + "/agent1.log");
    ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); })) << agent.Log();
    bool wrote = false;
    session(1000, &wrote);
    ASSERT_TRUE(wrote);
    lines += 1000;
    ooms += 10;
    ASSERT_TRUE(Eventually(counted)) << Metrics() << agent.Log();
    EXPECT_EQ(0, agent.Stop(SIGTERM)) << agent.Log();
  }
  // The next writer comes while the agent is down; the next agent reads it.
  bool wrote = false;
  std::thread writer([&] { session(500, &wrote); });
  {
    AgentProcess agent({"run", "-c", config}, open("/dev/null", O_RDONLY), dir_ + "/agent2.log");
    writer.join();
    ASSERT_TRUE(wrote) << agent.Log();
    lines += 500;
    ooms += 5;
    ASSERT_TRUE(Eventually(counted)) << Metrics() << agent.Log();
    // Killed once a checkpoint holds those counts: one is written within the interval when
    // anything changed since the last, none when the last already held them.
    const double seen = checkpoints();
    Eventually([&] { return checkpoints() > seen; }, std::chrono::milliseconds(1000));
    EXPECT_EQ(128 + SIGKILL, agent.Stop(SIGKILL));
  }
  {
    AgentProcess agent({"run", "-c", config}, open("/dev/null", O_RDONLY), dir_ + "/agent3.log");
    ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); })) << agent.Log();
    EXPECT_TRUE(counted()) << "the counters continue: " << Metrics();
    session(250, &wrote);
    ASSERT_TRUE(wrote);
    lines += 250;
    ooms += 2;
    ASSERT_TRUE(Eventually(counted)) << Metrics() << agent.Log();
    EXPECT_EQ(0, agent.Stop(SIGTERM)) << agent.Log();
  }
}

// stdin is a new stream at every start (another process's output), but its counters continue.
TEST_F(StdinFifoTest, StdinCountersContinueAcrossRuns) {
  const std::string config = WriteConfig("  - {id: piped, type: stdin}\n");
  const std::string series = "faultline_lines_total{source=\"piped\"}";
  for (int run = 1; run <= 2; ++run) {
    int fds[2];
    ASSERT_EQ(0, pipe2(fds, O_CLOEXEC));
    AgentProcess agent({"run", "-c", config}, fds[0], dir_ + "/agent.log");
    std::string text;
    for (int i = 1; i <= 300; ++i) text += i % 100 == 0 ? "CUDA out of memory\n" : "step\n";
    ASSERT_EQ(static_cast<ssize_t>(text.size()), write(fds[1], text.data(), text.size()));
    ASSERT_TRUE(Eventually([&] {
      const std::string m = Metrics();
      return testing::Sample(m, series) == 300.0 * run && testing::Sample(m, kStdinOom) == 3.0 * run;
    })) << "run "
        << run << ": " << Metrics() << agent.Log();
    close(fds[1]);
    EXPECT_EQ(0, agent.WaitForExit(std::chrono::seconds(20))) << agent.Log();
  }
}

TEST_F(StdinFifoTest, FifoPathThatIsARegularFileIsReportedAndTheAgentRuns) {
  std::ofstream(dir_ + "/not.fifo") << "a log\n";
  AgentProcess agent({"run", "-c", WriteConfig("  - {id: pipe, type: fifo, path: not.fifo}\n")},
                     open("/dev/null", O_RDONLY), dir_ + "/agent.log");
  ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); })) << agent.Log();
  EXPECT_THAT(agent.Log(), HasSubstr("source pipe: " + dir_ +
                                     "/not.fifo is not a named pipe; remove it, or let the agent "
                                     "create the pipe; not reading it"));
  EXPECT_EQ("a log\n", ReadAll(dir_ + "/not.fifo"));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

}  // namespace
}  // namespace faultline
