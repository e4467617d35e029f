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

// Cuts `text` (valid UTF-8) to at most `max` bytes without splitting a character.
void TruncateUtf8(std::string& text, std::size_t max) {
  if (text.size() <= max) return;
  std::size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
}

}  // namespace

Metrics::Metrics(const std::vector<Rule>& rules)
    : registry_(std::make_unique<prometheus::Registry>()) {
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
  prometheus::BuildGauge()
      .Name("faultline_rules_loaded")
      .Help("Rules in the running rule pack.")
      .Register(*registry_)
      .Add({})
      .Set(static_cast<double>(rules.size()));
  prometheus::BuildGauge()
      .Name("faultline_build_info")
      .Help("Always 1; the version label says which faultline is running.")
      .Register(*registry_)
      .Add({{"version", kVersion}})
      .Set(1);

  rules_.reserve(rules.size());
  plain_counters_.assign(rules.size() * kSeverityCount, nullptr);
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const Rule& rule = rules[i];
    RuleMetrics& m = rules_.emplace_back();
    m.id = rule.id;
    m.max_label_values = rule.max_label_values;
    for (std::size_t l = 0; l < rule.labels.size(); ++l) {
      const std::string& name = rule.labels[l].name;
      // The rule loader already rejects these names. A Rule built another way must still not
      // reach Family::Add, which throws on them, on the per-line path: such a label is dropped.
      if (name == kSignatureLabel || name == kSeverityLabel || !prometheus::CheckLabelName(name)) {
        continue;
      }
      m.labels.push_back(RuleMetrics::Label{name, l, {}});
    }
    if (SeverityIndex(rule.severity) < kSeverityCount) {
      PlainCounter(static_cast<uint32_t>(i), rule.severity);
    }
  }
}

prometheus::Counter& Metrics::PlainCounter(uint32_t rule_index, Severity severity) {
  prometheus::Counter*& slot =
      plain_counters_[rule_index * kSeverityCount + SeverityIndex(severity)];
  if (slot == nullptr) {
    slot = &matches_->Add({{kSignatureLabel, rules_[rule_index].id},
                           {kSeverityLabel, std::string(SeverityName(severity))}});
  }
  return *slot;
}

void Metrics::CountFinding(const Finding& finding) {
  if (finding.rule_index >= rules_.size() || SeverityIndex(finding.severity) >= kSeverityCount) {
    return;
  }
  RuleMetrics& rule = rules_[finding.rule_index];
  if (rule.labels.empty()) {
    PlainCounter(finding.rule_index, finding.severity).Increment();
  } else {
    CountLabelled(rule, finding);
  }
}

void Metrics::CountLabelled(RuleMetrics& rule, const Finding& finding) {
  prometheus::Labels labels = {{kSignatureLabel, rule.id},
                               {kSeverityLabel, std::string(SeverityName(finding.severity))}};
  for (RuleMetrics::Label& label : rule.labels) {
    std::string_view raw;
    if (label.index < finding.label_values.size()) raw = finding.label_values[label.index];
    std::string value;
    if (raw.empty()) {
      value = kUnknownLabelValue;
    } else {
      value = SanitizeUtf8(raw);
      TruncateUtf8(value, kMaxLabelValueBytes);
      if (!label.seen.contains(value)) {
        if (label.seen.size() < static_cast<std::size_t>(rule.max_label_values)) {
          label.seen.insert(value);
        } else {
          value = kOverflowLabelValue;
        }
      }
    }
    labels.emplace(label.name, std::move(value));
  }
  // Add returns the existing child when these labels were seen before.
  matches_->Add(labels).Increment();
}

Metrics::SourceCounters Metrics::ForSource(const std::string& id) {
  return SourceCounters{.lines = &lines_->Add({{"source", id}}),
                        .bytes = &bytes_->Add({{"source", id}})};
}

void Metrics::AddTruncatedLines(uint64_t n) { truncated_->Increment(static_cast<double>(n)); }

std::string Metrics::Serialize() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace faultline
