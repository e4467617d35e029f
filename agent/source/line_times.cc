#include "agent/source/line_times.h"

#include <algorithm>

namespace faultline {

void LineTimes::Begin(uint64_t first_line, std::optional<int64_t> time_ms) {
  if (!runs_.empty()) {
    Run& last = runs_.back();
    if (last.time_ms == time_ms) return;  // the same time goes on
    if (last.first_line == first_line) {  // the last run held no line
      last.time_ms = time_ms;
      return;
    }
  } else if (!time_ms) {
    return;  // no run: no time already
  }
  if (runs_.size() >= kMaxRuns) runs_.erase(runs_.begin(), runs_.begin() + kMaxRuns / 2);
  runs_.push_back(Run{first_line, time_ms});
}

std::optional<int64_t> LineTimes::At(uint64_t line) const {
  const auto after =
      std::upper_bound(runs_.begin(), runs_.end(), line,
                       [](uint64_t l, const Run& run) { return l < run.first_line; });
  if (after == runs_.begin()) return std::nullopt;
  return std::prev(after)->time_ms;
}

}  // namespace faultline
