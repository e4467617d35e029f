#include "agent/stream/matched_stream.h"

#include <algorithm>
#include <utility>

namespace faultline {

void LiveStreams::Rebind(const std::shared_ptr<const RuleSet>& rules, MatchScratch* scratch) {
  for (MatchedStream* stream : streams_) stream->Rebind(rules, scratch);
}

MatchedStream::MatchedStream(Options options)
    : origin_(std::move(options.origin)),
      findings_(options.wiring.findings),
      resume_(ResumeAt(options.resume)),
      unrecognised_(options.wiring.discovery == nullptr
                        ? std::nullopt
                        : std::make_optional<StreamDiscovery>(
                              *options.wiring.discovery, origin_.source_id, origin_.stream_name,
                              options.wiring.rules->max_explain_window())),
      pipeline_(options.wiring.rules, this, options.wiring.scratch, options.wiring.framing,
                &origin_, &resume_, unrecognised_ ? &*unrecognised_ : nullptr),
      metrics_(*options.wiring.metrics),
      counters_(options.counters),
      frozen_(options.resume.frozen),
      file_(options.file),
      counted_lines_(options.resume.saved != nullptr ? options.resume.saved->read_line : 0),
      counted_offset_(options.resume.saved != nullptr
                          ? std::max(options.resume.saved->read_offset, options.resume.offset)
                          : options.resume.offset),
      replay_line_(options.resume.saved != nullptr ? options.resume.saved->read_line : 0),
      replay_offset_(counted_offset_),
      live_(options.wiring.live),
      watcher_(options.wiring.watcher) {
  if (options.resume.saved != nullptr) pending_ = options.resume.saved->pending_hits;
  if (live_ != nullptr) live_->streams_.insert(this);
  if (watcher_ != nullptr) pipeline_.set_observer(this);
}

MatchedStream::~MatchedStream() {
  if (live_ != nullptr) live_->streams_.erase(this);
  metrics_.ReleaseFile(file_);
}

void MatchedStream::Rebind(const std::shared_ptr<const RuleSet>& rules, MatchScratch* scratch) {
  pipeline_.Rebind(rules, scratch);
  if (unrecognised_) unrecognised_->SetExplainWindow(rules->max_explain_window());
}

void MatchedStream::OnBytes(std::string_view bytes) {
  if (Frozen()) return;
  if (!line_times_.empty()) line_times_.Begin(pipeline_.lines() + 1, std::nullopt);
  pipeline_.Feed(bytes);
  Drained();
}

void MatchedStream::OnTimedBytes(std::string_view bytes, std::span<const TimedRun> runs) {
  if (Frozen()) return;
  std::size_t begin = 0;
  for (const TimedRun& run : runs) {
    line_times_.Begin(pipeline_.lines() + 1, run.time_ms);
    pipeline_.Feed(bytes.substr(begin, run.end - begin));
    begin = run.end;
  }
  if (begin < bytes.size()) {
    line_times_.Begin(pipeline_.lines() + 1, std::nullopt);
    pipeline_.Feed(bytes.substr(begin));
  }
  Drained();
}

void MatchedStream::OnQuiet() {
  if (Frozen()) return;
  if (pipeline_.has_pending() || (unrecognised_ && unrecognised_->held() > 0)) {
    pipeline_.SettlePending();
    Account();
  }
}

void MatchedStream::OnPartialTimeout() {
  if (Frozen() || !pipeline_.has_partial()) return;
  pipeline_.FlushPartial();
  Account();
}

void MatchedStream::OnEnd() {
  if (Frozen()) return;
  pipeline_.Finish();
  Account();
  // After Finish: the run's last findings decide whether it was successful.
  if (watcher_ != nullptr) watcher_->OnStreamEnd(origin_);
}

StreamState MatchedStream::State() const {
  StreamState state = pipeline_.State();
  if (state.read_line < replay_line_) {
    // Still reading again what was counted: the saved pending hits not reached yet stay
    // pending, and the lines up to replay_line_ stay counted.
    for (const PendingHitState& hit : pending_) {
      if (hit.line_number > state.read_line) state.pending_hits.push_back(hit);
    }
    state.read_line = replay_line_;
  }
  state.read_offset = counted_offset_;
  return state;
}

StreamResume MatchedStream::ResumeAt(const Resume& resume) {
  if (resume.saved != nullptr) {
    return StreamResume{resume.saved->committed, resume.saved->committed_line};
  }
  return StreamResume{FramerPosition{resume.offset, false, false}, 0};
}

void MatchedStream::Drained() {
  pipeline_.Drain();  // a daemon reports within milliseconds, not when a batch fills
  Account();
  // Every line so far has had its findings: their times are no longer needed.
  if (!line_times_.empty() && !pipeline_.has_pending()) line_times_.Clear();
}

void MatchedStream::OnFinding(const Finding& finding) {
  if (finding.line_number <= replay_line_ && !WasPending(finding)) return;
  if (!line_times_.empty()) {
    if (const std::optional<int64_t> at = line_times_.At(finding.line_number)) {
      Finding timed = finding;
      timed.line_time_ms = at;
      findings_->OnFinding(timed);
      return;
    }
  }
  findings_->OnFinding(finding);
}

bool MatchedStream::WasPending(const Finding& finding) const {
  return std::any_of(pending_.begin(), pending_.end(), [&](const PendingHitState& hit) {
    return hit.line_number == finding.line_number && hit.rule_id == finding.rule->id;
  });
}

void MatchedStream::Account() {
  const uint64_t lines = pipeline_.lines();
  if (lines > counted_lines_) {
    counters_.lines->Increment(static_cast<double>(lines - counted_lines_));
    metrics_.CountFileLines(file_, lines - counted_lines_);
    counted_lines_ = lines;
  }
  const uint64_t offset = pipeline_.read_offset();
  if (offset > counted_offset_) {
    counters_.bytes->Increment(static_cast<double>(offset - counted_offset_));
    counted_offset_ = offset;
  }
  // A line cut while reading again was counted before, unless it lies past the old read point
  // (a cut line straddling that point is counted: the framer counts cuts, not their places).
  const uint64_t truncated = pipeline_.truncated_lines();
  if (truncated != counted_truncated_ && offset > replay_offset_) {
    metrics_.AddTruncatedLines(truncated - counted_truncated_);
  }
  counted_truncated_ = truncated;
  if (unrecognised_) {
    // Lines read again after a restart were counted before it (a line held for its explain
    // window across the old read point counts as it is released).
    const uint64_t n = unrecognised_->unrecognised_lines();
    if (lines > replay_line_) {
      counters_.unrecognised->Increment(static_cast<double>(n - counted_unrecognised_));
    }
    counted_unrecognised_ = n;
  }
}

void MatchedStream::OnBatch(const LineBatch& batch, uint64_t first_line, bool matched) {
  watcher_->OnBatch(origin_, batch, first_line, matched);
}

}  // namespace faultline
