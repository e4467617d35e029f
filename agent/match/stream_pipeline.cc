#include "agent/match/stream_pipeline.h"

namespace faultline {

StreamPipeline::StreamPipeline(std::shared_ptr<const RuleSet> rules, FindingSink* sink,
                               MatchScratch* scratch, size_t max_line_bytes,
                               const StreamOrigin* origin)
    : framer_(max_line_bytes), matcher_(std::move(rules), sink, origin), scratch_(scratch) {}

void StreamPipeline::Feed(std::string_view bytes) {
  // Feed in slices so a batch never grows far past kBatchBytes, whatever the read size.
  while (!bytes.empty()) {
    const std::string_view slice = bytes.substr(0, kBatchBytes);
    bytes.remove_prefix(slice.size());
    framer_.Feed(slice, batch_);
    if (batch_.bytes() >= kBatchBytes) Drain();
  }
}

void StreamPipeline::Drain() {
  if (batch_.empty()) return;
  matcher_.Process(batch_, *scratch_);
  batch_.Clear();
}

void StreamPipeline::Finish() {
  framer_.Finish(batch_);
  Drain();
  matcher_.Finish();
}

void StreamPipeline::SettlePending() {
  Drain();
  matcher_.SettlePending();
}

}  // namespace faultline
