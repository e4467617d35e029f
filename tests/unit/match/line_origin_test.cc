#include "agent/match/line_origin.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace faultline {
namespace {

struct Case {
  std::string line;
  int rank;
  std::string host;
};

void ExpectOrigins(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    const LineOrigin o = ParseLineOrigin(c.line);
    EXPECT_EQ(c.rank, o.rank) << c.line;
    EXPECT_EQ(c.host, std::string(o.host)) << c.line;
  }
}

constexpr int kNone = LineOrigin::kNoRank;

TEST(LineOrigin, TorchAndLauncherRankPrefixes) {
  ExpectOrigins({
      {"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", 3, ""},
      {"[rank5]:[E0117 03:12:09.551203114 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught "
       "collective operation timeout",
       5, ""},
      {"[rank7] Watchdog caught collective operation timeout:", 7, ""},
      {"[default3]:RuntimeError: CUDA error: an illegal memory access was encountered", 3, ""},
      {"rank12: RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219",
       12, ""},
      {"[1,3]<stderr>:RuntimeError: CUDA out of memory.", 3, ""},
  });
}

TEST(LineOrigin, ClusterToolPrefixesStackAndTheInnerRankWins) {
  ExpectOrigins({
      {"node01: [rank3]: torch.OutOfMemoryError: CUDA out of memory.", 3, "node01"},
      {"gpu-a100-07: RuntimeError: CUDA error: unspecified launch failure", kNone,
       "gpu-a100-07"},
      {"ip-10-0-0-7.ec2.internal: [default0]:NCCL error", 0, "ip-10-0-0-7.ec2.internal"},
      {"10.1.2.3: Traceback (most recent call last):", kNone, "10.1.2.3"},
      // srun --label: task 0 is the node's launcher; torch's [rank5] inside it is the worker.
      {"0: [rank5]: torch.OutOfMemoryError: CUDA out of memory.", 5, ""},
      {"  4: RuntimeError: CUDA error: device-side assert triggered", 4, ""},
      {"node07: 1: RuntimeError: CUDA error", 1, "node07"},
      // Pasted with line numbers, or indented in a quote.
      {"[80746] [rank4]:[E321 02:07:08.414640780 ProcessGroupNCCL.cpp:607] Watchdog caught", 4, ""},
      {"    [rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] Watchdog caught", 7, ""},
      {"(RayWorkerWrapper pid=4711, ip=10.0.0.5) ERROR worker.py:421 CUDA out of memory", kNone,
       "10.0.0.5"},
  });
}

TEST(LineOrigin, RanksAndHostsNamedInsideTheMessage) {
  ExpectOrigins({
      {"[E ProcessGroupNCCL.cpp:566] [Rank 3] Watchdog caught collective operation timeout", 3,
       ""},
      {"[rank0]:[E1206 18:44:16.994932383 ProcessGroupNCCL.cpp:1709] [PG 1 Rank 0] Timeout at "
       "NCCL work: 7753",
       0, ""},
      {"node03: [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread terminated",
       2, "node03"},
      {"Connection closed by peer, rank: 6, world_size: 8", 6, ""},
      {"srun: error: node07: task 3: Exited with exit code 1", 3, "node07"},
      {"srun: error: gpu12: tasks 0-3: Killed", kNone, "gpu12"},
      {"slurmstepd: error: *** JOB 123456 ON node07 CANCELLED AT 2024-03-01T10:00:00 DUE TO TIME "
       "LIMIT ***",
       kNone, "node07"},
      {"slurmstepd: error: *** STEP 42.0 ON c561-007 CANCELLED AT 2024-03-01T10:00:00 ***", kNone,
       "c561-007"},
  });
}

TEST(LineOrigin, WordsThatLookLikePrefixesAreNotOrigins) {
  ExpectOrigins({
      {"RuntimeError: CUDA error: out of memory", kNone, ""},
      {"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 3 "
       "(pid: 40213) of binary: /opt/conda/bin/python",
       kNone, ""},
      {"E0911 14:02:11.905000 139921 torch/distributed/elastic/multiprocessing/api.py:869] failed "
       "(exitcode: -11) local_rank: 1 (pid: 5521)",
       kNone, ""},
      {"python3: can't open file '/workspace/train.py': [Errno 2] No such file or directory",
       kNone, ""},
      {"libcudart.so.11.0: cannot open shared object file: No such file or directory", kNone, ""},
      {"step10: loss is nan", kNone, ""},
      {"collect2: error: ld returned 1 exit status", kNone, ""},
      {"cc1: all warnings being treated as errors", kNone, ""},
      {"gcc-12: fatal error: no input files", kNone, ""},
      {"clang-14: error: linker command failed with exit code 1 (use -v to see invocation)", kNone,
       ""},
      {"12:00:01 CUDA out of memory", kNone, ""},
      {"torch.distributed.DistBackendError: NCCL error in local rank 3", kNone, ""},
      {"[E1130 12:00:00.123] CUDA error", kNone, ""},
      {"lost peer, rank: 99999999", kNone, ""},
  });
}

TEST(LineOrigin, TorchrunSummaryEntryIsReadFromTheLinesAboveItsExitCode) {
  const std::vector<std::string_view> before = {
      "[0]:", "  time      : 2024-06-16_20:34:34", "  host      : 129-153-214-211",
      "  rank      : 2 (local_rank: 2)"};
  const LineOrigin o = ParseLineOrigin("  exitcode  : 1 (pid: 76628)", before);
  EXPECT_EQ(2, o.rank);
  EXPECT_EQ("129-153-214-211", o.host);
  EXPECT_TRUE(o.first_observed);
}

TEST(LineOrigin, OnlyEntryZeroIsTheFirstObservedFailure) {
  const std::vector<std::string_view> before = {
      "[1]:", "  time      : 2026-01-15_05:44:28", "  host      : xdit",
      "  rank      : 1 (local_rank: 1)"};
  const LineOrigin o = ParseLineOrigin("  exitcode  : -11 (pid: 6175)", before);
  EXPECT_EQ(1, o.rank);
  EXPECT_EQ("xdit", o.host);
  EXPECT_FALSE(o.first_observed);
}

TEST(LineOrigin, SummaryEntryBehindClusterPrefixesAndWithFewerContextLines) {
  const std::vector<std::string_view> before = {"node02:   time      : 2024-01-01_00:00:00",
                                                "node02:   host      : node02",
                                                "node02:   rank      : 9 (local_rank: 1)"};
  const LineOrigin o = ParseLineOrigin("node02:   exitcode  : -6 (pid: 812)", before);
  EXPECT_EQ(9, o.rank);
  EXPECT_EQ("node02", o.host);
  EXPECT_FALSE(o.first_observed);  // its [N]: header is out of sight: unknown, not guessed
}

TEST(LineOrigin, ContextIsReadOnlyForSummaryLines) {
  const std::vector<std::string_view> before = {"  rank      : 4 (local_rank: 0)"};
  const LineOrigin o = ParseLineOrigin("torch.OutOfMemoryError: CUDA out of memory.", before);
  EXPECT_FALSE(o.has_rank());
}

TEST(LineOrigin, ASummaryBlockOfAnotherEntryStopsTheWalk) {
  const std::vector<std::string_view> before = {
      "  rank      : 4 (local_rank: 0)", "  traceback : To enable traceback see: https://x",
      "------------------------------------------------------------"};
  const LineOrigin o = ParseLineOrigin("  exitcode  : 1 (pid: 9)", before);
  EXPECT_FALSE(o.has_rank());
}

}  // namespace
}  // namespace faultline
