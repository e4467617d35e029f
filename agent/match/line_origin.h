// ParseLineOrigin: which rank and which host printed a log line, read from the prefixes that
// launchers and cluster tools put on it. Called only on lines that raised a rule, so a few
// hundred findings cost a few microseconds; a pure function of its input, thread-safe.
//
// Recognised, at the start of the line and stacked in any order (`node01: 0: [rank0]: ...`):
//   [rank3]:  [rank3]       torch.distributed's per-rank prefix (rank 3)
//   [default3]:             torchrun --tee / --log-line-prefix default: role + local rank, which is
//                           the rank on a single node (with a host prefix it names that node's worker)
//   rank3:                  a per-rank prefix written by launch scripts
//   [1,3]<stderr>:          OpenMPI --tag-output (job 1, rank 3)
//   0:                      srun --label (task 0 is rank 0)
//   node01:                 pdsh / clush host prefix. Only a name shaped like a cluster node:
//                           lower case, its first label ending in a digit (node01, gpu-a100-3,
//                           ip-10-0-0-7.ec2.internal), or an IPv4 address; not python3:, pip3:,
//                           step10:, a compiler driver (collect2:, cc1:, gcc-12:, clang-14:) or
//                           a shared object name (libcudart.so.11.0:)
//   (pid=42, ip=10.0.0.5)   Ray worker prefix (host 10.0.0.5)
//   [80746]                 a pasted log's line number: skipped, it names nothing
// and anywhere in the line:
//   [Rank 3] / [PG 1 Rank 3] / [PG ID 0 PG GUID 0(default_pg) Rank 3]   c10d / ProcessGroupNCCL
//   rank: 3 / rank = 3      (not local_rank: 3)
//   srun: error: node07: task 3: ...                                     host node07, rank 3
//   slurmstepd: error: *** JOB 42 ON node07 CANCELLED ...                host node07
//   host: node07            (as the line's first word)
// torchrun's failure summary puts host and rank on lines of their own, above the exitcode line
// that rules raise:
//   [0]:
//     time      : 2024-05-01_10:00:00
//     host      : node07
//     rank      : 3 (local_rank: 3)
//     exitcode  : 1 (pid: 4711)
// so for a summary line (exitcode / error_file / traceback) the lines just above it are read
// too; entry [0] is the one printed under "Root Cause (first observed failure)".
// What a line does not say stays unknown; nothing is guessed.
#ifndef FAULTLINE_MATCH_LINE_ORIGIN_H_
#define FAULTLINE_MATCH_LINE_ORIGIN_H_

#include <span>
#include <string_view>

namespace faultline {

struct LineOrigin {
  static constexpr int kNoRank = -1;
  // Ranks above this are not ranks but other numbers that happen to follow the word.
  static constexpr int kMaxRank = 9'999'999;

  int rank = kNoRank;
  std::string_view host;  // a view into the parsed line or context; empty when unknown
  // The line belongs to the entry torchrun names as the first observed failure.
  bool first_observed = false;

  bool has_rank() const { return rank != kNoRank; }
};

// `before`: the lines just above `line`, oldest first (Finding::context_before); may be empty.
LineOrigin ParseLineOrigin(std::string_view line, std::span<const std::string_view> before = {});

}  // namespace faultline

#endif  // FAULTLINE_MATCH_LINE_ORIGIN_H_
