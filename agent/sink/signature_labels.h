// SignatureLabels: turns the raw label captures of a finding into the bounded labels of its
// signature (a rule id plus its bounded labels, docs/design.md section 5), the same way for every
// stage that names a signature: metrics, the owned finding events, and later the tracker.
//
// A capture is sanitised to valid UTF-8 and cut to kMaxLabelValueBytes; an empty capture becomes
// `unknown`; at most the rule's max_label_values distinct values are kept per label, later new
// values become `__overflow__`. So a log can never grow the number of signatures without bound.
// A finding's stream may carry labels of its own (StreamOrigin::labels: a syslog message's host
// and app); they follow the rule's labels, bounded the same way per rule (a rule label of the
// same name wins). Resolve is idempotent: asking twice for one finding gives the same labels, so
// several stages may resolve the same finding and agree.
//
// State is keyed by rule id, so a reloaded rule set keeps the values its rules have seen (Bind).
// Not thread-safe: the agent's event loop. Nothing fails after construction.
#ifndef FAULTLINE_SINK_SIGNATURE_LABELS_H_
#define FAULTLINE_SINK_SIGNATURE_LABELS_H_

#include <cstddef>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "agent/match/finding.h"
#include "agent/rules/rule.h"

namespace faultline {

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

class SignatureLabels {
 public:
  static constexpr char kUnknownLabelValue[] = "unknown";
  static constexpr char kOverflowLabelValue[] = "__overflow__";
  // A label names a thing (a library, a GPU), it does not carry a message.
  static constexpr std::size_t kMaxLabelValueBytes = 128;

  // Label names a rule label may not take: the metric's own labels.
  static bool IsReservedName(const std::string& name);

  // Makes `rules` (in RuleSet order, which Finding::rule_index indexes) the current rules. A rule
  // whose id and label names are unchanged keeps the values seen so far.
  void Bind(const std::vector<Rule>& rules);

  // The bounded labels of `finding`, in the order of its rule's labels (reserved or invalid names
  // left out); empty for a rule without labels or a rule_index out of range. Valid until the
  // next call.
  const LabelPairs& Resolve(const Finding& finding);

  // Counts `value` as seen for label `name` of rule `rule_id` (labels restored from saved
  // counters at start), so the cap holds across restarts. Unknown rules and names are ignored.
  void Remember(const std::string& rule_id, const std::string& name, const std::string& value);

  // "rule.id" or "rule.id{name=value,...}": the signature key of a resolved finding.
  static std::string Key(const std::string& rule_id, const LabelPairs& labels);

 private:
  struct Label {
    std::string name;
    std::size_t index = 0;  // in Rule::labels and Finding::label_values
    std::unordered_set<std::string> seen;
  };
  struct RuleLabels {
    int max_label_values = Rule::kDefaultMaxLabelValues;
    std::vector<Label> labels;
    // Values seen per stream label name.
    std::map<std::string, std::unordered_set<std::string>, std::less<>> stream_seen;
  };

  // `raw` sanitised, cut and bounded by `seen`: unknown when empty, overflow past the cap.
  static std::string Bounded(std::string_view raw, std::unordered_set<std::string>& seen,
                             int max_label_values);

  std::map<std::string, RuleLabels> by_id_;
  std::vector<RuleLabels*> bound_;  // by rule index
  LabelPairs resolved_;
};

}  // namespace faultline

#endif  // FAULTLINE_SINK_SIGNATURE_LABELS_H_
