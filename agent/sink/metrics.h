// Metrics: the agent's Prometheus metrics, in a prometheus-cpp Registry that the HTTP server
// serves through Serialize() (DESIGN.md section 6).
//
// Everything that can be registered up front is registered at construction: one
// faultline_signature_matches_total child per rule at 0 (so `increase()` and absence alerts work
// before the first hit), the build info and the number of rules. The hot path then only
// increments: CountFinding on a rule without labels indexes a vector of cached Counter pointers,
// no map lookup, no allocation after the first hit per (rule, severity). Rules with labels take a
// slower, allocating path; their label values are sanitised to valid UTF-8, bounded in length,
// and capped at the rule's max_label_values distinct values per label (later values count under
// `__overflow__`, an empty capture under `unknown`), so a log can never grow the series count
// without bound.
//
// Metrics owns its Registry; the Counter pointers it hands out (ForSource) live as long as it.
// Nothing fails after construction. Not thread-safe: call every method from one thread (the
// agent's event loop). It keeps no reference to the rules it was built from.
#ifndef FAULTLINE_SINK_METRICS_H_
#define FAULTLINE_SINK_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "agent/match/finding.h"
#include "agent/rules/rule.h"

namespace faultline {

class Metrics {
 public:
  // Label values for a capture that matched nothing, and for values beyond a rule's cap.
  static constexpr char kUnknownLabelValue[] = "unknown";
  static constexpr char kOverflowLabelValue[] = "__overflow__";
  // A capture is cut (at a UTF-8 character boundary) to this many bytes: a label names a thing
  // (a library, a GPU), it does not carry a message.
  static constexpr std::size_t kMaxLabelValueBytes = 128;

  // Registers every family, with a zero child {signature=id, severity=declared} per rule.
  // `rules` are in RuleSet order: Finding::rule_index indexes them.
  explicit Metrics(const std::vector<Rule>& rules);

  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Counts one finding under its effective severity (a downgraded hit counts as what it was
  // downgraded to). REQUIRES: the finding comes from the rules given to the constructor; a
  // rule_index out of range is ignored.
  void CountFinding(const Finding& finding);

  // The per-source counters, created on first call for `id` and the same pointers afterwards.
  // A source keeps them and increments them per line and per byte.
  struct SourceCounters {
    prometheus::Counter* lines;
    prometheus::Counter* bytes;
  };
  SourceCounters ForSource(const std::string& id);

  // Lines cut at max_line_bytes by framing.
  void AddTruncatedLines(uint64_t n);

  // The Prometheus text exposition format (version 0.0.4) of every family.
  std::string Serialize() const;

 private:
  static constexpr std::size_t kSeverityCount = 4;

  // What CountFinding needs of a rule, copied so the rules need not outlive this object.
  struct RuleMetrics {
    std::string id;
    int max_label_values = Rule::kDefaultMaxLabelValues;
    // Per usable label: its name, its index in Rule::labels / Finding::label_values, and the
    // distinct values seen so far (at most max_label_values).
    struct Label {
      std::string name;
      std::size_t index = 0;
      std::unordered_set<std::string> seen;
    };
    std::vector<Label> labels;
  };

  void CountLabelled(RuleMetrics& rule, const Finding& finding);
  prometheus::Counter& PlainCounter(uint32_t rule_index, Severity severity);

  // The registry and its families are created once; the families live inside the registry.
  std::unique_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* matches_;
  prometheus::Family<prometheus::Counter>* lines_;
  prometheus::Family<prometheus::Counter>* bytes_;
  prometheus::Counter* truncated_;

  std::vector<RuleMetrics> rules_;
  // [rule_index * kSeverityCount + severity]: the {signature, severity} child of a rule without
  // labels; null until that severity is first seen.
  std::vector<prometheus::Counter*> plain_counters_;
};

}  // namespace faultline

#endif  // FAULTLINE_SINK_METRICS_H_
