// Owned finding events from the hot path's findings, and a first consumer of them.
//
// FindingEventBuilder is a FindingSink in the agent's fan-out: for every finding it builds a
// FindingEvent (copying, sanitising and bounding what it keeps) and hands it to its
// FindingEventSinks. Building costs allocations, so it sits after metrics and only in agents that
// have event sinks; the hot path before it stays allocation-free.
//
// LatestFindings keeps the newest event per signature (at most max_signatures of them; beyond that
// the signature seen longest ago is forgotten), which the admin API serves as the "last hit with
// its context" of every signature.
//
// Not thread-safe: the agent's event loop. Nothing here fails.
#ifndef FAULTLINE_SINK_FINDING_EVENTS_H_
#define FAULTLINE_SINK_FINDING_EVENTS_H_

#include <cstddef>
#include <functional>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/core/clock.h"
#include "agent/match/finding.h"
#include "agent/rules/finding_event.h"
#include "agent/sink/signature_labels.h"

namespace faultline {

class FindingEventSink {
 public:
  virtual ~FindingEventSink() = default;
  virtual void OnEvent(const FindingEvent& event) = 0;
};

class FindingEventBuilder : public FindingSink {
 public:
  // `labels` must outlive the builder; it is the agent's one SignatureLabels, so events name the
  // same signatures as the metrics.
  explicit FindingEventBuilder(SignatureLabels& labels, WallClock clock = SystemNow);

  void Add(FindingEventSink* sink) { sinks_.push_back(sink); }

  void OnFinding(const Finding& finding) override;

 private:
  SignatureLabels& labels_;
  const WallClock clock_;
  std::vector<FindingEventSink*> sinks_;
};

// The latest event of each signature, most recently seen first.
class LatestFindings : public FindingEventSink {
 public:
  explicit LatestFindings(std::size_t max_signatures = 10000) : max_(max_signatures) {}

  void OnEvent(const FindingEvent& event) override;

  const std::list<FindingEvent>& events() const { return events_; }
  // The latest event of `signature`, or null.
  const FindingEvent* Find(const std::string& signature) const;
  uint64_t forgotten() const { return forgotten_; }

 private:
  const std::size_t max_;
  std::list<FindingEvent> events_;
  std::unordered_map<std::string, std::list<FindingEvent>::iterator> by_signature_;
  uint64_t forgotten_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_SINK_FINDING_EVENTS_H_
