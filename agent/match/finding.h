// Finding: one line that a rule recognised, at the severity its context decided.
//
// Findings are handed to a FindingSink during a StreamMatcher call; the string views point into
// the matcher's buffers and are valid only for the duration of the OnFinding call. A sink that
// keeps a finding copies what it needs.
#ifndef FAULTLINE_MATCH_FINDING_H_
#define FAULTLINE_MATCH_FINDING_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "agent/rules/rule.h"

namespace faultline {

struct Finding {
  const Rule* rule = nullptr;
  uint32_t rule_index = 0;  // index of `rule` in its RuleSet
  Severity severity = Severity::kError;
  uint64_t line_number = 0;  // 1-based, in the stream the matcher reads
  std::string_view text;     // the hit line (the first line of a sequence), after framing
  // Values of rule->labels, in the same order, as raw bytes of the line; a label whose pattern did
  // not match the line is empty. Sinks sanitise and bound them before they become labels.
  std::span<const std::string> label_values;
};

// Receives findings from a StreamMatcher. Called on the matcher's thread; must not throw.
class FindingSink {
 public:
  virtual ~FindingSink() = default;
  virtual void OnFinding(const Finding& finding) = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_FINDING_H_
