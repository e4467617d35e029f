#include "agent/sink/metrics.h"

#include <prometheus/check_names.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <optional>
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
  bytes_lost_ = &prometheus::BuildCounter()
                     .Name("faultline_bytes_lost_total")
                     .Help(
                         "Bytes a file was seen to hold that were never read, by source and "
                         "reason (truncated: logrotate copytruncate cut them before they were "
                         "read and no copy held them). An estimate from the sizes seen.")
                     .Register(*registry_);
  file_size_ = &prometheus::BuildGauge()
                    .Name("faultline_file_size_bytes")
                    .Help("Size of a followed file, as last seen (per-file series are capped; "
                          "path=\"__overflow__\" sums the rest).")
                    .Register(*registry_);
  file_offset_ = &prometheus::BuildGauge()
                      .Name("faultline_file_read_offset_bytes")
                      .Help("Where reading a followed file has got to.")
                      .Register(*registry_);
  file_lag_ = &prometheus::BuildGauge()
                   .Name("faultline_file_lag_bytes")
                   .Help("Bytes of a followed file not read yet.")
                   .Register(*registry_);
  file_lines_ = &prometheus::BuildCounter()
                     .Name("faultline_file_lines_total")
                     .Help("Lines read from a file, by source and path, since the agent started.")
                     .Register(*registry_);
  file_rotations_ = &prometheus::BuildCounter()
                         .Name("faultline_file_rotations_total")
                         .Help("Times a followed path was rotated (renamed away or replaced).")
                         .Register(*registry_);
  file_truncations_ =
      &prometheus::BuildCounter()
           .Name("faultline_file_truncations_total")
           .Help("Times a followed file was truncated or rewritten in place (copytruncate).")
           .Register(*registry_);
  checkpoints_ = &prometheus::BuildCounter()
                      .Name("faultline_checkpoints_total")
                      .Help("Checkpoints written to the state store.")
                      .Register(*registry_)
                      .Add({});
  checkpoint_errors_ =
      &prometheus::BuildCounter()
           .Name("faultline_checkpoint_errors_total")
           .Help(
               "Checkpoints that could not be written (state.dir full, read-only or missing); "
               "counting goes on and the next checkpoint tries again. /readyz says why.")
           .Register(*registry_)
           .Add({});
  checkpoint_seconds_ =
      &prometheus::BuildHistogram()
           .Name("faultline_checkpoint_duration_seconds")
           .Help("Time to write one checkpoint transaction to the state store.")
           .Register(*registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                            0.025, 0.05, 0.1, 0.25, 1});
  corrupt_state_files_ =
      &prometheus::BuildCounter()
           .Name("faultline_state_corrupt_files_total")
           .Help(
               "State files found corrupt or unreadable at start and moved aside "
               "(faultline.db.corrupt-<time>); the agent started with no saved state.")
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
  alerts_ = std::make_unique<AlertMetrics>(*registry_);
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

void Metrics::AddBytesLost(const std::string& source, const std::string& reason, uint64_t n) {
  bytes_lost_->Add({{"source", source}, {"reason", reason}}).Increment(static_cast<double>(n));
}

std::vector<CounterValue> Metrics::PersistedCounters() const {
  std::vector<CounterValue> out;
  const auto add = [&out](const prometheus::Family<prometheus::Counter>& family,
                          const std::string& name) {
    for (const prometheus::MetricFamily& collected : family.Collect()) {
      for (const prometheus::ClientMetric& metric : collected.metric) {
        if (metric.counter.value == 0) continue;
        CounterValue value{name, {}, metric.counter.value};
        for (const prometheus::ClientMetric::Label& label : metric.label) {
          value.labels[label.name] = label.value;
        }
        out.push_back(std::move(value));
      }
    }
  };
  add(*matches_, "faultline_signature_matches_total");
  add(*lines_, "faultline_lines_total");
  add(*bytes_, "faultline_bytes_total");
  add(*bytes_lost_, "faultline_bytes_lost_total");
  if (truncated_->Value() > 0) {
    out.push_back(CounterValue{"faultline_lines_truncated_total", {}, truncated_->Value()});
  }
  return out;
}

