// `faultline run` restarted while its logs are written and rotated: counters continue from the
// state store and every line is counted exactly once, through kill -9 at random moments, SIGTERM,
// Debian's real logrotate (copytruncate and create), and files rotated twice, truncated or
// replaced while the agent was down. Every count is read from /metrics of the real binary.
// Over 600 lines: the restart scenarios share one fixture and its exactly-once check.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/agent_folder.h"
#include "tests/integration/process.h"
#include "tests/support/prerequisite.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::HttpGet;

// A plain rule, a rule whose severity waits for the lines after its hit (pending context), a
// two-line sequence (its finding carries its first line) and a rule with a label.
constexpr char kRules[] = R"(id: t.oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
---
id: t.nccl
title: NCCL watchdog timeout
severity: error
category: distributed
match: ['NCCL watchdog timeout']
context:
  within_lines: 6
  downgrade_if_followed_by: ['recovered after']
  downgrade_to: warning
root_cause: r
fix: f
---
id: t.segv
title: segfault
severity: critical
category: runtime
match:
  - sequence: ['segfault begin', 'segfault end']
    within_lines: 3
root_cause: r
fix: f
---
id: t.rank
title: rank failed
severity: error
category: distributed
match: ['rank \d+ failed']
labels: { rank: 'rank (?P<rank>\d+) failed' }
root_cause: r
fix: f
)";

const std::string kRestartLines = "faultline_lines_total{source=\"logs\"}";
const std::string kRestartOom =
    "faultline_signature_matches_total{severity=\"error\",signature=\"t.oom\"}";
const std::string kNcclError =
    "faultline_signature_matches_total{severity=\"error\",signature=\"t.nccl\"}";
const std::string kNcclWarning =
    "faultline_signature_matches_total{severity=\"warning\",signature=\"t.nccl\"}";
const std::string kSegv =
    "faultline_signature_matches_total{severity=\"critical\",signature=\"t.segv\"}";
const std::string kRank =
    "faultline_signature_matches_total{rank=\"3\",severity=\"error\",signature=\"t.rank\"}";

// A series not there yet has counted nothing.
double Counted(const std::string& metrics, const std::string& series) {
  return testing::Sample(metrics, series, 0);
}

// What was written, by kind: the counts the agent must end with.
struct Truth {
  uint64_t lines = 0, oom = 0, nccl_error = 0, nccl_warning = 0, segv = 0, rank = 0;
  bool operator==(const Truth&) const = default;
  Truth& operator+=(const Truth& o) {
    lines += o.lines;
    oom += o.oom;
    nccl_error += o.nccl_error;
    nccl_warning += o.nccl_warning;
    segv += o.segv;
    rank += o.rank;
    return *this;
  }
};

std::string Describe(const Truth& t) {
  return "lines " + std::to_string(t.lines) + ", oom " + std::to_string(t.oom) + ", nccl " +
         std::to_string(t.nccl_error) + "/" + std::to_string(t.nccl_warning) + ", segv " +
         std::to_string(t.segv) + ", rank " + std::to_string(t.rank);
}

Truth Read(const std::string& metrics) {
  return Truth{static_cast<uint64_t>(Counted(metrics, kRestartLines)),
               static_cast<uint64_t>(Counted(metrics, kRestartOom)),
               static_cast<uint64_t>(Counted(metrics, kNcclError)),
               static_cast<uint64_t>(Counted(metrics, kNcclWarning)),
               static_cast<uint64_t>(Counted(metrics, kSegv)),
               static_cast<uint64_t>(Counted(metrics, kRank))};
}

