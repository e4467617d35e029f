// Seen and SeenFindings: what a matcher test reads of the findings a StreamMatcher reports (rule,
// severity, line, text, labels), copied out of each Finding so it outlives the batch.
#ifndef FAULTLINE_TESTS_UNIT_MATCH_SEEN_FINDINGS_H_
#define FAULTLINE_TESTS_UNIT_MATCH_SEEN_FINDINGS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "agent/match/finding.h"

namespace faultline {

struct Seen {
  std::string rule;
  Severity severity;
  uint64_t line;
  std::string text;
  std::vector<std::string> labels;
  bool operator==(const Seen&) const = default;
};

inline void PrintTo(const Seen& s, std::ostream* os) {
  *os << s.rule << "@" << s.line << "[" << SeverityName(s.severity) << "] " << s.text;
}

class SeenFindings : public FindingSink {
 public:
  void OnFinding(const Finding& f) override {
    seen.push_back(Seen{f.rule->id,
                        f.severity,
                        f.line_number,
                        std::string(f.text),
                        {f.label_values.begin(), f.label_values.end()}});
  }
  std::vector<Seen> seen;
};

}  // namespace faultline

#endif  // FAULTLINE_TESTS_UNIT_MATCH_SEEN_FINDINGS_H_
