// LineTimes: when the recent lines of one stream were written, by line number, as their source
// said (TimedRun: a syslog header's timestamp), so that a finding reported for a line, even one
// reported lines later (a hit waiting for its context), carries the time of its own line.
//
// Kept as runs: a run starts at a line and lasts until the next run starts, so a busy sender
// whose lines share a second costs one entry per second, not per line. Begin() is called before
// the run's bytes are framed, so a finding made while they are framed already finds its time.
// At most kMaxRuns runs: beyond that the oldest half is forgotten, and their lines have no time
// (their findings are dated by arrival, as without times). Clear() when no finding can come for
// the lines seen so far. Not thread-safe; never throws; allocates only to grow.
#ifndef FAULTLINE_SOURCE_LINE_TIMES_H_
#define FAULTLINE_SOURCE_LINE_TIMES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace faultline {

class LineTimes {
 public:
  static constexpr std::size_t kMaxRuns = 4096;

  // Lines from `first_line` (1-based) on were written at `time_ms` (none: unknown), until the
  // next Begin. `first_line` never goes down between Clear calls.
  void Begin(uint64_t first_line, std::optional<int64_t> time_ms);
  // The time of `line`, or none.
  std::optional<int64_t> At(uint64_t line) const;
  void Clear() { runs_.clear(); }
  bool empty() const { return runs_.empty(); }
  std::size_t runs() const { return runs_.size(); }

 private:
  struct Run {
    uint64_t first_line;
    std::optional<int64_t> time_ms;
  };
  std::vector<Run> runs_;  // first_line ascending
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_LINE_TIMES_H_
