#include "agent/sink/signature_labels.h"

#include <prometheus/check_names.h>

#include "agent/framing/utf8.h"

namespace faultline {
namespace {

// Cuts `text` (valid UTF-8) to at most `max` bytes without splitting a character.
void TruncateUtf8(std::string& text, std::size_t max) {
  if (text.size() <= max) return;
  std::size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
}

bool SameLabelNames(const std::vector<LabelSpec>& specs, const std::vector<std::string>& names) {
  std::vector<std::string> spec_names;
  for (const LabelSpec& spec : specs) {
    if (!SignatureLabels::IsReservedName(spec.name)) spec_names.push_back(spec.name);
  }
  return spec_names == names;
}

}  // namespace

void SignatureLabels::Remember(const std::string& rule_id, const std::string& name,
                               const std::string& value) {
  auto it = by_id_.find(rule_id);
  if (it == by_id_.end() || value == kOverflowLabelValue) return;
  for (Label& label : it->second.labels) {
    if (label.name == name &&
        label.seen.size() < static_cast<std::size_t>(it->second.max_label_values)) {
      label.seen.insert(value);
    }
  }
}

bool SignatureLabels::IsReservedName(const std::string& name) {
  // The rule loader already rejects these; a Rule built another way must still not reach
  // prometheus-cpp, which throws on them, on the per-line path.
  return name == "signature" || name == "severity" || !prometheus::CheckLabelName(name);
}

void SignatureLabels::Bind(const std::vector<Rule>& rules) {
  std::map<std::string, RuleLabels> next;
  bound_.assign(rules.size(), nullptr);
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const Rule& rule = rules[i];
    RuleLabels fresh;
    fresh.max_label_values = rule.max_label_values;
    for (std::size_t l = 0; l < rule.labels.size(); ++l) {
      if (IsReservedName(rule.labels[l].name)) continue;
      fresh.labels.push_back(Label{rule.labels[l].name, l, {}});
    }
    auto old = by_id_.find(rule.id);
    if (old != by_id_.end()) fresh.stream_seen = std::move(old->second.stream_seen);
    if (old != by_id_.end()) {
      std::vector<std::string> old_names;
      for (const Label& label : old->second.labels) old_names.push_back(label.name);
      if (SameLabelNames(rule.labels, old_names)) {
        for (std::size_t l = 0; l < fresh.labels.size(); ++l) {
          fresh.labels[l].seen = std::move(old->second.labels[l].seen);
        }
      }
    }
    bound_[i] = &(next[rule.id] = std::move(fresh));
  }
  by_id_ = std::move(next);
  // std::map nodes keep their addresses across the move.
}

const LabelPairs& SignatureLabels::Resolve(const Finding& finding) {
  resolved_.clear();
  if (finding.rule_index >= bound_.size()) return resolved_;
  RuleLabels& rule = *bound_[finding.rule_index];
  for (Label& label : rule.labels) {
    std::string_view raw;
    if (label.index < finding.label_values.size()) raw = finding.label_values[label.index];
    resolved_.emplace_back(label.name, Bounded(raw, label.seen, rule.max_label_values));
  }
  if (finding.origin == nullptr) return resolved_;
  for (const auto& [name, raw] : finding.origin->labels) {
    if (IsReservedName(name)) continue;
    bool taken = false;
    for (const Label& label : rule.labels) taken = taken || label.name == name;
    if (taken) continue;
    auto seen = rule.stream_seen.find(name);
    if (seen == rule.stream_seen.end()) {
      seen = rule.stream_seen.emplace(name, std::unordered_set<std::string>()).first;
    }
    resolved_.emplace_back(name, Bounded(raw, seen->second, rule.max_label_values));
  }
  return resolved_;
}

std::string SignatureLabels::Bounded(std::string_view raw, std::unordered_set<std::string>& seen,
                                     int max_label_values) {
  if (raw.empty()) return kUnknownLabelValue;
  std::string value = SanitizeUtf8(raw);
  TruncateUtf8(value, kMaxLabelValueBytes);
  if (!seen.contains(value)) {
    if (seen.size() >= static_cast<std::size_t>(max_label_values)) return kOverflowLabelValue;
    seen.insert(value);
  }
  return value;
}

std::string SignatureLabels::Key(const std::string& rule_id, const LabelPairs& labels) {
  if (labels.empty()) return rule_id;
  std::string key = rule_id + "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) key += ",";
    key += labels[i].first + "=" + labels[i].second;
  }
  return key + "}";
}

}  // namespace faultline
