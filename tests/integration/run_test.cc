// `faultline run` as a user runs it: the real binary with a config on a free port, real files
// appended to, and /metrics polled over HTTP until the expected counts appear.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/integration/agent_folder.h"
#include "tests/integration/process.h"
#include "tests/support/prerequisite.h"

namespace faultline {
namespace {

using testing::Daemon;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::HttpGet;

constexpr char kRules[] = R"(id: t.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
---
id: t.nccl_timeout
title: NCCL watchdog timeout
severity: critical
category: distributed
match: ['Watchdog caught collective operation timeout']
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

class RunTest : public testing::AgentFolderTest {
 protected:
  void SetUp() override {
    AgentFolderTest::SetUp();
    WriteFile("rules/t.yaml", kRules);
  }

  std::string WriteConfig(const std::string& start_at, int idle_flush_ms = 2000) {
    const std::string path = dir_ + "/faultline.yaml";
    std::ofstream(path) << "rules:\n  paths: [rules]\n  context_idle_flush_ms: " << idle_flush_ms
                        << "\nhttp:\n  listen: 127.0.0.1:" << port_
                        << "\nsources:\n  - id: train\n    type: file\n"
                        << "    paths: ['logs/*.log']\n    start_at: " << start_at
                        << "\n    poll_interval_ms: 50\n";
    return path;
  }
  void Append(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/logs/" + name, std::ios::app | std::ios::binary) << text << std::flush;
  }
  std::string Metrics() {
    std::string body;
    return HttpGet(port_, "/metrics", &body) == 200 ? body : "";
  }
  bool MetricsReach(const std::string& series, double value) {
    return Eventually([&] { return testing::Sample(Metrics(), series) == value; });
  }
};

constexpr char kOomError[] =
    "faultline_signature_matches_total{severity=\"error\",signature=\"t.cuda_oom\"}";

TEST_F(RunTest, CountsAppendedLinesAndServesMetrics) {
  Append("train.log", "old: CUDA out of memory\n");  // before start, start_at: end skips it
  Daemon agent({"run", "-c", WriteConfig("end")});
  ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); })) << agent.Stderr();
  const std::string initial = Metrics();
  EXPECT_EQ(0, testing::Sample(initial, kOomError));
  EXPECT_EQ(0, testing::Sample(initial,
                               "faultline_signature_matches_total{severity=\"critical\","
                               "signature=\"t.nccl_timeout\"}"));
  EXPECT_EQ(3, testing::Sample(initial, "faultline_rules_loaded"));
  EXPECT_THAT(initial, HasSubstr("faultline_build_info{version=\""));

  const std::string appended =
      "step 1\nRuntimeError: CUDA out of memory. Tried to allocate 2 GiB\nstep 2\n"
      "[rank0]: torch.OutOfMemoryError: CUDA out of memory.\n";
  // Wait until the tailer follows the file before appending (start_at: end).
  ASSERT_TRUE(Eventually([&] { return agent.Stderr().find("following") != std::string::npos; }));
  Append("train.log", appended);
  ASSERT_TRUE(MetricsReach(kOomError, 2)) << Metrics() << agent.Stderr();
  const std::string after = Metrics();
  EXPECT_EQ(4, testing::Sample(after, "faultline_lines_total{source=\"train\"}"));
  EXPECT_EQ(static_cast<double>(appended.size()),
            testing::Sample(after, "faultline_bytes_total{source=\"train\"}"));
  EXPECT_EQ(0, testing::Sample(after, "faultline_lines_truncated_total"));

  std::string health;
  EXPECT_EQ(200, HttpGet(port_, "/healthz", &health));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(RunTest, PartialLineIsMatchedOnceCompleted) {
  Daemon agent({"run", "-c", WriteConfig("beginning")});
  Append("a.log", "Watchdog caught collective ");
  ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); }));
  Append("a.log", "operation timeout: WorkNCCL(SeqNum=1)\n");
  EXPECT_TRUE(
      MetricsReach("faultline_signature_matches_total{severity=\"critical\","
                   "signature=\"t.nccl_timeout\"}",
                   1));
  EXPECT_EQ(0, agent.Stop(SIGINT));
}

