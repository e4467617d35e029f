// Finding: one line that a rule recognised, at the severity its context decided.
//
// Findings are handed to a FindingSink during a StreamMatcher call; the string views point into
// the matcher's buffers and are valid only for the duration of the OnFinding call. A sink that
// keeps a finding copies what it needs (FindingEvent, agent/rules/finding_event.h, is the owned
// form that crosses threads and is persisted).
#ifndef FAULTLINE_MATCH_FINDING_H_
#define FAULTLINE_MATCH_FINDING_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/rules/rule.h"

namespace faultline {

// Where a stream's lines come from; owned by whoever owns the stream, for its lifetime.
struct StreamOrigin {
  std::string source_id;    // the config's source id
  uint64_t stream_id = 0;   // unique per agent run
  std::string stream_name;  // a path, a peer, "-" for stdin
  // Labels of the stream itself (a syslog message's host and app: name, raw value). They join
  // the rule's own labels on every finding of the stream; SignatureLabels bounds them.
  std::vector<std::pair<std::string, std::string>> labels = {};
};

struct Finding {
  const Rule* rule = nullptr;
  const StreamOrigin* origin = nullptr;  // null when the caller did not say (unit tests, scan)
  uint32_t rule_index = 0;               // index of `rule` in its RuleSet
  Severity severity = Severity::kError;
  uint64_t line_number = 0;  // 1-based, in the stream the matcher reads
  // The hit line (the first line of a sequence), after framing. A hit whose severity waited for
  // later lines keeps only a bounded preview of its line (StreamMatcher::kPreviewBytes), so
  // `text` may be a prefix of the line; `text_truncated` says so.
  std::string_view text;
  bool text_truncated = false;
  // Up to kContextLines lines just before the hit, oldest first, each at most kPreviewBytes: the
  // lines an alert shows above the hit. Fewer when the stream has fewer.
  static constexpr size_t kContextLines = 3;
  std::span<const std::string_view> context_before;
  // Values of rule->labels, in the same order, as raw bytes of the line; a label whose pattern did
  // not match the line is empty. Sinks sanitise and bound them before they become labels.
  std::span<const std::string> label_values;
  // When the line was written, as its source said (a syslog header; Unix milliseconds), when it
  // did. A line's own text may also carry a time: the alert lifecycle reads it when this is none.
  std::optional<int64_t> line_time_ms;
};

// Receives findings from a StreamMatcher. Called on the matcher's thread; must not throw.
class FindingSink {
 public:
  virtual ~FindingSink() = default;
  virtual void OnFinding(const Finding& finding) = 0;
};

// Hands every finding to each of its sinks, in the order they were added: metrics first, then
// the stages that follow (lifecycle tracking, alert policy). Adding a stage is one Add call; the
// matcher and the sinks already there do not change. Does not own the sinks.
class FindingFanout : public FindingSink {
 public:
  void Add(FindingSink* sink) { sinks_.push_back(sink); }
  void OnFinding(const Finding& finding) override {
    for (FindingSink* sink : sinks_) sink->OnFinding(finding);
  }

 private:
  std::vector<FindingSink*> sinks_;
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_FINDING_H_
