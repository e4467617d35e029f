#include "agent/app/scan_report.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "agent/framing/utf8.h"

namespace faultline {

void ScanReport::BeginFile(const std::string& file) { files_.push_back(file); }

void ScanReport::EndFile(uint64_t lines, uint64_t truncated_lines) {
  lines_ += lines;
  truncated_lines_ += truncated_lines;
}

void ScanReport::OnFinding(const Finding& finding) {
  auto [it, inserted] = entries_.try_emplace(finding.rule_index);
  Entry& e = it->second;
  ++e.count;
  const size_t file_index = files_.empty() ? 0 : files_.size() - 1;
  // Pending context settles hits out of line order, so "first" is decided by position.
  const bool earlier = file_index < e.first_file_index ||
                       (file_index == e.first_file_index && finding.line_number < e.first_line);
  if (inserted || finding.severity > e.severity || (finding.severity == e.severity && earlier)) {
    e.rule = finding.rule;
    e.severity = finding.severity;
    e.first_file = files_.empty() ? "-" : files_.back();
    e.first_file_index = file_index;
    e.first_line = finding.line_number;
    e.first_text.assign(finding.text);
    e.first_labels.assign(finding.label_values.begin(), finding.label_values.end());
  }
}

std::vector<const ScanReport::Entry*> ScanReport::Sorted() const {
  std::vector<const Entry*> out;
  for (const auto& [index, entry] : entries_) out.push_back(&entry);
  std::sort(out.begin(), out.end(), [](const Entry* a, const Entry* b) {
    if (a->severity != b->severity) return a->severity > b->severity;
    if (a->first_file_index != b->first_file_index) {
      return a->first_file_index < b->first_file_index;
    }
    return a->first_line < b->first_line;
  });
  return out;
}

bool ScanReport::HasFailure() const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [](const auto& kv) { return IsFailure(kv.second.severity); });
}

void ScanReport::PrintText(std::ostream& out) const {
  const std::vector<const Entry*> sorted = Sorted();
  std::string where = files_.size() == 1 ? SanitizeForDisplay(files_[0])
                                         : std::to_string(files_.size()) + " files";
  if (sorted.empty()) {
    out << "faultline: no known failure found in " << where << " (" << lines_ << " lines)\n";
    return;
  }
  out << "faultline: " << sorted.size() << (sorted.size() == 1 ? " finding" : " findings")
      << " in " << where << " (" << lines_ << " lines)\n";
  for (const Entry* e : sorted) {
    std::string severity(SeverityName(e->severity));
    std::transform(severity.begin(), severity.end(), severity.begin(), ::toupper);
    out << "\n" << severity << "  " << e->rule->title << "\n";
    out << "  signature:  " << e->rule->id << "  (" << e->count
        << (e->count == 1 ? " line)" : " lines)") << "\n";
    for (size_t i = 0; i < e->rule->labels.size() && i < e->first_labels.size(); ++i) {
      out << "  " << e->rule->labels[i].name << ": " << SanitizeForDisplay(e->first_labels[i])
          << "\n";
    }
    out << "  first:      " << SanitizeForDisplay(e->first_file) << ":" << e->first_line << ": "
        << SanitizeForDisplay(e->first_text) << "\n";
    out << "  root cause: " << e->rule->root_cause << "\n";
    out << "  fix:        " << e->rule->fix << "\n";
    if (!e->rule->fix_command.empty()) out << "  run:        " << e->rule->fix_command << "\n";
    if (!e->rule->verify_command.empty()) {
      out << "  verify:     " << e->rule->verify_command << "\n";
    }
    if (!e->rule->references.empty()) out << "  see:        " << e->rule->references[0] << "\n";
  }
}

void ScanReport::PrintJson(std::ostream& out) const {
  nlohmann::json doc;
  doc["files"] = nlohmann::json::array();
  for (const std::string& f : files_) doc["files"].push_back(SanitizeUtf8(f));
  doc["lines"] = lines_;
  doc["lines_truncated"] = truncated_lines_;
  doc["findings"] = nlohmann::json::array();
  for (const Entry* e : Sorted()) {
    nlohmann::json f;
    f["signature"] = e->rule->id;
    f["title"] = e->rule->title;
    f["severity"] = SeverityName(e->severity);
    f["category"] = e->rule->category;
    f["count"] = e->count;
    f["first"] = {{"file", SanitizeUtf8(e->first_file)},
                  {"line", e->first_line},
                  {"text", SanitizeUtf8(e->first_text)}};
    if (!e->rule->labels.empty()) {
      nlohmann::json labels = nlohmann::json::object();
      for (size_t i = 0; i < e->rule->labels.size() && i < e->first_labels.size(); ++i) {
        labels[e->rule->labels[i].name] = SanitizeUtf8(e->first_labels[i]);
      }
      f["labels"] = labels;
    }
    f["root_cause"] = e->rule->root_cause;
    f["fix"] = e->rule->fix;
    if (!e->rule->fix_command.empty()) f["fix_command"] = e->rule->fix_command;
    if (!e->rule->verify_command.empty()) f["verify_command"] = e->rule->verify_command;
    f["references"] = e->rule->references;
    doc["findings"].push_back(std::move(f));
  }
  // replace: a byte that slipped past sanitising must not abort the report.
  out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace faultline
