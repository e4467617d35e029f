#include "agent/match/stream_pipeline.h"

namespace faultline {

StreamPipeline::StreamPipeline(std::shared_ptr<const RuleSet> rules, FindingSink* sink,
                               MatchScratch* scratch, const FramingOptions& framing,
                               const StreamOrigin* origin, const StreamResume* resume,
                               LineWatcher* watcher)
    : framer_(framing),
      matcher_(std::move(rules), sink, origin, watcher),
      scratch_(scratch),
      origin_(origin) {
  if (resume != nullptr) {
    framer_.Resume(resume->position);
    matcher_.ResumeAtLine(resume->lines_before);
  }
}

StreamState StreamPipeline::State() const {
  StreamState state;
  if (origin_ != nullptr) {
    state.source_id = origin_->source_id;
    state.stream_name = origin_->stream_name;
  }
  state.read_offset = framer_.bytes_fed();
  state.read_line = lines();
  // Later positions first: the framer's partial line, then lines framed but not matched, then
  // lines still open in the matcher; the earliest of them is where a restart must begin.
  state.committed = framer_.resume_point();
  state.committed_line = lines();
  if (!batch_.empty()) {
    state.committed = FramerPosition{batch_.stream_begin(0), false, false};
    state.committed_line = matcher_.lines_seen();
  }
  if (const auto open = matcher_.EarliestOpenLine();
      open && open->line_number <= state.committed_line) {
    state.committed = FramerPosition{open->stream_begin, false, false};
    state.committed_line = open->line_number - 1;
  }
  state.pending_hits = matcher_.PendingHits();
  return state;
}

void StreamPipeline::Rebind(std::shared_ptr<const RuleSet> rules, MatchScratch* scratch) {
  Drain();
  ahead_ = nullptr;  // its workers match with the old rules
  matcher_.ReleaseLookback(*scratch_);
  matcher_.Rebind(std::move(rules));
  scratch_ = scratch;
}

void StreamPipeline::Feed(std::string_view bytes) {
  // Feed in slices so a batch never grows far past kBatchBytes, whatever the read size.
  while (!bytes.empty()) {
    const std::string_view slice = bytes.substr(0, kBatchBytes);
    bytes.remove_prefix(slice.size());
    framer_.Feed(slice, batch_);
    if (batch_.bytes() >= kBatchBytes) MatchBatch();
  }
}

void StreamPipeline::Drain() {
  MatchBatch();
  if (ahead_ == nullptr) return;
  while (ahead_->submitted() > 0) SettleOldestAhead();
}

void StreamPipeline::MatchBatch() {
  if (batch_.empty()) return;
  if (ahead_ == nullptr) {
    const uint64_t first_line = matcher_.lines_seen() + 1;
    if (observer_ != nullptr) observer_->OnBatch(batch_, first_line, /*matched=*/false);
    matcher_.Process(batch_, *scratch_);
    if (observer_ != nullptr) observer_->OnBatch(batch_, first_line, /*matched=*/true);
    batch_.Clear();
    return;
  }
  while (ahead_->submitted() > 0 && bytes_ahead_ + batch_.bytes() > kMaxBytesAhead) {
    SettleOldestAhead();
  }
  MatchAhead::Slot* slot = ahead_->Acquire();
  while (slot == nullptr) {
    SettleOldestAhead();
    slot = ahead_->Acquire();
  }
  if (observer_ != nullptr) {
    observer_->OnBatch(batch_, matcher_.lines_seen() + lines_ahead_ + 1, /*matched=*/false);
  }
  // The slot's batch is empty, with buffers kept from an earlier batch: framing goes on in it.
  std::swap(slot->batch, batch_);
  lines_ahead_ += slot->batch.size();
  bytes_ahead_ += slot->batch.bytes();
  ahead_->Submit(slot);
}

void StreamPipeline::SettleOldestAhead() {
  MatchAhead::Slot* slot = ahead_->Oldest();
  const uint64_t first_line = matcher_.lines_seen() + 1;
  lines_ahead_ -= slot->batch.size();
  bytes_ahead_ -= slot->batch.bytes();
  matcher_.ProcessMatched(slot->batch, slot->hits, *scratch_);
  if (observer_ != nullptr) observer_->OnBatch(slot->batch, first_line, /*matched=*/true);
  ahead_->Release(slot);
}

void StreamPipeline::Finish() {
  framer_.Finish(batch_);
  Drain();
  matcher_.Finish();
}

void StreamPipeline::FlushPartial() {
  framer_.FlushPartial(batch_);
  Drain();
}

void StreamPipeline::SettlePending() {
  Drain();
  matcher_.ReleaseLookback(*scratch_);
  matcher_.SettlePending();
}

}  // namespace faultline
