// Memory for one huge line, measured on the real binary: `faultline run` and `faultline scan` at
// the largest max_line_bytes (64 MiB) given a 100 MB line. The line must be held about once at
// its peak (not once in the framer and again in the batch, plus growth copies), and the memory
// must be given back once the line is matched. Figures come from /proc/<pid>/status (VmHWM, the
// peak resident set; VmRSS, the resident set now) and wait4's rusage for the finished scan.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/process.h"

namespace faultline {
namespace {

using testing::Daemon;
using testing::Eventually;
using testing::HttpGet;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kMaxLineBytes = 64 * kMiB;
constexpr uint64_t kHugeLineBytes = 100'000'000;
// Issue 6: peak resident memory under 1.5 x max_line_bytes + 32 MiB with such a line.
constexpr uint64_t kPeakBound = kMaxLineBytes * 3 / 2 + 32 * kMiB;
// After the line is matched, the agent holds what it held before it, give or take this.
constexpr uint64_t kRetainedBound = 16 * kMiB;

// In a sanitizer build the bounds mean what testing::kMemoryIsMeasurable and
// testing::kPeakOverBaseline say (tests/integration/process.h).
using testing::kMemoryIsMeasurable;
using testing::kPeakOverBaseline;

constexpr char kHugeLineRules[] = R"(id: t.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
)";

// A field of /proc/<pid>/status in bytes ("VmHWM:   123 kB"), or 0 when absent.
uint64_t StatusBytes(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      return std::stoull(line.substr(field.size() + 1)) * 1024;
    }
  }
  return 0;
}

// Appends one line of `bytes` 'x' and its newline, written 1 MiB at a time as a logger would.
void AppendHugeLine(const std::string& path, uint64_t bytes) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  const std::string chunk(kMiB, 'x');
  for (uint64_t written = 0; written < bytes; written += chunk.size()) {
    out.write(chunk.data(),
              static_cast<std::streamsize>(std::min<uint64_t>(chunk.size(), bytes - written)));
  }
  out << "\n" << std::flush;
}

class HugeLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WithoutAsanQuarantine();
    dir_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ + "/rules");
    std::ofstream(dir_ + "/rules/t.yaml") << kHugeLineRules;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(HugeLineTest, RunHoldsAHugeLineOnceAndGivesTheMemoryBack) {
  const uint16_t port = testing::FreePort();
  const std::string log = dir_ + "/train.log";
  std::ofstream(log) << "step 0\n";
  std::ofstream(dir_ + "/faultline.yaml")
      << "rules:\n  paths: [rules]\nframing:\n  max_line_bytes: " << kMaxLineBytes
      << "\nhttp:\n  listen: 127.0.0.1:" << port
      << "\nsources:\n  - id: train\n    type: file\n    paths: [train.log]\n"
      << "    start_at: beginning\n    poll_interval_ms: 50\n";
  Daemon agent({"run", "-c", dir_ + "/faultline.yaml"});
  const auto metric = [&](const std::string& series) {
    std::string body;
    return HttpGet(port, "/metrics", &body) == 200 ? testing::Sample(body, series) : -1;
  };
  const std::string lines = "faultline_lines_total{source=\"train\"}";
  ASSERT_TRUE(Eventually([&] { return metric(lines) == 1; })) << agent.Stderr();
  const uint64_t rss_before = StatusBytes(agent.pid(), "VmRSS");

  AppendHugeLine(log, kHugeLineBytes);
  std::ofstream(log, std::ios::app) << "step 1\nRuntimeError: CUDA out of memory.\nstep 2\n";
  ASSERT_TRUE(Eventually([&] { return metric(lines) == 5; }, std::chrono::seconds(60)))
      << agent.Stderr();
  EXPECT_EQ(1, metric("faultline_lines_truncated_total"));
  EXPECT_EQ(1, metric("faultline_signature_matches_total{severity=\"error\","
                      "signature=\"t.cuda_oom\"}"));

  const uint64_t peak = StatusBytes(agent.pid(), "VmHWM");
  const uint64_t rss_after = StatusBytes(agent.pid(), "VmRSS");
  std::printf(
      "faultline run, one %llu-byte line at max_line_bytes %llu: peak RSS %.1f MiB "
      "(bound %.1f), RSS %.1f MiB before, %.1f MiB after\n",
      static_cast<unsigned long long>(kHugeLineBytes),
      static_cast<unsigned long long>(kMaxLineBytes), peak / double(kMiB),
      kPeakBound / double(kMiB), rss_before / double(kMiB), rss_after / double(kMiB));
  if (kMemoryIsMeasurable) {
    EXPECT_LT(peak - (kPeakOverBaseline ? rss_before : 0), kPeakBound);
    EXPECT_LT(rss_after, rss_before + kRetainedBound);
  }
}

struct Measured {
  int exit_code = -1;
  std::string out;
  uint64_t peak = 0;  // the child's own peak resident set (wait4's rusage)
};

// Runs the faultline binary with `args`, stdout to `out_path`, and returns its exit code, output
// and peak memory. wait4 gives this child's own rusage, whatever other children came before.
Measured RunMeasured(const std::vector<std::string>& args, const std::string& out_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  std::vector<std::string> argv_strings = {FAULTLINE_BINARY};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  Measured m;
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, FAULTLINE_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return m;
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) return m;
  m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  m.peak = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
  std::ifstream in(out_path);
  std::stringstream text;
  text << in.rdbuf();
  m.out = text.str();
  return m;
}

TEST_F(HugeLineTest, ScanStaysWithinTheSameBound) {
  const std::vector<std::string> scan = {"scan",
                                         "--format",
                                         "json",
                                         "--rules",
                                         dir_ + "/rules",
                                         "--max-line-bytes",
                                         std::to_string(kMaxLineBytes)};
  // What a scan holds before any input (the sanitizer runtime in those builds).
  const std::string empty = dir_ + "/empty.log";
  std::ofstream(empty).flush();
  std::vector<std::string> args = scan;
  args.push_back(empty);
  const Measured baseline = RunMeasured(args, dir_ + "/empty.json");
  ASSERT_EQ(0, baseline.exit_code);

  const std::string log = dir_ + "/build.log";
  std::ofstream(log) << "step 0\n";
  AppendHugeLine(log, kHugeLineBytes);
  std::ofstream(log, std::ios::app) << "RuntimeError: CUDA out of memory.\n";
  args.back() = log;
  const Measured result = RunMeasured(args, dir_ + "/build.json");
  EXPECT_EQ(1, result.exit_code);  // the OOM line after the huge one is found
  const nlohmann::json report = nlohmann::json::parse(result.out);
  EXPECT_EQ(3, report["lines"]);
  EXPECT_EQ(1, report["lines_truncated"]);

  std::printf(
      "faultline scan, one %llu-byte line at max_line_bytes %llu: peak RSS %.1f MiB "
      "(bound %.1f), %.1f MiB for an empty input\n",
      static_cast<unsigned long long>(kHugeLineBytes),
      static_cast<unsigned long long>(kMaxLineBytes), result.peak / double(kMiB),
      kPeakBound / double(kMiB), baseline.peak / double(kMiB));
  if (kMemoryIsMeasurable) {
    EXPECT_LT(result.peak - (kPeakOverBaseline ? baseline.peak : 0), kPeakBound);
  }
}

}  // namespace
}  // namespace faultline
