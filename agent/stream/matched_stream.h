// MatchedStream: the consumer of one stream of any source in the daemon. It frames and matches the
// stream's bytes (a StreamPipeline), hands the findings to the agent's fan-out, counts the
// stream's lines, bytes, cut lines and unrecognised lines on its source's counters, and, with a
// StreamWatcher (the alert side), shows it every batch and the stream's end.
//
// Restart replay: a stream resumed from a checkpoint (Options::resumed) starts reading at the
// checkpoint's committed position, so it reads again the lines between there and where the
// checkpoint's stream had read (read_line): their lines, bytes and findings were counted before
// the restart, except the findings still pending then, and only those are let through to the
// fan-out. From read_line on everything counts. A file stream ignores everything once the agent
// is stopping (Options::frozen): its position was saved as it stood, and what it holds is read
// again after the restart.
//
// Ownership: the source owns the stream. Everything Options points to (findings, metrics,
// discovery, watcher, live, frozen) is not owned and must outlive it; the per-file series are
// released when it goes. Event loop only, like every StreamConsumer. Nothing here throws.
#ifndef FAULTLINE_STREAM_MATCHED_STREAM_H_
#define FAULTLINE_STREAM_MATCHED_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "agent/discover/discovery.h"
#include "agent/match/finding.h"
#include "agent/match/rule_set.h"
#include "agent/match/stream_pipeline.h"
#include "agent/match/stream_state.h"
#include "agent/sink/metrics.h"
#include "agent/source/line_times.h"
#include "agent/stream/resumable_consumer.h"

namespace faultline {

// What the alert side sees of every stream: its batches as they are matched (package versions,
// lines after a hit) and its end, after the stream's last findings.
class StreamWatcher {
 public:
  virtual ~StreamWatcher() = default;
  virtual void OnBatch(const StreamOrigin& origin, const LineBatch& batch, uint64_t first_line,
                       bool matched) = 0;
  virtual void OnStreamEnd(const StreamOrigin& origin) = 0;
};

class MatchedStream;

// The streams alive now, so that a reload can rebind every one of them.
class LiveStreams {
 public:
  // Every live stream goes on with `rules` (MatchedStream::Rebind).
  void Rebind(const std::shared_ptr<const RuleSet>& rules, MatchScratch* scratch);
  std::size_t size() const { return streams_.size(); }

 private:
  friend class MatchedStream;
  std::unordered_set<MatchedStream*> streams_;
};

class MatchedStream : public ResumableConsumer, private FindingSink, private BatchObserver {
 public:
  // What every stream of an agent shares; the rules and scratch are those in use when the stream
  // starts (a reload rebinds it later).
  struct Wiring {
    std::shared_ptr<const RuleSet> rules;
    MatchScratch* scratch = nullptr;
    FramingOptions framing;
    FindingSink* findings = nullptr;  // the agent's fan-out
    Metrics* metrics = nullptr;
    Discovery* discovery = nullptr;    // records the stream's unrecognised errors; null: none
    StreamWatcher* watcher = nullptr;  // the alert side; null without alerts
    LiveStreams* live = nullptr;       // null: the stream is never rebound
  };
  // A file stream resumed from a checkpoint, or handed over by a reload.
  struct Resume {
    uint64_t offset = 0;  // where reading starts when nothing was saved
    const StreamState* saved = nullptr;
    const bool* frozen = nullptr;  // true once the agent is stopping: the stream ignores all
  };
  struct Options {
    Wiring wiring;
    StreamOrigin origin;
    Metrics::SourceCounters counters{};
    Metrics::FileSeries* file = nullptr;  // per-file series of a file stream, else null
    Resume resume{};
  };

  explicit MatchedStream(Options options);
  ~MatchedStream() override;
  MatchedStream(const MatchedStream&) = delete;
  MatchedStream& operator=(const MatchedStream&) = delete;

  // A reload: the same stream, framer and pending context, matched by the new rules.
  void Rebind(const std::shared_ptr<const RuleSet>& rules, MatchScratch* scratch);

  void OnBytes(std::string_view bytes) override;
  // Each run's lines get its time before they are framed: a batch filled while framing them is
  // matched at once (line_times.h).
  void OnTimedBytes(std::string_view bytes, std::span<const TimedRun> runs) override;
  void OnQuiet() override;
  void OnPartialTimeout() override;
  void OnEnd() override;

  StreamState State() const override;

 private:
  static StreamResume ResumeAt(const Resume& resume);

  void Drained();
  // FindingSink: what the pipeline finds, less what was counted before a restart, with the time
  // its line was written when the source said.
  void OnFinding(const Finding& finding) override;
  bool WasPending(const Finding& finding) const;
  bool Frozen() const { return frozen_ != nullptr && *frozen_; }
  // Brings the source's counters up to what the pipeline has read, less the replayed part.
  void Account();
  void OnBatch(const LineBatch& batch, uint64_t first_line, bool matched) override;

  const StreamOrigin origin_;
  FindingSink* const findings_;
  const StreamResume resume_;
  std::optional<StreamDiscovery> unrecognised_;
  StreamPipeline pipeline_;
  LineTimes line_times_;
  Metrics& metrics_;
  const Metrics::SourceCounters counters_;
  const bool* const frozen_;
  Metrics::FileSeries* const file_;
  uint64_t counted_lines_;
  uint64_t counted_offset_;
  uint64_t counted_truncated_ = 0;
  // A resumed stream: lines up to replay_line_ were counted before the restart, bytes up to
  // replay_offset_, and of the findings on those lines only pending_ were not.
  const uint64_t replay_line_;
  const uint64_t replay_offset_;
  std::vector<PendingHitState> pending_;
  uint64_t counted_unrecognised_ = 0;
  LiveStreams* const live_;
  StreamWatcher* const watcher_;
};

}  // namespace faultline

#endif  // FAULTLINE_STREAM_MATCHED_STREAM_H_