TEST_F(RunTest, TruncatedAndRotatedFilesKeepBeingCounted) {
  Append("a.log", "CUDA out of memory\n");
  Daemon agent({"run", "-c", WriteConfig("beginning")});
  ASSERT_TRUE(MetricsReach(kOomError, 1)) << agent.Stderr();
  // copytruncate: the file is emptied and the writer goes on from the start.
  std::filesystem::resize_file(dir_ + "/logs/a.log", 0);
  Append("a.log", "epoch 2\nCUDA out of memory\n");
  ASSERT_TRUE(MetricsReach(kOomError, 2)) << agent.Stderr();
  std::filesystem::rename(dir_ + "/logs/a.log", dir_ + "/logs/a.log.1");
  Append("a.log", "x\nCUDA out of memory\n");
  ASSERT_TRUE(MetricsReach(kOomError, 3)) << agent.Stderr();
  EXPECT_TRUE(agent.running());
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(RunTest, PendingContextSettlesWhenTheStreamGoesQuiet) {
  Daemon agent({"run", "-c", WriteConfig("beginning", /*idle_flush_ms=*/200)});
  Append("a.log", "test.c\nLINK : fatal error LNK1181: cannot open input file 'aio.lib'\n");
  EXPECT_TRUE(MetricsReach(
      "faultline_signature_matches_total{severity=\"warning\",signature=\"t.aio\"}", 1))
      << Metrics();
  Append("b.log", "LNK1181: 'aio.lib'\nAssertionError: Unable to pre-compile async_io\n");
  EXPECT_TRUE(
      MetricsReach("faultline_signature_matches_total{severity=\"error\",signature=\"t.aio\"}", 1));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(RunTest, GarbageAndHugeLinesDoNotStopCounting) {
  Daemon agent({"run", "-c", WriteConfig("beginning")});
  std::string junk("\xff\xfe\x00\x1b[31m", 7);
  junk += std::string(3 << 20, 'z') + "\nCUDA out of memory\n";
  Append("a.log", junk);
  ASSERT_TRUE(MetricsReach(kOomError, 1)) << agent.Stderr();
  EXPECT_EQ(1, testing::Sample(Metrics(), "faultline_lines_truncated_total"));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(RunTest, PortInUseIsAClearStartupError) {
  Daemon first({"run", "-c", WriteConfig("end")});
  ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); }));
  // The same config with a state folder of its own (one state.dir takes one agent).
  std::ofstream(dir_ + "/second.yaml") << "state:\n  dir: state2\n"
                                       << std::ifstream(dir_ + "/faultline.yaml").rdbuf();
  const auto second = testing::RunFaultline({"run", "-c", dir_ + "/second.yaml"});
  EXPECT_EQ(2, second.exit_code);
  EXPECT_THAT(second.err, HasSubstr("127.0.0.1:" + std::to_string(port_)));
  first.Stop(SIGTERM);
}

TEST_F(RunTest, CheckReportsEveryConfigErrorWithFileLineAndKey) {
  const std::string path = dir_ + "/bad.yaml";
  std::ofstream(path) << "rules:\n  paths: [rules]\nhttp:\n  listen: 127.0.0.1:99999\n"
                         "sources:\n  - id: x\n    type: file\n    paths: ['*.log']\n"
                         "    start_at: middle\n    colour: red\n";
  const auto r = testing::RunFaultline({"check", "-c", path});
  EXPECT_EQ(2, r.exit_code);
  EXPECT_THAT(r.err, HasSubstr(path + ":4: key 'http.listen'"));
  EXPECT_THAT(r.err, HasSubstr(path + ":9: key 'sources[0].start_at'"));
  EXPECT_THAT(r.err, HasSubstr(path + ":10: key 'sources[0].colour'"));
  const auto ok = testing::RunFaultline({"check", "-c", WriteConfig("end")});
  EXPECT_EQ(0, ok.exit_code) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("3 rules"));
}

TEST_F(RunTest, SighupNeitherStopsTheAgentNorLosesCounts) {
  Daemon agent({"run", "-c", WriteConfig("beginning")});
  Append("a.log", "CUDA out of memory\n");
  ASSERT_TRUE(MetricsReach(kOomError, 1)) << agent.Stderr();
  ASSERT_TRUE(agent.running());
  kill(agent.pid(), SIGHUP);
  kill(agent.pid(), SIGHUP);
  Append("a.log", "CUDA out of memory\n");
  EXPECT_TRUE(MetricsReach(kOomError, 2)) << agent.Stderr();
  EXPECT_TRUE(Eventually([&] { return agent.Stderr().find("SIGHUP") != std::string::npos; }))
      << agent.Stderr();
  EXPECT_TRUE(agent.running());
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(RunTest, ReadyzSaysReadyWithARuleCountAndHealthzThatTheLoopAnswers) {
  Daemon agent({"run", "-c", WriteConfig("end")});
  std::string body;
  ASSERT_TRUE(Eventually([&] { return HttpGet(port_, "/readyz", &body) == 200; }))
      << agent.Stderr();
  EXPECT_THAT(body, HasSubstr("ready: 3 rules, 1 source(s)"));
  EXPECT_EQ(200, HttpGet(port_, "/healthz", &body));
  EXPECT_THAT(body, HasSubstr("event loop answering"));
}

TEST_F(RunTest, ReadyzIsNotReadyWhenDescriptorsRunOut) {
  // So few descriptors that the agent's own (listener, inotify, epoll, log) leave no reserve.
  Daemon agent({"run", "-c", WriteConfig("end")}, /*max_open_files=*/40);
  std::string body;
  ASSERT_TRUE(Eventually([&] { return HttpGet(port_, "/readyz", &body) == 503; }))
      << agent.Stderr() << body;
  EXPECT_THAT(body, HasSubstr("file descriptors in use"));
  // Still alive and serving.
  EXPECT_EQ(200, HttpGet(port_, "/healthz", &body));
}

// Moves the calling process into a user namespace of its own, as root there, and sets one of
// that namespace's inotify limits (/proc/sys/user/max_inotify_{instances,watches}, per user
// namespace since Linux 4.9), so a test can exhaust inotify without touching the machine's limits.
// False when user namespaces are not available here.
bool LimitInotifyInOwnNamespace(const char* limit, int value) {
  const uid_t uid = getuid();
  const gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER) != 0) return false;
  auto write_file = [](const std::string& path, const std::string& text) {
    const int fd = open(path.c_str(), O_WRONLY);
    if (fd < 0) return false;
    const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    return ok;
  };
  return write_file("/proc/self/setgroups", "deny") &&
         write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") &&
         write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1") &&
         write_file(std::string("/proc/sys/user/") + limit, std::to_string(value));
}

