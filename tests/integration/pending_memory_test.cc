// Memory of hits that wait for context: 300 lines of 1 MiB under a requires_any rule used to keep
// every line (300 MiB); a pending hit now keeps a bounded preview, so a scan of them stays small.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

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

TEST(PendingMemory, ManyHugePendingHitsKeepPeakMemorySmall) {
  const std::string dir = testing::TempDir("pending_memory");
  std::filesystem::create_directories(dir + "/rules");
  std::ofstream(dir + "/rules/t.yaml") << kRule;
  {
    std::ofstream log(dir + "/big.log", std::ios::binary);
    const std::string line = "LINK : fatal error LNK1181: " + std::string(1 << 20, 'x') + "\n";
    for (int i = 0; i < 300; ++i) log << line;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(FAULTLINE_BINARY, FAULTLINE_BINARY, "scan", "--rules", (dir + "/rules").c_str(),
          "--max-line-bytes", "2097152", (dir + "/big.log").c_str(), nullptr);
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  ASSERT_EQ(pid, wait4(pid, &status, 0, &usage));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(0, WEXITSTATUS(status));  // every hit is a warning: nothing confirmed it
  // ru_maxrss is in KiB. Before previews: over 300 MiB.
  EXPECT_LT(usage.ru_maxrss, 64 * 1024) << "peak RSS " << usage.ru_maxrss / 1024 << " MiB";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace faultline