// Group `n` of the log: a few lines written with one write(), so that logrotate never splits
// a hit from the lines its context waits for. About a fifth of the groups raise a rule.
std::string Group(uint64_t n, Truth& truth) {
  const std::string seq = " seq=" + std::to_string(n) + "\n";
  std::string text;
  int lines = 0;
  switch (n % 25) {
    case 3:
      text = "CUDA out of memory. Tried to allocate 2.00 GiB" + seq;
      lines = 1;
      ++truth.oom;
      break;
    case 7:  // a hit whose severity is decided by the lines after it
      text = "NCCL watchdog timeout" + seq + "step a" + seq + "step b" + seq;
      lines = 3;
      if (n % 2 == 0) {
        text += "recovered after retry" + seq;
        ++lines;
        ++truth.nccl_warning;
      } else {
        ++truth.nccl_error;
      }
      break;
    case 12:
      text = "segfault begin" + seq + "in frame 0" + seq + "segfault end" + seq;
      lines = 3;
      ++truth.segv;
      break;
    case 18:
      text = "rank 3 failed" + seq;
      lines = 1;
      ++truth.rank;
      break;
    default:
      text = "train step " + std::to_string(n) + " loss 0.125 lr 3e-4" + seq;
      lines = 1;
  }
  truth.lines += lines;
  return text;
}

class RestartTest : public testing::AgentFolderTest {
 protected:
  void SetUp() override {
    AgentFolderTest::SetUp();
    WriteFile("rules/t.yaml", kRules);
  }

  std::string WriteConfig(const std::string& extra_state = "", const std::string& start_at = "end",
                          const std::string& extra_source = "") {
    const std::string path = dir_ + "/faultline.yaml";
    std::ofstream(path) << "rules:\n  paths: [rules]\n  context_idle_flush_ms: 1500\n"
                        << "http:\n  listen: 127.0.0.1:" << port_ << "\n"
                        << "state:\n  checkpoint_interval_ms: 100\n"
                        << extra_state << "sources:\n  - id: logs\n    type: file\n"
                        << "    paths: [logs/app.log]\n    start_at: " << start_at << "\n"
                        << "    poll_interval_ms: 50\n    rotate_wait_ms: 500\n"
                        << extra_source;
    return path;
  }
  std::string Metrics() {
    std::string body;
    return HttpGet(port_, "/metrics", &body) == 200 ? body : "";
  }
  // Waits until the agent's counts equal `truth` and stay there a moment (nothing counted late).
  bool Reaches(const Truth& truth, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    if (!Eventually([&] { return Read(Metrics()) == truth; }, timeout)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    return Read(Metrics()) == truth;
  }
  void Append(const std::string& text) {
    const int fd = open((dir_ + "/logs/app.log").c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(static_cast<ssize_t>(text.size()), write(fd, text.data(), text.size()));
    close(fd);
  }
  void AppendGroups(uint64_t from, uint64_t to, Truth& truth) {
    std::string text;
    for (uint64_t n = from; n < to; ++n) text += Group(n, truth);
    Append(text);
  }
  void WaitUntilServing(Daemon& agent) {
    ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); })) << agent.Stderr();
  }
  // A first agent follows app.log (from its end: empty) before a line is written, so that every
  // line written is one to count; its first checkpoint records the source, so the next agent
  // resumes app.log rather than starting at its end. Then it is killed.
  void FollowFromTheEndAndCheckpoint(const std::string& config) {
    Daemon first({"run", "-c", config});
    WaitUntilServing(first);
    ASSERT_TRUE(Eventually([&] {
      return Counted(Metrics(), "faultline_checkpoint_duration_seconds_count") >= 1;
    })) << first.Stderr();
    first.Stop(SIGKILL);
  }
  std::string LogrotateConfig(const std::string& mode) {
    const std::string path = dir_ + "/logrotate-" + mode + ".conf";
    std::ofstream(path) << dir_ << "/logs/app.log {\n  rotate 1000\n  " << mode
                        << "\n  nocompress\n  missingok\n}\n";
    return path;
  }
  void Logrotate(const std::string& config) {
    const std::string command = "logrotate -f -s '" + dir_ + "/logrotate.state' '" + config + "'";
    ASSERT_EQ(0, std::system(command.c_str())) << command;
  }
};

bool HaveLogrotate() { return std::system("command -v logrotate >/dev/null 2>&1") == 0; }

