// Metrics: the agent's Prometheus metrics, in a prometheus-cpp Registry that the HTTP server
// serves through Serialize() (docs/design.md section 6).
//
// Everything that can be registered up front is registered when rules are bound: one
// faultline_signature_matches_total child per rule at 0 (so `increase()` and absence alerts work
// before the first hit), the build info and the number of rules. The hot path then only
// increments: CountFinding on a rule without labels indexes a vector of cached Counter pointers,
// no map lookup, no allocation after the first hit per (rule, severity). Rules with labels, and
// findings of streams with labels of their own (syslog host and app), take a slower, allocating
// path; their labels are bounded by SignatureLabels (signature_labels.h), so a
// log can never grow the series count without bound.
//
// Series are keyed by rule id, not by the rule's place in a rule set: BindRules with a reloaded
// set keeps the counters of rules whose id (and label names) did not change, starts new rules at
// 0 and removes the series of rules that are gone.
//
// Metrics owns its Registry and every family in it, its own and the alert side's (alerts());
// the Counter pointers it hands out (ForSource) live as long as it.
// Nothing fails after construction. Not thread-safe: call every method from one thread (the
// agent's event loop). It keeps no reference to the rules it was bound to.
#ifndef FAULTLINE_SINK_METRICS_H_
#define FAULTLINE_SINK_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "agent/core/counter_value.h"
#include "agent/match/finding.h"
#include "agent/match/match_errors.h"
#include "agent/rules/rule.h"
#include "agent/sink/alert_metrics.h"
#include "agent/sink/signature_labels.h"

namespace faultline {

class Metrics {
 public:
  // Registers every family. `labels` bounds label values; it is shared with the other stages
  // that name signatures, and must outlive this object.
  explicit Metrics(SignatureLabels& labels);
  // For a Metrics of its own rules: owns its SignatureLabels and binds `rules`.
  explicit Metrics(const std::vector<Rule>& rules);

  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Makes `rules` (in RuleSet order: Finding::rule_index indexes them) the counted rules, with a
  // zero child {signature=id, severity=declared} for each new rule. Binds the SignatureLabels
  // too when this object owns it; a shared one is bound by its owner.
  void BindRules(const std::vector<Rule>& rules);

  // Counts one finding under its effective severity (a downgraded hit counts as what it was
  // downgraded to). REQUIRES: the finding comes from the rules given to the constructor; a
  // rule_index out of range is ignored.
  void CountFinding(const Finding& finding);

  // The per-source counters, created on first call for `id` and the same pointers afterwards.
  // A source keeps them and increments them per line and per byte.
  struct SourceCounters {
    prometheus::Counter* lines;
    prometheus::Counter* bytes;
    prometheus::Counter* unrecognised;  // faultline_unrecognised_lines_total{source}
  };
  SourceCounters ForSource(const std::string& id);

  // Unrecognised errors (agent/discover/): brings the per-template series
  // faultline_unrecognised_template_lines_total{template_id} to `top` (the most frequent
  // templates with their counts; the caller bounds how many), removing the series of templates
  // no longer among them, and sets the number of live templates and evictions. Called at scrape
  // time, so the hot path pays nothing per template. A template that leaves `top` and comes back
  // starts a new series (a counter reset to Prometheus).
  struct TemplateCount {
    std::string id;
    uint64_t count = 0;
  };
  void SetUnrecognised(std::span<const TemplateCount> top, std::size_t templates,
                       uint64_t evictions);

  // Lines cut at max_line_bytes by framing.
  void AddTruncatedLines(uint64_t n);
  uint64_t truncated_lines() const { return static_cast<uint64_t>(truncated_->Value()); }

  // Bytes a source's file held that were never read (copytruncate truncated them first):
  // faultline_bytes_lost_total{source, reason}.
  void AddBytesLost(const std::string& source, const std::string& reason, uint64_t n);

  // The counters a checkpoint saves so that they continue after a restart: signature matches,
  // lines, bytes, truncated lines and lost bytes. Series at 0 are left out.
  std::vector<CounterValue> PersistedCounters() const;
  // Adds saved values to the counters, before anything is counted (state/counter_states.h).
  // Values of rules no longer loaded, of rules whose labels changed, and of sources for which
  // `known_source` is false are dropped: they would be series nobody counts any more.
  void RestoreCounters(const std::vector<CounterValue>& values,
                       const std::function<bool(const std::string&)>& known_source);