void Metrics::RestoreCounters(const std::vector<CounterValue>& values,
                              const std::function<bool(const std::string&)>& known_source) {
  for (const CounterValue& saved : values) {
    if (saved.value <= 0) continue;
    const auto label = [&saved](const char* name) -> const std::string* {
      auto it = saved.labels.find(name);
      return it == saved.labels.end() ? nullptr : &it->second;
    };
    if (saved.family == "faultline_signature_matches_total") {
      const std::string* id = label(kSignatureLabel);
      const std::string* severity_name = label(kSeverityLabel);
      if (id == nullptr || severity_name == nullptr) continue;
      auto series = by_id_.find(*id);
      std::optional<Severity> severity = ParseSeverity(*severity_name);
      if (series == by_id_.end() || !severity || SeverityIndex(*severity) >= kSeverityCount) {
        continue;
      }
      std::vector<std::string> names;
      for (const auto& [name, value] : saved.labels) {
        if (name != kSignatureLabel && name != kSeverityLabel) names.push_back(name);
      }
      std::vector<std::string> expected = series->second.label_names;
      std::sort(expected.begin(), expected.end());
      if (names != expected) continue;  // the rule's labels changed: another series now
      if (names.empty()) {
        PlainCounter(*id, series->second, *severity).Increment(saved.value);
        continue;
      }
      prometheus::Counter& child =
          matches_->Add(prometheus::Labels(saved.labels.begin(), saved.labels.end()));
      if (child.Value() == 0) series->second.children.push_back(&child);
      child.Increment(saved.value);
      for (const std::string& name : names) labels_.Remember(*id, name, saved.labels.at(name));
    } else if (saved.family == "faultline_lines_total" || saved.family == "faultline_bytes_total") {
      const std::string* source = label("source");
      if (source == nullptr || saved.labels.size() != 1 || !known_source(*source)) continue;
      auto& family = saved.family == "faultline_lines_total" ? *lines_ : *bytes_;
      family.Add({{"source", *source}}).Increment(saved.value);
    } else if (saved.family == "faultline_bytes_lost_total") {
      const std::string* source = label("source");
      const std::string* reason = label("reason");
      if (source == nullptr || reason == nullptr || !known_source(*source)) continue;
      bytes_lost_->Add({{"source", *source}, {"reason", *reason}}).Increment(saved.value);
    } else if (saved.family == "faultline_lines_truncated_total" && saved.labels.empty()) {
      truncated_->Increment(saved.value);
    }
  }
}

Metrics::FileSeries* Metrics::AcquireFile(const std::string& source, const std::string& path) {
  const auto make = [this](const std::string& source, const std::string& path) {
    auto series = std::make_unique<FileSeries>();
    series->labels = {{"source", source}, {"path", SanitizeUtf8(path)}};
    series->lines = &file_lines_->Add(series->labels);
    series->size = &file_size_->Add(series->labels);
    series->offset = &file_offset_->Add(series->labels);
    series->lag = &file_lag_->Add(series->labels);
    series->rotations = &file_rotations_->Add(series->labels);
    series->truncations = &file_truncations_->Add(series->labels);
    return series;
  };
  auto it = files_.find({source, path});
  if (it == files_.end() && file_series_ < kMaxFileSeries) {
    it = files_.emplace(std::pair{source, path}, make(source, path)).first;
    ++file_series_;
  }
  if (it == files_.end()) {
    std::unique_ptr<FileSeries>& overflow = overflow_files_[source];
    if (overflow == nullptr) {
      overflow = make(source, kOverflowPath);
      overflow->overflow = true;
    }
    return overflow.get();
  }
  ++it->second->streams;
  return it->second.get();
}

void Metrics::ReleaseFile(FileSeries* series) {
  if (series == nullptr || series->overflow || --series->streams > 0) return;
  file_lines_->Remove(series->lines);
  file_size_->Remove(series->size);
  file_offset_->Remove(series->offset);
  file_lag_->Remove(series->lag);
  file_rotations_->Remove(series->rotations);
  file_truncations_->Remove(series->truncations);
  for (auto it = files_.begin(); it != files_.end(); ++it) {
    if (it->second.get() == series) {
      files_.erase(it);
      --file_series_;
      return;
    }
  }
}

void Metrics::CountFileLines(FileSeries* series, uint64_t n) {
  if (series != nullptr) series->lines->Increment(static_cast<double>(n));
}

void Metrics::UpdateFiles(const std::vector<FileSample>& samples) {
  const auto raise = [](prometheus::Counter* counter, uint64_t total) {
    const double value = static_cast<double>(total);
    if (value > counter->Value()) counter->Increment(value - counter->Value());
  };
  std::map<std::string, std::pair<uint64_t, uint64_t>> overflow;  // source -> size, lag
  for (const FileSample& sample : samples) {
    const uint64_t lag = sample.size > sample.offset ? sample.size - sample.offset : 0;
    auto it = files_.find({sample.source, sample.path});
    if (it == files_.end()) {
      auto& sums = overflow[sample.source];
      sums.first += sample.size;
      sums.second += lag;
      continue;
    }
    FileSeries& series = *it->second;
    series.size->Set(static_cast<double>(sample.size));
    series.offset->Set(static_cast<double>(sample.offset));
    series.lag->Set(static_cast<double>(lag));
    raise(series.rotations, sample.rotations);
    raise(series.truncations, sample.truncations);
  }
  for (auto& [source, series] : overflow_files_) {
    const auto sums = overflow[source];
    series->size->Set(static_cast<double>(sums.first));
    series->lag->Set(static_cast<double>(sums.second));
  }
}

void Metrics::CountCheckpoint(bool ok, double seconds) {
  if (ok) {
    checkpoints_->Increment();
    checkpoint_seconds_->Observe(seconds);
  } else {
    checkpoint_errors_->Increment();
  }
}

void Metrics::CountCorruptStateFile() { corrupt_state_files_->Increment(); }

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
