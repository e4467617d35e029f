// MatchAhead: runs the primary multi-pattern pass (PatternSet::Match) of one stream's batches on
// worker threads, ahead of the stream's own thread, which frames the bytes and then settles each
// matched batch in order (StreamMatcher::ProcessMatched).
//
// Why: on a finished log (`faultline scan`) the primary pass is most of the work (about 60% with
// the bundled pack, nearly all of it Vectorscan), and a batch's primary hits depend on that batch
// alone. Everything that spans batches (context windows, sequences, pending hits, discovery)
// stays on the stream's thread, in line order, so the findings are exactly those of matching in
// line (tests/unit/match/match_ahead_test.cc compares both on the corpus).
//
// Use: Acquire() an empty batch, fill it, Submit() it; Oldest() gives back the oldest submitted
// batch once matched, in submission order; Release() returns it to the pool. At most `depth`
// batches are out at once; StreamPipeline also bounds the bytes out (kMaxBytesAhead), and a
// released slot keeps at most kRetainedSlotBytes, so huge lines do not cost one copy per slot.
//
// Ownership: the PatternSet must outlive the MatchAhead; each worker owns its MatchScratch.
// Threading: Acquire, Submit, Oldest and Release are called from one thread, the stream's;
// workers touch only the batch they were handed. The destructor waits for the workers.
// Can fail: starting a thread (std::system_error) at construction, which `scan` treats like
// having one CPU (MatchAhead::Start returns null). Matching itself never throws; a worker's
// engine errors fall back to RE2 as in PatternSet::Match.
#ifndef FAULTLINE_MATCH_MATCH_AHEAD_H_
#define FAULTLINE_MATCH_MATCH_AHEAD_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/framing/line_batch.h"
#include "agent/match/pattern_set.h"

namespace faultline {

class MatchAhead {
 public:
  // Buffers a released slot may keep (a 64 KiB batch needs ~64 KiB; a batch of huge lines more).
  static constexpr size_t kRetainedSlotBytes = 256 * 1024;
  // A batch and, once matched, its primary hits.
  struct Slot {
    LineBatch batch;
    std::vector<PatternSet::Hit> hits;
    bool matched = false;  // guarded by MatchAhead::mutex_ while submitted
  };

  // `threads` workers (at least 1) with `depth` slots (at least threads + 1, so the stream's
  // thread can fill one while every worker matches another). Null when a thread cannot start.
  static std::unique_ptr<MatchAhead> Start(const PatternSet& patterns, size_t threads,
                                           size_t depth);
  ~MatchAhead();
  MatchAhead(const MatchAhead&) = delete;
  MatchAhead& operator=(const MatchAhead&) = delete;

  // An empty slot; null when all `depth` slots are out (submitted, or held by the caller).
  Slot* Acquire();
  // Hands `slot` (from Acquire, filled) to the workers.
  void Submit(Slot* slot);
  // The oldest submitted slot, once a worker has matched it (waits for that); null when nothing
  // is submitted. It stays the caller's until Release.
  Slot* Oldest();
  // Returns `slot` (from Oldest) to the pool, its buffers kept for the next batch.
  void Release(Slot* slot);

  size_t submitted() const { return submitted_.size(); }

 private:
  explicit MatchAhead(const PatternSet& patterns, size_t depth);
  void Work();

  const PatternSet& patterns_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot*> free_;      // the stream's thread only
  std::deque<Slot*> submitted_;  // the stream's thread only: submission order

  std::mutex mutex_;
  std::condition_variable work_ready_;  // workers wait on it
  std::condition_variable matched_;     // the stream's thread waits on it
  std::deque<Slot*> queue_;             // submitted, not yet taken by a worker
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_MATCH_AHEAD_H_