  // Per-file series, faultline_file_{size_bytes,read_offset_bytes,lag_bytes,lines_total,
  // rotations_total,truncations_total}{source,path}: at most kMaxFileSeries paths have series of
  // their own, the others share path="__overflow__" (their sizes and lags summed, their lines
  // counted together), so 100,000 files never become 100,000 series. A stream holds its path's
  // series while it lives (AcquireFile, ReleaseFile); the series go with the last stream of the
  // path. The pointer stays valid until released.
  static constexpr std::size_t kMaxFileSeries = 500;
  static constexpr char kOverflowPath[] = "__overflow__";
  struct FileSeries {
    prometheus::Labels labels;
    std::size_t streams = 0;  // holding it
    bool overflow = false;
    prometheus::Counter* lines = nullptr;
    prometheus::Gauge* size = nullptr;
    prometheus::Gauge* offset = nullptr;
    prometheus::Gauge* lag = nullptr;
    prometheus::Counter* rotations = nullptr;
    prometheus::Counter* truncations = nullptr;
  };
  FileSeries* AcquireFile(const std::string& source, const std::string& path);
  void ReleaseFile(FileSeries* series);
  void CountFileLines(FileSeries* series, uint64_t n);
  // What a tailer reports of one followed file, at scrape: sets the gauges and brings the event
  // counters up to the running totals.
  struct FileSample {
    std::string source;
    std::string path;
    uint64_t size = 0;
    uint64_t offset = 0;
    uint64_t rotations = 0;
    uint64_t truncations = 0;
  };
  void UpdateFiles(const std::vector<FileSample>& samples);

  // The state store's health: a checkpoint written (with how long it took) or failed, and a
  // corrupt state file moved aside at start.
  void CountCheckpoint(bool ok, double seconds);
  void CountCorruptStateFile();

  // Brings faultline_match_errors_total{engine} up to `totals`: running totals of engine errors,
  // summed over every MatchScratch in use (MatchScratch::errors()). Counters only rise, so a
  // smaller total changes nothing.
  void CountMatchErrors(const MatchErrors& totals);

  // A config reload was applied (`ok`) or rejected at `at`. The agent's start counts as the first
  // successful load for the timestamp, as in Prometheus, and not in the total.
  void CountReload(bool ok, std::chrono::system_clock::time_point at);
  void SetLoadedAt(std::chrono::system_clock::time_point at);

  // The alert side's series (alert_metrics.h), on this registry: serialised with these.
  AlertMetrics& alerts() { return *alerts_; }

  // The Prometheus text exposition format (version 0.0.4) of every family.
  std::string Serialize() const;

 private:
  static constexpr std::size_t kSeverityCount = 4;

  // The series of one rule id.
  struct RuleSeries {
    std::vector<std::string> label_names;
    // {signature, severity} children of a rule without labels, by severity; null until needed.
    prometheus::Counter* plain[kSeverityCount] = {};
    // Every child created for the rule, so that its series go when the rule goes.
    std::vector<prometheus::Counter*> children;
  };

  void RegisterFamilies();
  prometheus::Counter& PlainCounter(const std::string& id, RuleSeries& series, Severity severity);

  std::unique_ptr<SignatureLabels> owned_labels_;
  SignatureLabels& labels_;

  // The registry and its families are created once; the families live inside the registry.
  std::unique_ptr<prometheus::Registry> registry_;
  std::unique_ptr<AlertMetrics> alerts_;
  prometheus::Family<prometheus::Counter>* matches_;
  prometheus::Family<prometheus::Counter>* lines_;
  prometheus::Family<prometheus::Counter>* bytes_;
  prometheus::Counter* truncated_;
  prometheus::Family<prometheus::Counter>* bytes_lost_;
  prometheus::Counter* checkpoints_;
  prometheus::Counter* checkpoint_errors_;
  prometheus::Histogram* checkpoint_seconds_;
  prometheus::Counter* corrupt_state_files_;
  prometheus::Counter* vectorscan_errors_;
  prometheus::Counter* re2_set_errors_;
  prometheus::Gauge* rules_loaded_;
  prometheus::Family<prometheus::Counter>* unrecognised_;
  prometheus::Family<prometheus::Counter>* template_lines_;
  prometheus::Gauge* templates_;
  prometheus::Counter* template_evictions_;
  std::map<std::string, prometheus::Counter*> template_series_;  // by template id
  prometheus::Counter* reloads_ok_;
  prometheus::Counter* reloads_failed_;
  prometheus::Gauge* last_reload_ok_;
  prometheus::Gauge* last_reload_success_;

  prometheus::Family<prometheus::Gauge>* file_size_;
  prometheus::Family<prometheus::Gauge>* file_offset_;
  prometheus::Family<prometheus::Gauge>* file_lag_;
  prometheus::Family<prometheus::Counter>* file_lines_;
  prometheus::Family<prometheus::Counter>* file_rotations_;
  prometheus::Family<prometheus::Counter>* file_truncations_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<FileSeries>> files_;
  std::map<std::string, std::unique_ptr<FileSeries>> overflow_files_;  // by source
  std::size_t file_series_ = 0;  // paths with series of their own

  std::map<std::string, RuleSeries> by_id_;
  // By rule index of the bound rules: the rule's id and its series (nodes of by_id_).
  std::vector<std::pair<const std::string*, RuleSeries*>> bound_;
};

}  // namespace faultline

#endif  // FAULTLINE_SINK_METRICS_H_