// Whether LimitInotifyInOwnNamespace works on this machine (tried in a child).
bool CanLimitInotify() {
  const pid_t pid = fork();
  if (pid == 0) _exit(LimitInotifyInOwnNamespace("max_inotify_watches", 1) ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Without inotify the agent still counts every line (it polls), but changes are seen a poll tick
// late and a file rotated within a tick can be missed: /readyz says so, with the sysctl to raise.
TEST_F(RunTest, ReadyzIsNotReadyWithoutInotifyAndLinesAreStillCounted) {
  FAULTLINE_REQUIRE(CanLimitInotify(), "user namespaces (unshare CLONE_NEWUSER) unavailable");
  Daemon agent({"run", "-c", WriteConfig("beginning")}, 0, {}, [] {
    if (!LimitInotifyInOwnNamespace("max_inotify_instances", 0)) _exit(126);
  });
  std::string body;
  ASSERT_TRUE(Eventually([&] { return HttpGet(port_, "/readyz", &body) == 503; }))
      << agent.Stderr() << body;
  EXPECT_THAT(body, HasSubstr("not ready: source train: inotify unavailable ("));
  EXPECT_THAT(body, HasSubstr("raise fs.inotify.max_user_instances"));
  Append("a.log", "CUDA out of memory\n");
  EXPECT_TRUE(MetricsReach(kOomError, 1)) << agent.Stderr();
  EXPECT_EQ(200, HttpGet(port_, "/healthz", &body));
}

// A folder whose watch the kernel refuses (watch limit reached) makes the agent not ready until
// the watch succeeds; the folder is polled meanwhile.
TEST_F(RunTest, ReadyzIsNotReadyWhenAFolderCannotBeWatched) {
  FAULTLINE_REQUIRE(CanLimitInotify(), "user namespaces (unshare CLONE_NEWUSER) unavailable");
  Daemon agent({"run", "-c", WriteConfig("beginning")}, 0, {}, [] {
    if (!LimitInotifyInOwnNamespace("max_inotify_watches", 0)) _exit(126);
  });
  std::string body;
  ASSERT_TRUE(Eventually([&] { return HttpGet(port_, "/readyz", &body) == 503; }))
      << agent.Stderr() << body;
  EXPECT_THAT(body, HasSubstr("source train: 1 folder(s) not watched, e.g. "));
  EXPECT_THAT(body, HasSubstr("raise fs.inotify.max_user_watches"));
  Append("a.log", "CUDA out of memory\n");
  EXPECT_TRUE(MetricsReach(kOomError, 1)) << agent.Stderr();
}

TEST_F(RunTest, LatestFindingPerSignatureIsServedWithItsContextLines) {
  Daemon agent({"run", "-c", WriteConfig("beginning")});
  Append("a.log", "epoch 1\nstep 10\nstep 11\nCUDA out of memory. Tried to allocate 2 GiB\n");
  ASSERT_TRUE(MetricsReach(kOomError, 1)) << agent.Stderr();
  Append("a.log", "step 12\nCUDA out of memory. Tried to allocate 4 GiB\n");
  ASSERT_TRUE(MetricsReach(kOomError, 2)) << agent.Stderr();
  std::string body;
  ASSERT_EQ(200, HttpGet(port_, "/api/v1/findings", &body));
  const auto json = nlohmann::json::parse(body);
  ASSERT_EQ(1u, json["findings"].size()) << body;  // one signature, its latest hit
  const auto& f = json["findings"][0];
  EXPECT_EQ("t.cuda_oom", f["signature"]);
  EXPECT_EQ("error", f["severity"]);
  EXPECT_EQ("train", f["source"]);
  EXPECT_EQ(dir_ + "/logs/a.log", f["stream"]);
  EXPECT_EQ(6, f["line"]);
  EXPECT_EQ("CUDA out of memory. Tried to allocate 4 GiB", f["text"]);
  EXPECT_EQ((std::vector<std::string>{"step 11", "CUDA out of memory. Tried to allocate 2 GiB",
                                      "step 12"}),
            f["context_before"].get<std::vector<std::string>>());
}

}  // namespace
}  // namespace faultline
