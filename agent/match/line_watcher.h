// LineWatcher: a per-stream observer of the matcher for stages that look at lines no rule
// explained (discovery of unknown errors, agent/discover/).
//
// A RuleSet compiled with watch patterns (RuleSet::Compile) scans them in the same Vectorscan
// pass as the rules' patterns, so a watcher costs nothing on lines that match neither: the
// matcher hands over only the lines a watch pattern matched, once per batch, and tells the
// watcher about every finding of its stream so that it can tell which of those lines a rule
// explains (the hit line itself, or a line within the rule's context window around it).
//
// Calls come from the matcher's thread, in stream order for OnBatch; OnFinding may name a line
// of an earlier batch (a hit whose severity waited for context). Must not throw. The batch and
// its lines are valid only during the call.
#ifndef FAULTLINE_MATCH_LINE_WATCHER_H_
#define FAULTLINE_MATCH_LINE_WATCHER_H_

#include <cstdint>
#include <span>

#include "agent/framing/line_batch.h"

namespace faultline {

class LineWatcher {
 public:
  // Line `line` of a batch matched the watch patterns whose bits are set in `watches`.
  struct Hit {
    uint32_t line;
    uint32_t watches;
  };

  virtual ~LineWatcher() = default;

  // After `batch` (its lines numbered from first_line) was matched: the watch hits, by line.
  // Findings are still possible for lines from `open_from` on (hits waiting for context),
  // never for earlier ones.
  virtual void OnBatch(const LineBatch& batch, uint64_t first_line, std::span<const Hit> hits,
                       uint64_t open_from) = 0;
  // A finding at `line` of a rule that explains the lines within `window` of it.
  virtual void OnFinding(uint64_t line, uint32_t window) = 0;
  // Every pending hit has been settled (the stream was quiet): no finding is coming for what
  // was seen so far.
  virtual void OnSettled() = 0;
  // End of the stream.
  virtual void OnFinish() = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_LINE_WATCHER_H_
