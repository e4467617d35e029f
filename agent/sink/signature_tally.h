// SignatureTally: per signature, how often it was seen since the agent started, when first and
// when last, and the worst severity it was raised at: the counts of the status page
// (/ and /api/v1/status). The last hit itself, with its context, is LatestFindings' (one copy of
// each event is kept, not two).
//
// Fed owned FindingEvents by the FindingEventBuilder, so it only sees what the hot path already
// copied. Keeps at most max_signatures signatures; beyond that the one seen longest ago is
// forgotten (and counted in forgotten()), like LatestFindings, so a label with many values cannot
// grow it without bound. Retain() drops the signatures of rules a reload removed, as their metric
// series go. First and last seen are the events' line_time (the sender's) when they have one, else
// when they were observed.
//
// The lifecycle tracker of issue 9 owns the persistent record (first seen across restarts,
// state); this tally is what one agent process saw. Not thread-safe: the agent's event loop.
// Nothing here fails.
#ifndef FAULTLINE_SINK_SIGNATURE_TALLY_H_
#define FAULTLINE_SINK_SIGNATURE_TALLY_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <set>
#include <string>
#include <unordered_map>

#include "agent/rules/finding_event.h"
#include "agent/sink/finding_events.h"

namespace faultline {

struct SignatureCount {
  std::string signature;
  std::string rule_id;
  uint64_t count = 0;
  Severity worst_severity = Severity::kInfo;
  std::chrono::system_clock::time_point first_seen;
  std::chrono::system_clock::time_point last_seen;
};

class SignatureTally : public FindingEventSink {
 public:
  explicit SignatureTally(std::size_t max_signatures = 10000) : max_(max_signatures) {}

  void OnEvent(const FindingEvent& event) override;

  // Forgets every signature whose rule id is not in `rule_ids`.
  void Retain(const std::set<std::string, std::less<>>& rule_ids);

  // Most recently seen first.
  const std::list<SignatureCount>& counts() const { return counts_; }
  uint64_t forgotten() const { return forgotten_; }

 private:
  const std::size_t max_;
  std::list<SignatureCount> counts_;
  std::unordered_map<std::string, std::list<SignatureCount>::iterator> by_signature_;
  uint64_t forgotten_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_SINK_SIGNATURE_TALLY_H_
