// Memory of hits that wait for context: 300 lines of 1 MiB under a requires_any rule used to keep
// every line (300 MiB); a pending hit now keeps a bounded preview, so a scan of them stays small.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "tests/integration/process.h"

namespace faultline {
namespace {

constexpr char kRule[] = R"(id: t.aio
title: aio link
severity: error
category: build
match: ['LNK1181']
context:
  within_lines: 5000
  requires_any: ['Unable to pre-compile async_io']
  unconfirmed_severity: warning
root_cause: r
fix: f
)";

// Scans `log` with the test's rule and `threads` matching threads; returns the peak RSS in KiB.
long PeakRssOfScan(const std::string& dir, const std::string& log, const char* threads) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(FAULTLINE_BINARY, FAULTLINE_BINARY, "scan", "--threads", threads, "--rules",
          (dir + "/rules").c_str(), "--max-line-bytes", "2097152", log.c_str(), nullptr);
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  EXPECT_EQ(pid, wait4(pid, &status, 0, &usage));
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(0, WEXITSTATUS(status));  // every hit is a warning: nothing confirmed it
  return usage.ru_maxrss;             // KiB
}

class PendingMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WithoutAsanQuarantine();
    dir_ = testing::TempDir("pending_memory");
    std::filesystem::create_directories(dir_ + "/rules");
    std::ofstream(dir_ + "/rules/t.yaml") << kRule;
    std::ofstream log(dir_ + "/big.log", std::ios::binary);
    const std::string line = "LINK : fatal error LNK1181: " + std::string(1 << 20, 'x') + "\n";
    for (int i = 0; i < 300; ++i) log << line;
    std::ofstream(dir_ + "/empty.log");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(PendingMemory, ManyHugePendingHitsKeepPeakMemorySmall) {
  const long peak = PeakRssOfScan(dir_, dir_ + "/big.log", "1");
  const long baseline = testing::kPeakOverBaseline ? PeakRssOfScan(dir_, dir_ + "/empty.log", "1") : 0;
  std::cout << "peak RSS " << peak / 1024 << " MiB (" << baseline / 1024 << " MiB on an empty log)\n";
  // Before previews: over 300 MiB.
  if (testing::kMemoryIsMeasurable) {
    EXPECT_LT(peak - baseline, 64 * 1024) << "peak RSS " << peak / 1024 << " MiB";
  }
}

// Matching ahead on 8 threads holds no batch of huge lines per slot: the bytes out in slots are
// bounded and a slot gives back a huge batch's buffers (it took 18 MiB more before).
TEST_F(PendingMemory, HugeLinesCostNoMoreOnEightMatchingThreadsThanOnOne) {
  const long one = PeakRssOfScan(dir_, dir_ + "/big.log", "1");
  const long eight = PeakRssOfScan(dir_, dir_ + "/big.log", "8");
  std::cout << "peak RSS " << one / 1024 << " MiB on one thread, " << eight / 1024
            << " MiB on eight\n";
  if (testing::kMemoryIsMeasurable) {
    EXPECT_LT(eight - one, 8 * 1024)
        << "peak RSS " << one / 1024 << " MiB on one thread, " << eight / 1024 << " MiB on eight";
  }
}

}  // namespace
}  // namespace faultline
