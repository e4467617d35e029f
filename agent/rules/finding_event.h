// FindingEvent: the owned record of one finding, for the stages after the hot path (lifecycle
// tracking, alert policy, the state store, the admin API). Unlike Finding, whose views live only
// for one OnFinding call, an event owns every byte: it can be kept, persisted and moved to
// another thread.
//
// Its text is already safe to show: valid UTF-8, bounded (kMaxTextBytes per line, kMaxContextLines
// lines), and its labels are the signature's bounded labels. A plain value; copyable; no
// invariants beyond the bounds its builder (agent/sink/finding_events.h) keeps.
#ifndef FAULTLINE_RULES_FINDING_EVENT_H_
#define FAULTLINE_RULES_FINDING_EVENT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/rules/rule.h"

namespace faultline {

struct FindingEvent {
  static constexpr std::size_t kMaxTextBytes = 4096;
  static constexpr std::size_t kMaxContextLines = 3;

  std::string rule_id;
  // The rule id plus its bounded labels ("rule.id" or "rule.id{lib=aio}"): the key of alerts,
  // lifecycle records and metrics series.
  std::string signature;
  std::vector<std::pair<std::string, std::string>> labels;
  Severity severity = Severity::kError;
  std::string source_id;    // the config's source id
  uint64_t stream_id = 0;   // unique per agent run; several streams can share a source
  std::string stream_name;  // a path, a peer address, "-" for stdin
  uint64_t line_number = 0;
  std::chrono::system_clock::time_point observed_at;
  // When the line was written, as its source said (a syslog header's timestamp, bounded by
  // SyslogStreams), when it did: the signature's first and last seen then follow the sender.
  std::optional<std::chrono::system_clock::time_point> line_time;
  std::string text;  // the hit line, cut to kMaxTextBytes
  bool text_truncated = false;
  std::vector<std::string> context_before;  // oldest first
};

}  // namespace faultline

#endif  // FAULTLINE_RULES_FINDING_EVENT_H_
