// StreamPipeline: bytes of one stream in, findings out. It owns the stream's LineFramer,
// LineBatch and StreamMatcher and decides when a batch is big enough to match.
//
// Lines are matched in batches of about kBatchBytes, because one multi-pattern pass over a batch
// is far cheaper than one per line; a caller that must not hold lines back (a daemon whose file
// went quiet) calls Drain() to match what is batched now. Counts lines and bytes for metrics.
// Not thread-safe; one per stream. The RuleSet, the sink and the scratch must outlive it.
#ifndef FAULTLINE_MATCH_STREAM_PIPELINE_H_
#define FAULTLINE_MATCH_STREAM_PIPELINE_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "agent/framing/line_batch.h"
#include "agent/framing/line_framer.h"
#include "agent/match/match_ahead.h"
#include "agent/match/stream_matcher.h"
#include "agent/match/stream_state.h"

namespace faultline {

// Where a resumed stream starts: a StreamState's committed position and its line count.
struct StreamResume {
  FramerPosition position;
  uint64_t lines_before = 0;
};

// Sees every batch of a stream just before it is matched and again just after (the alert
// lifecycle learns package versions from the lines, and the lines after a hit). `first_line` is
// the 1-based number of the batch's first line. Runs on the pipeline's thread; must not throw.
class BatchObserver {
 public:
  virtual ~BatchObserver() = default;
  virtual void OnBatch(const LineBatch& batch, uint64_t first_line, bool matched) = 0;
};

class StreamPipeline {
 public:
  // Large enough to amortise a scan call, small enough that the batch stays in L2 cache while
  // Vectorscan and RE2 read it: 64 KiB scanned fastest of 32 KiB .. 1 MiB on the CI machine.
  static constexpr size_t kBatchBytes = 64 * 1024;
  // With match-ahead, at most this many bytes of framed lines wait in slots (more only when one
  // batch alone is larger): batches of huge lines are matched one or two at a time, so a log of
  // 64 MiB lines costs a few of them in memory, not one per slot.
  static constexpr size_t kMaxBytesAhead = 2 * 1024 * 1024;

  // `origin`, when given, names the stream on every finding and must outlive the pipeline.
  // `resume`, when given, continues a stream from a checkpoint: the first byte fed is the byte at
  // resume->position.offset. `watcher`, when given, sees the lines the RuleSet's watch patterns
  // matched (line_watcher.h) and must outlive the pipeline.
  StreamPipeline(std::shared_ptr<const RuleSet> rules, FindingSink* sink, MatchScratch* scratch,
                 const FramingOptions& framing, const StreamOrigin* origin = nullptr,
                 const StreamResume* resume = nullptr, LineWatcher* watcher = nullptr);

  // Frames `bytes`; matches whenever a full batch is ready (with match-ahead: hands it to the
  // workers, and settles the oldest batches they have matched when every slot is out).
  void Feed(std::string_view bytes);
  // Matches the lines framed so far (a partial line stays in the framer), batches ahead included.
  void Drain();
  // End of input: the partial line becomes a line, everything is matched, pending context settles.
  void Finish();
  // The stream is quiet: match what is framed and settle pending context.
  void SettlePending();
  // A partial last line waited long enough: it becomes a line and is matched (its rest, when
  // it comes, is not matched again; LineFramer::FlushPartial).
  void FlushPartial();
  bool has_partial() const { return framer_.has_partial(); }

  // Goes on with a reloaded rule set and its scratch from the next byte (StreamMatcher::Rebind
  // says what is kept); the framer, with its partial line and offsets, is untouched. Lines framed
  // but not yet matched are matched with the old rules first. Match-ahead is turned off.
  void Rebind(std::shared_ptr<const RuleSet> rules, MatchScratch* scratch);

  // The stream's positions now (stream_state.h); source id and name from the origin.
  StreamState State() const;

  // `observer` (null: none) must outlive the pipeline.
  void set_observer(BatchObserver* observer) { observer_ = observer; }
  // From now on, full batches are matched on `ahead`'s workers (match_ahead.h), which must have
  // been started with this pipeline's rules and outlive it (null: on this thread again, after a
  // Drain). For a stream read as fast as it can be (`scan`): the findings are the same either way,
  // but a batch waits in a slot until the next ones are framed. State() needs a Drain() first.
  void set_match_ahead(MatchAhead* ahead) {
    if (ahead == nullptr) Drain();
    ahead_ = ahead;
  }

  uint64_t lines() const { return matcher_.lines_seen() + lines_ahead_ + batch_.size(); }
  // Stream offset of the next byte to be fed.
  uint64_t read_offset() const { return framer_.bytes_fed(); }
  uint64_t truncated_lines() const { return framer_.truncated_lines(); }
  bool has_pending() const { return matcher_.has_pending() || !batch_.empty() || lines_ahead_ > 0; }

 private:
  // Matches the framed batch: at once, or with match-ahead by handing it to a worker.
  void MatchBatch();
  // With match-ahead: waits for the oldest batch out, settles it and frees its slot.
  void SettleOldestAhead();

  LineFramer framer_;
  LineBatch batch_;
  StreamMatcher matcher_;
  MatchScratch* scratch_;
  const StreamOrigin* const origin_;
  BatchObserver* observer_ = nullptr;
  MatchAhead* ahead_ = nullptr;
  uint64_t lines_ahead_ = 0;  // lines in batches handed to ahead_ and not settled yet
  size_t bytes_ahead_ = 0;    // their bytes
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_STREAM_PIPELINE_H_
