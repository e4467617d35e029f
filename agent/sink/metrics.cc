#include "agent/sink/metrics.h"

#include <prometheus/check_names.h>
#include <prometheus/text_serializer.h>

#include <string_view>
#include <utility>

#include "agent/core/version.h"
#include "agent/framing/utf8.h"

namespace faultline {
namespace {

// Labels of faultline_signature_matches_total itself; a rule label may not reuse them.
constexpr char kSignatureLabel[] = "signature";
constexpr char kSeverityLabel[] = "severity";

std::size_t SeverityIndex(Severity severity) { return static_cast<std::size_t>(severity); }

}  // namespace

Metrics::Metrics(const std::vector<Rule>& rules)
    : owned_labels_(std::make_unique<SignatureLabels>()),
      labels_(*owned_labels_),
      registry_(std::make_unique<prometheus::Registry>()) {
  RegisterFamilies();
  BindRules(rules);
}

Metrics::Metrics(SignatureLabels& labels)
    : labels_(labels), registry_(std::make_unique<prometheus::Registry>()) {
  RegisterFamilies();
}

void Metrics::RegisterFamilies() {
  matches_ = &prometheus::BuildCounter()
                  .Name("faultline_signature_matches_total")
                  .Help("Lines recognised as a known failure, by rule id and effective severity.")
                  .Register(*registry_);
  lines_ = &prometheus::BuildCounter()
                .Name("faultline_lines_total")
                .Help("Lines read, by source.")
                .Register(*registry_);
  bytes_ = &prometheus::BuildCounter()
                .Name("faultline_bytes_total")
                .Help("Bytes read, by source.")
                .Register(*registry_);
  truncated_ = &prometheus::BuildCounter()
                    .Name("faultline_lines_truncated_total")
                    .Help("Lines cut at framing.max_line_bytes.")
                    .Register(*registry_)
                    .Add({});
  prometheus::Family<prometheus::Counter>& match_errors =
      prometheus::BuildCounter()
          .Name("faultline_match_errors_total")
          .Help(
              "Matching engine errors: batches Vectorscan could not scan, lines the RE2::Set "
              "could not match. Their lines were matched by RE2 pattern by pattern instead, so "
              "nothing was missed, only slower.")
          .Register(*registry_);
  vectorscan_errors_ = &match_errors.Add({{"engine", "vectorscan"}});
  re2_set_errors_ = &match_errors.Add({{"engine", "re2_set"}});
  rules_loaded_ = &prometheus::BuildGauge()
                       .Name("faultline_rules_loaded")
                       .Help("Rules in the running rule pack.")
                       .Register(*registry_)
                       .Add({});
  unrecognised_ = &prometheus::BuildCounter()
                       .Name("faultline_unrecognised_lines_total")
                       .Help("Error lines no rule explained (unrecognised errors), by source.")
                       .Register(*registry_);
  template_lines_ =
      &prometheus::BuildCounter()
           .Name("faultline_unrecognised_template_lines_total")
           .Help("Unrecognised error lines of the most frequent templates, by template id "
                 "(GET /api/v1/unrecognised shows the templates).")
           .Register(*registry_);
  templates_ = &prometheus::BuildGauge()
                    .Name("faultline_unrecognised_templates")
                    .Help("Templates of unrecognised errors held (at most discover.max_templates).")
                    .Register(*registry_)
                    .Add({});
  template_evictions_ =
      &prometheus::BuildCounter()
           .Name("faultline_unrecognised_template_evictions_total")
           .Help("Templates forgotten, least recently seen first, to stay within "
                 "discover.max_templates.")
           .Register(*registry_)
           .Add({});
  prometheus::Family<prometheus::Counter>& reloads =
      prometheus::BuildCounter()
          .Name("faultline_config_reloads_total")
          .Help("Config reloads (SIGHUP, POST /-/reload, file changes), applied or rejected.")
          .Register(*registry_);
  reloads_ok_ = &reloads.Add({{"result", "success"}});
  reloads_failed_ = &reloads.Add({{"result", "failure"}});
  last_reload_ok_ = &prometheus::BuildGauge()
                         .Name("faultline_config_last_reload_successful")
                         .Help("1 when the last reload was applied (or none was tried), 0 when "
                               "it was rejected and an older config runs.")
                         .Register(*registry_)
                         .Add({});
  last_reload_ok_->Set(1);
  last_reload_success_ =
      &prometheus::BuildGauge()
           .Name("faultline_config_last_reload_success_timestamp_seconds")
           .Help("When the running config was loaded: the start, or the last applied reload.")
           .Register(*registry_)
           .Add({});
  prometheus::BuildGauge()
      .Name("faultline_build_info")
      .Help("Always 1; the version label says which faultline is running.")
      .Register(*registry_)
      .Add({{"version", kVersion}})
      .Set(1);
}

void Metrics::BindRules(const std::vector<Rule>& rules) {
  if (owned_labels_ != nullptr) labels_.Bind(rules);
  std::map<std::string, RuleSeries> next;
  bound_.clear();
  bound_.reserve(rules.size());
  for (const Rule& rule : rules) {
    std::vector<std::string> names;
    for (const LabelSpec& label : rule.labels) {
      if (!SignatureLabels::IsReservedName(label.name)) names.push_back(label.name);
    }
    auto old = by_id_.find(rule.id);
    RuleSeries series;
    if (old != by_id_.end() && old->second.label_names == names) {
      series = std::move(old->second);
      by_id_.erase(old);
    }
    series.label_names = std::move(names);
    auto [it, inserted] = next.emplace(rule.id, std::move(series));
    bound_.emplace_back(&it->first, &it->second);
    if (SeverityIndex(rule.severity) < kSeverityCount) {
      PlainCounter(it->first, it->second, rule.severity);
    }
  }
  // What is left are the series of rules that are gone (or changed their labels).
  for (auto& [id, series] : by_id_) {
    for (prometheus::Counter* child : series.children) matches_->Remove(child);
  }
  by_id_ = std::move(next);
  rules_loaded_->Set(static_cast<double>(rules.size()));
}

prometheus::Counter& Metrics::PlainCounter(const std::string& id, RuleSeries& series,
                                           Severity severity) {
  prometheus::Counter*& slot = series.plain[SeverityIndex(severity)];
  if (slot == nullptr) {
    slot = &matches_->Add(
        {{kSignatureLabel, id}, {kSeverityLabel, std::string(SeverityName(severity))}});
    series.children.push_back(slot);
  }
  return *slot;
}

void Metrics::CountFinding(const Finding& finding) {
  if (finding.rule_index >= bound_.size() || SeverityIndex(finding.severity) >= kSeverityCount) {
    return;
  }
  auto [id, series] = bound_[finding.rule_index];
  if (series->label_names.empty() &&
      (finding.origin == nullptr || finding.origin->labels.empty())) {
    PlainCounter(*id, *series, finding.severity).Increment();
    return;
  }
  prometheus::Labels labels = {{kSignatureLabel, *id},
                               {kSeverityLabel, std::string(SeverityName(finding.severity))}};
  for (const auto& [name, value] : labels_.Resolve(finding)) labels.emplace(name, value);
  // Add returns the existing child when these labels were seen before.
  prometheus::Counter& child = matches_->Add(labels);
  if (child.Value() == 0) series->children.push_back(&child);
  child.Increment();
}

Metrics::SourceCounters Metrics::ForSource(const std::string& id) {
  return SourceCounters{.lines = &lines_->Add({{"source", id}}),
                        .bytes = &bytes_->Add({{"source", id}}),
                        .unrecognised = &unrecognised_->Add({{"source", id}})};
}

void Metrics::SetUnrecognised(std::span<const TemplateCount> top, std::size_t templates,
                              uint64_t evictions) {
  std::map<std::string, prometheus::Counter*> next;
  for (const TemplateCount& t : top) {
    prometheus::Counter* counter = nullptr;
    if (auto old = template_series_.find(t.id); old != template_series_.end()) {
      counter = old->second;
      template_series_.erase(old);
    } else {
      counter = &template_lines_->Add({{"template_id", t.id}});
    }
    const double value = static_cast<double>(t.count);
    if (value > counter->Value()) counter->Increment(value - counter->Value());
    next.emplace(t.id, counter);
  }
  for (const auto& [id, counter] : template_series_) template_lines_->Remove(counter);
  template_series_ = std::move(next);
  templates_->Set(static_cast<double>(templates));
  const double evicted = static_cast<double>(evictions);
  if (evicted > template_evictions_->Value()) {
    template_evictions_->Increment(evicted - template_evictions_->Value());
  }
}

void Metrics::AddTruncatedLines(uint64_t n) { truncated_->Increment(static_cast<double>(n)); }

void Metrics::CountMatchErrors(const MatchErrors& totals) {
  for (const auto& [counter, total] : {std::pair{vectorscan_errors_, totals.vectorscan},
                                       std::pair{re2_set_errors_, totals.re2_set}}) {
    const double value = static_cast<double>(total);
    if (value > counter->Value()) counter->Increment(value - counter->Value());
  }
}

void Metrics::CountReload(bool ok, std::chrono::system_clock::time_point at) {
  (ok ? reloads_ok_ : reloads_failed_)->Increment();
  last_reload_ok_->Set(ok ? 1 : 0);
  if (ok) SetLoadedAt(at);
}

void Metrics::SetLoadedAt(std::chrono::system_clock::time_point at) {
  last_reload_success_->Set(std::chrono::duration<double>(at.time_since_epoch()).count());
}

std::string Metrics::Serialize() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace faultline