TEST_F(RestartTest, KillNineAtTwentyRandomMomentsUnderLogrotateCountsEveryLineOnce) {
  FAULTLINE_REQUIRE(HaveLogrotate(), "needs Debian's logrotate (scripts/install-deps.sh)");
  const std::string config = WriteConfig();
  const std::string copytruncate = LogrotateConfig("copytruncate");
  const std::string create = LogrotateConfig("create");
  Append("");  // present at the first start, read from its end (empty)

  ASSERT_NO_FATAL_FAILURE(FollowFromTheEndAndCheckpoint(config));

  Truth truth;
  std::mutex truth_mutex;
  std::atomic<bool> writing{true};
  // copytruncate truncates whatever was written between its copy and its truncate: no reader can
  // see those bytes. And logrotate creates the new file with O_EXCL after its rename, which fails
  // if the writer (opening by name) created it first. So the writer holds off while logrotate
  // runs: it holds the lock only for its write, never while it sleeps, so rotations are not
  // starved and happen throughout the writing.
  std::mutex rotation_running;
  constexpr uint64_t kGroups = 120000;
  std::thread writer([&] {
    uint64_t n = 0;
    while (n < kGroups) {
      Truth batch;
      std::string text;
      for (int i = 0; i < 40 && n < kGroups; ++i) text += Group(n++, batch);
      {
        std::lock_guard<std::mutex> hold(rotation_running);
        Append(text);
      }
      {
        std::lock_guard<std::mutex> lock(truth_mutex);
        truth += batch;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(1500));
    }
    writing = false;
  });
  std::atomic<int> rotations{0};
  std::thread rotator([&] {
    while (writing || rotations < 10) {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      std::lock_guard<std::mutex> hold(rotation_running);
      Logrotate(rotations % 2 == 0 ? copytruncate : create);
      ++rotations;
    }
  });

  std::mt19937 random(20261201);
  std::uniform_int_distribution<int> pause_ms(150, 650);
  int kills = 1;
  std::string history;  // what each agent said of the files it found, for a failure's message
  while (kills < 20) {
    Daemon agent({"run", "-c", config});
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    agent.Stop(SIGKILL);
    ++kills;
    std::istringstream log(agent.Stderr());
    history += "--- agent " + std::to_string(kills) + "\n";
    for (std::string line; std::getline(log, line);) {
      if (line.find("/logs/") != std::string::npos) history += line + "\n";
    }
  }
  writer.join();
  rotator.join();
  Daemon agent({"run", "-c", config});
  WaitUntilServing(agent);
  EXPECT_TRUE(Reaches(truth, std::chrono::seconds(40)))
      << "expected " << Describe(truth) << "\ngot " << Describe(Read(Metrics())) << "\nrotations "
      << rotations << "\n"
      << history.substr(history.size() > 30000 ? history.size() - 30000 : 0) << "--- last\n"
      << agent.Stderr().substr(0, 6000);
  EXPECT_EQ(0,
            Counted(Metrics(), "faultline_bytes_lost_total{reason=\"truncated\",source=\"logs\"}"));
  EXPECT_GE(rotations, 10);
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

// The same exactness over a Kubernetes container log (CRI records): the agent is killed at random
// moments, also between the P and F records of one message, and every message is counted once,
// its rule's hit too. A resumed stream starts at the first record of a message it had not ended.
TEST_F(RestartTest, KillNineAtRandomMomentsInAContainerLogCountsEveryMessageOnce) {
  const std::string config = WriteConfig();
  Append("");
  ASSERT_NO_FATAL_FAILURE(FollowFromTheEndAndCheckpoint(config));
  Truth truth;
  std::mutex truth_mutex;
  std::atomic<bool> writing{true};
  constexpr uint64_t kGroups = 30000;
  std::thread writer([&] {
    const auto record = [](std::string_view message, bool partial) {
      return "2024-05-01T12:00:00.123456789Z stderr " + std::string(partial ? "P " : "F ") +
             std::string(message) + "\n";
    };
    for (uint64_t n = 0; n < kGroups; ++n) {
      Truth batch;
      const std::string text = Group(n, batch);
      // Each line of the group is a record; each group's first line is split by the
      // runtime into two P records and an F one, written one by one.
      std::string records;
      size_t line_start = 0;
      for (size_t end = text.find('\n'); end != std::string::npos;
           line_start = end + 1, end = text.find('\n', line_start)) {
        const std::string_view line(text.data() + line_start, end - line_start);
        if (line_start == 0 && line.size() > 8) {
          Append(record(line.substr(0, 4), true));
          Append(record(line.substr(4, 4), true));
          records += record(line.substr(8), false);
        } else {
          records += record(line, false);
        }
      }
      Append(records);
      {
        std::lock_guard<std::mutex> lock(truth_mutex);
        truth += batch;
      }
      if (n % 20 == 0) std::this_thread::sleep_for(std::chrono::microseconds(1500));
    }
    writing = false;
  });
  std::mt19937 random(20261204);
  std::uniform_int_distribution<int> pause_ms(150, 650);
  for (int kills = 1; kills < 12; ++kills) {
    Daemon agent({"run", "-c", config});
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    agent.Stop(SIGKILL);
  }
  writer.join();
  Daemon agent({"run", "-c", config});
  WaitUntilServing(agent);
  EXPECT_TRUE(Reaches(truth, std::chrono::seconds(40)))
      << "expected " << Describe(truth) << "\ngot " << Describe(Read(Metrics())) << "\n"
      << agent.Stderr().substr(0, 6000);
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(RestartTest, SigtermRestartsContinueEveryCounterAndAPartialLineResumesAtItsStart) {
  const std::string config = WriteConfig("", "beginning");
  Truth truth;
  uint64_t n = 0;
  for (int restart = 0; restart < 5; ++restart) {
    Daemon agent({"run", "-c", config});
    WaitUntilServing(agent);
    AppendGroups(n, n + 2000, truth);
    n += 2000;
    ASSERT_TRUE(Reaches(truth)) << "restart " << restart << ": expected " << Describe(truth)
                                << ", got " << Describe(Read(Metrics())) << agent.Stderr();
    // Stopped in the middle of a hit's line, and with a hit whose context is still open.
    Append("NCCL watchdog timeout seq=x\nCUDA out of mem");
    ASSERT_TRUE(Eventually([&] { return Read(Metrics()).lines == truth.lines + 1; }));
    EXPECT_EQ(0, agent.Stop(SIGTERM));
    Append("ory seq=x\nstep\nrecovered after retry seq=x\n");
    truth.lines += 4;
    ++truth.oom;
    ++truth.nccl_warning;
  }
  Daemon agent({"run", "-c", config});
  WaitUntilServing(agent);
  EXPECT_TRUE(Reaches(truth)) << "expected " << Describe(truth) << ", got "
                              << Describe(Read(Metrics()));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(RestartTest, FilesRotatedTwiceTruncatedOrReplacedWhileDownAreReadOnceFromTheRightPlace) {
  const std::string config = WriteConfig("", "beginning");
  const std::string log = dir_ + "/logs/app.log";
  Truth truth;
  uint64_t n = 0;
  const auto round = [&](const char* what, const std::function<void()>& while_down) {
    Daemon agent({"run", "-c", config});
    WaitUntilServing(agent);
    AppendGroups(n, n + 500, truth);
    n += 500;
    ASSERT_TRUE(Reaches(truth)) << what << ": " << Describe(Read(Metrics())) << agent.Stderr();
    EXPECT_EQ(0, agent.Stop(SIGTERM));
    while_down();
  };
  round("rotated twice", [&] {
    AppendGroups(n, n + 300, truth);  // unread tail of the first generation
    n += 300;
    fs::rename(log, log + ".1");
    AppendGroups(n, n + 300, truth);  // a whole generation written and rotated while down
    n += 300;
    fs::rename(log + ".1", log + ".2");
    fs::rename(log, log + ".1");
    AppendGroups(n, n + 300, truth);
    n += 300;
  });
  round("truncated and regrown past the old offset", [&] {
    fs::resize_file(log, 0);
    AppendGroups(n, n + 5000, truth);
    n += 5000;
  });
  round("replaced by a larger file", [&] {
    Truth replaced;
    std::string text;
    for (uint64_t i = n; i < n + 8000; ++i) text += Group(i, replaced);
    n += 8000;
    std::ofstream(log + ".new", std::ios::binary) << text;
    fs::rename(log + ".new", log);
    truth.lines += replaced.lines;
    truth.oom += replaced.oom;
    truth.nccl_error += replaced.nccl_error;
    truth.nccl_warning += replaced.nccl_warning;
    truth.segv += replaced.segv;
    truth.rank += replaced.rank;
  });
  Daemon agent({"run", "-c", config});
  WaitUntilServing(agent);
  EXPECT_TRUE(Reaches(truth)) << "expected " << Describe(truth) << ", got "
                              << Describe(Read(Metrics())) << agent.Stderr();
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

// A reload that changes a file source's settings restarts it: the new source resumes its files
// where the old one stood, as a restart would (a partial line and a hit waiting for context are
// read again, not settled early), so nothing is lost and nothing is counted twice, rotations
// between reloads included.
TEST_F(RestartTest, AReloadThatRestartsAFileSourceNeitherLosesNorCountsTwice) {
  const std::string config = WriteConfig("", "beginning");
  const std::string log = dir_ + "/logs/app.log";
  std::ifstream in(config);
  std::stringstream text;
  text << in.rdbuf();
  const std::string slow = text.str();
  std::string fast = slow;
  fast.replace(fast.find("poll_interval_ms: 50"), 20, "poll_interval_ms: 40");
  Daemon agent({"run", "-c", config});
  WaitUntilServing(agent);
  Truth truth;
  uint64_t n = 0;
  const auto restarts = [&] {
    const std::string err = agent.Stderr();
    int count = 0;
    for (size_t at = err.find("] source logs restarted"); at != std::string::npos;
         at = err.find("] source logs restarted", at + 1)) {
      ++count;
    }
    return count;
  };
  for (int reload = 1; reload <= 6; ++reload) {
    AppendGroups(n, n + 1500, truth);
    n += 1500;
    if (reload % 2 == 0) fs::rename(log, log + "." + std::to_string(reload));
    Append("NCCL watchdog timeout seq=x\nCUDA out of mem");
    ASSERT_TRUE(Eventually([&] { return Read(Metrics()).lines == truth.lines + 1; }))
        << "reload " << reload << ": " << Describe(Read(Metrics())) << agent.Stderr();
    std::ofstream(config) << (reload % 2 == 1 ? fast : slow);
    ASSERT_EQ(0, kill(agent.pid(), SIGHUP));
    ASSERT_TRUE(Eventually([&] { return restarts() == reload; })) << agent.Stderr();
    Append("ory seq=x\nstep\nrecovered after retry seq=x\n");
    truth.lines += 4;
    ++truth.oom;
    ++truth.nccl_warning;
  }
  EXPECT_TRUE(Reaches(truth)) << "expected " << Describe(truth) << ", got "
                              << Describe(Read(Metrics())) << agent.Stderr();
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(RestartTest, ASecondAgentOnTheSameStateDirRefusesToStart) {
  const std::string config = WriteConfig();
  Daemon first({"run", "-c", config});
  WaitUntilServing(first);
  // Its own port, so that only the state folder is shared.
  const std::string other = dir_ + "/second.yaml";
  std::ifstream in(config);
  std::stringstream text;
  text << in.rdbuf();
  std::string body = text.str();
  body.replace(body.find(std::to_string(port_)), std::to_string(port_).size(),
               std::to_string(testing::FreePort()));
  std::ofstream(other) << body;
  const auto second = testing::RunFaultline({"run", "-c", other});
  EXPECT_EQ(2, second.exit_code);
  EXPECT_THAT(second.err, HasSubstr("is in use by another faultline (pid " +
                                    std::to_string(first.pid()) + ")"));
  EXPECT_TRUE(first.running());
  EXPECT_EQ(0, first.Stop(SIGTERM));
}

TEST_F(RestartTest, ACorruptStateFileIsMovedAsideReportedAndTheAgentStartsFresh) {
  const std::string config = WriteConfig("", "beginning");
  Truth truth;
  {
    Daemon agent({"run", "-c", config});
    WaitUntilServing(agent);
    AppendGroups(0, 100, truth);
    ASSERT_TRUE(Reaches(truth));
    EXPECT_EQ(0, agent.Stop(SIGTERM));
  }
  const std::string db = dir_ + "/state/faultline.db";
  {
    std::fstream file(db, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(0);
    file << std::string(4096, '\xff');  // the header and first page, overwritten
  }
  Daemon agent({"run", "-c", config});
  WaitUntilServing(agent);
  // With no saved state the file is read again from its beginning (start_at), counted anew.
  EXPECT_TRUE(Reaches(truth)) << Describe(Read(Metrics())) << agent.Stderr();
  EXPECT_EQ(1, Counted(Metrics(), "faultline_state_corrupt_files_total"));
  EXPECT_THAT(agent.Stderr(), HasSubstr("moved it aside to " + db + ".corrupt-"));
  bool aside = false;
  for (const auto& entry : fs::directory_iterator(dir_ + "/state")) {
    aside = aside || entry.path().filename().string().rfind("faultline.db.corrupt-", 0) == 0;
  }
  EXPECT_TRUE(aside);
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(RestartTest, APartialLineIsMatchedAfterPartialFlushMsOnceAndPerFileSeriesShowIt) {
  const std::string config = WriteConfig("", "beginning", "    partial_flush_ms: 300\n");
  Daemon agent({"run", "-c", config});
  WaitUntilServing(agent);
  Append("CUDA out of memory, and the writer died here");
  Truth truth;
  truth.lines = 1;
  truth.oom = 1;
  EXPECT_TRUE(Reaches(truth)) << Describe(Read(Metrics()));
  Append(" after all\nnext line\n");  // the rest of the flushed line is not a line again
  truth.lines = 2;
  EXPECT_TRUE(Reaches(truth)) << Describe(Read(Metrics()));
  const std::string path = dir_ + "/logs/app.log";
  const std::string labels = "{path=\"" + path + "\",source=\"logs\"}";
  const std::string m = Metrics();
  EXPECT_EQ(2, Counted(m, "faultline_file_lines_total" + labels)) << m;
  EXPECT_EQ(0, Counted(m, "faultline_file_lag_bytes" + labels));
  EXPECT_EQ(static_cast<double>(fs::file_size(path)),
            Counted(m, "faultline_file_read_offset_bytes" + labels));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

// A private tmpfs as state.dir, in a mount namespace of the agent's own: the only way for a root
// test to give the agent a disk that is really full or really read-only.
bool CanMountPrivately() {
  return std::system("unshare -m --propagation private true >/dev/null 2>&1") == 0;
}

// Runs the agent in a new mount namespace where `state` is a tmpfs of `size`, holding the files of
// `seed` (when not empty) and mounted read-only when `read_only`.
std::vector<std::string> PrivateStateDir(const std::string& state, const std::string& size,
                                         const std::string& seed, bool read_only) {
  std::string script = "mount -t tmpfs -o size=" + size + " tmpfs \"$0\" || exit 97; ";
  if (!seed.empty()) script += "cp -a \"" + seed + "\"/. \"$0\"/ || exit 98; ";
  if (read_only) script += "mount -o remount,ro \"$0\" || exit 99; ";
  script += "exec \"$@\"";
  return {"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script, state};
}

int InNamespaceOf(pid_t pid, const std::string& command) {
  return std::system(("nsenter -t " + std::to_string(pid) + " -m sh -c '" + command + "'").c_str());
}

TEST_F(RestartTest, AFullStateDirNeverStopsCountingReadyzSaysWhyAndCheckpointsResume) {
  FAULTLINE_REQUIRE(CanMountPrivately(),
                    "needs a private mount namespace (CAP_SYS_ADMIN) for a small tmpfs");
  const std::string config = WriteConfig("", "beginning");
  const std::string state = dir_ + "/state";
  fs::create_directories(state);
  Daemon agent({"run", "-c", config}, 0, PrivateStateDir(state, "8m", "", false));
  WaitUntilServing(agent);
  Truth truth;
  AppendGroups(0, 200, truth);
  ASSERT_TRUE(Reaches(truth)) << agent.Stderr();
  // Fill the agent's state.dir, as it sees it, to the last byte.
  ASSERT_NE(0, InNamespaceOf(agent.pid(), "cat /dev/zero > " + state + "/filler 2>/dev/null"));
  uint64_t n = 200;
  const auto errors = [&] { return Counted(Metrics(), "faultline_checkpoint_errors_total"); };
  for (int i = 0; i < 20 && errors() == 0; ++i) {
    AppendGroups(n, n + 200, truth);  // every checkpoint has something new to write
    n += 200;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  EXPECT_GT(errors(), 0) << agent.Stderr();
  EXPECT_TRUE(Reaches(truth)) << "counting stopped: " << Describe(Read(Metrics()));
  std::string body;
  EXPECT_EQ(503, HttpGet(port_, "/readyz", &body));
  EXPECT_THAT(body, HasSubstr("full")) << body;
  // Room again: the next checkpoint is written and the agent is ready.
  ASSERT_EQ(0, InNamespaceOf(agent.pid(), "rm " + state + "/filler"));
  AppendGroups(n, n + 10, truth);
  EXPECT_TRUE(Eventually([&] { return HttpGet(port_, "/readyz", &body) == 200; })) << body;
  const double settled = errors();
  EXPECT_TRUE(Reaches(truth));
  EXPECT_EQ(settled, errors());
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(RestartTest, AReadOnlyStateDirStillRestoresCountsAndCheckpointsOnceWritable) {
  FAULTLINE_REQUIRE(CanMountPrivately(),
                    "needs a private mount namespace (CAP_SYS_ADMIN) for a read-only tmpfs");
  const std::string config = WriteConfig("", "beginning");
  Truth truth;
  {
    Daemon agent({"run", "-c", config});
    WaitUntilServing(agent);
    AppendGroups(0, 300, truth);
    ASSERT_TRUE(Reaches(truth));
    EXPECT_EQ(0, agent.Stop(SIGTERM));
  }
  // The saved state, on a file system that is read-only when the agent starts.
  const std::string state = dir_ + "/state";
  fs::rename(state, dir_ + "/saved");
  fs::create_directories(state);
  Daemon agent({"run", "-c", config}, 0, PrivateStateDir(state, "4m", dir_ + "/saved", true));
  WaitUntilServing(agent);
  EXPECT_TRUE(Reaches(truth)) << "counts did not continue: " << Describe(Read(Metrics()))
                              << agent.Stderr();
  AppendGroups(300, 400, truth);
  EXPECT_TRUE(Reaches(truth)) << Describe(Read(Metrics()));
  std::string body;
  EXPECT_EQ(503, HttpGet(port_, "/readyz", &body));
  EXPECT_THAT(body, HasSubstr("checkpoint")) << body;
  EXPECT_GT(Counted(Metrics(), "faultline_checkpoint_errors_total"), 0);
  ASSERT_EQ(0, InNamespaceOf(agent.pid(), "mount -o remount,rw " + state));
  EXPECT_TRUE(Eventually([&] { return HttpGet(port_, "/readyz", &body) == 200; })) << body;
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(RestartTest, ADeletedFileStillWrittenIsReadUntilQuietThenReleased) {
  const std::string config = WriteConfig("", "beginning");
  Daemon agent({"run", "-c", config});
  WaitUntilServing(agent);
  Truth truth;
  AppendGroups(0, 50, truth);
  ASSERT_TRUE(Reaches(truth));
  const std::string log = dir_ + "/logs/app.log";
  const int writer = open(log.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(writer, 0);
  fs::remove(log);
  std::string text;
  for (uint64_t n = 50; n < 80; ++n) text += Group(n, truth);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(static_cast<ssize_t>(text.size()), write(writer, text.data(), text.size()));
  EXPECT_TRUE(Reaches(truth)) << Describe(Read(Metrics()));
  close(writer);
  // Quiet for rotate_wait (500 ms): the descriptor goes.
  const auto holds_deleted = [&] {
    for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(agent.pid()) + "/fd")) {
      std::error_code ec;
      if (fs::read_symlink(fd.path(), ec).string().find("(deleted)") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(Eventually([&] { return !holds_deleted(); }, std::chrono::seconds(10)));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

}  // namespace
}  // namespace faultline
