#include "agent/cmd/scan_report.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "agent/framing/utf8.h"
#include "agent/rules/consequence.h"

namespace faultline {
namespace {

// Where an entry first appears in the input: by file, then line.
bool Before(const ScanReport::Entry& a, const ScanReport::Entry& b) {
  if (a.first_file_index != b.first_file_index) return a.first_file_index < b.first_file_index;
  return a.first_line < b.first_line;
}

}  // namespace

void ScanReport::BeginFile(const std::string& file) { files_.push_back(file); }

void ScanReport::EndFile(uint64_t lines, uint64_t truncated_lines) {
  lines_ += lines;
  truncated_lines_ += truncated_lines;
}

void ScanReport::AddOrigin(Entry& e, const LineOrigin& origin) {
  if (origin.has_rank()) {
    const auto at = std::lower_bound(e.ranks.begin(), e.ranks.end(), origin.rank);
    if (at == e.ranks.end() || *at != origin.rank) {
      if (e.ranks.size() < kMaxRanks) {
        e.ranks.insert(at, origin.rank);
      } else {
        e.ranks_truncated = true;
      }
    }
  }
  if (!origin.host.empty() &&
      std::find(e.hosts.begin(), e.hosts.end(), origin.host) == e.hosts.end()) {
    if (e.hosts.size() < kMaxHosts) {
      e.hosts.emplace_back(origin.host);
    } else {
      e.hosts_truncated = true;
    }
  }
  if (origin.has_rank() && !origin.host.empty() && host_of_rank_.size() < kMaxRankHosts) {
    host_of_rank_.try_emplace(origin.rank, origin.host);
  }
  if (origin.first_observed && !torchrun_first_) {
    torchrun_first_ = ObservedFirst{origin.rank, std::string(origin.host)};
  }
}

void ScanReport::OnFinding(const Finding& finding) {
  auto [it, inserted] = entries_.try_emplace(finding.rule_index);
  Entry& e = it->second;
  ++e.count;
  const LineOrigin origin = ParseLineOrigin(finding.text, finding.context_before);
  AddOrigin(e, origin);
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
    e.first_text_truncated = finding.text_truncated || finding.text.size() > kFirstTextBytes;
    e.first_text.assign(finding.text.substr(0, kFirstTextBytes));
    e.first_labels.assign(finding.label_values.begin(), finding.label_values.end());
    e.first_rank = origin.rank;
    e.first_host.assign(origin.host);
  }
}

std::vector<const ScanReport::Entry*> ScanReport::Sorted() const {
  std::vector<const Entry*> out;
  for (const auto& [index, entry] : entries_) out.push_back(&entry);
  std::sort(out.begin(), out.end(), [](const Entry* a, const Entry* b) {
    if (a->severity != b->severity) return a->severity > b->severity;
    return Before(*a, *b);
  });
  return out;
}

std::vector<ScanReport::Group> ScanReport::Grouped() const {
  const std::vector<const Entry*> sorted = Sorted();
  std::vector<const Entry*> by_position(sorted);
  std::sort(by_position.begin(), by_position.end(),
            [](const Entry* a, const Entry* b) { return Before(*a, *b); });
  std::map<const Entry*, const Entry*> cause_of;
  // A symptom belongs to the earliest root before it that explains it, else the earliest after.
  for (const Entry* symptom : by_position) {
    if (symptom->rule->role != RuleRole::kSymptom) continue;
    const Entry* before = nullptr;  // by_position: the first found of each kind is the earliest
    const Entry* after = nullptr;
    for (const Entry* root : by_position) {
      if (root->rule->role != RuleRole::kRoot ||
          !CanExplain(*symptom->rule, symptom->severity, *root->rule, root->severity)) {
        continue;
      }
      const Entry*& slot = Before(*symptom, *root) ? after : before;
      if (slot == nullptr) slot = root;
    }
    const Entry* cause = before != nullptr ? before : after;
    if (cause != nullptr) cause_of[symptom] = cause;
  }
  // A symptom nothing explains is a root itself, all the log says; as such it explains the
  // unexplained symptoms after it (ninja's "build stopped", then pip's summary of the same build).
  for (const Entry* symptom : by_position) {
    if (symptom->rule->role != RuleRole::kSymptom || cause_of.contains(symptom)) continue;
    for (const Entry* stand_in : by_position) {
      if (!Before(*stand_in, *symptom)) break;
      if (stand_in->rule->role == RuleRole::kSymptom && !cause_of.contains(stand_in) &&
          CanExplain(*symptom->rule, symptom->severity, *stand_in->rule, stand_in->severity)) {
        cause_of[symptom] = stand_in;
        break;
      }
    }
  }
  std::vector<Group> groups;
  std::map<const Entry*, size_t> group_of;
  for (const Entry* e : sorted) {
    if (cause_of.contains(e)) continue;
    group_of[e] = groups.size();
    groups.push_back(Group{e, {}});
  }
  for (const Entry* e : by_position) {
    if (const auto cause = cause_of.find(e); cause != cause_of.end()) {
      groups[group_of.at(cause->second)].consequences.push_back(e);
    }
  }
  return groups;
}

std::optional<ScanReport::FirstFailure> ScanReport::FirstFailureOf(
    const std::vector<Group>& groups) const {
  const Entry* first = nullptr;
  for (const Group& g : groups) {
    if (IsFailure(g.root->severity) && (first == nullptr || Before(*g.root, *first))) {
      first = g.root;
    }
  }
  if (first == nullptr) return std::nullopt;
  FirstFailure f{first, first->first_rank, first->first_host};
  // The first hit's own line did not say: torchrun's summary names the first failed rank, and a
  // finding seen on one rank or host only can only be from there.
  if (f.rank == LineOrigin::kNoRank && torchrun_first_) {
    f.rank = torchrun_first_->rank;
    if (f.host.empty()) f.host = torchrun_first_->host;
  }
  if (f.rank == LineOrigin::kNoRank && first->ranks.size() == 1 && !first->ranks_truncated) {
    f.rank = first->ranks[0];
  }
  if (f.host.empty() && f.rank != LineOrigin::kNoRank) {
    if (const auto host = host_of_rank_.find(f.rank); host != host_of_rank_.end()) {
      f.host = host->second;
    }
  }
  if (f.host.empty() && first->hosts.size() == 1 && !first->hosts_truncated) {
    f.host = first->hosts[0];
  }
  return f;
}

bool ScanReport::HasFailure() const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [](const auto& kv) { return IsFailure(kv.second.severity); });
}

namespace {

std::string UpperSeverity(Severity severity) {
  std::string name(SeverityName(severity));
  std::transform(name.begin(), name.end(), name.begin(), ::toupper);
  return name;
}

std::string JoinRanks(const ScanReport::Entry& e) {
  std::string out;
  for (int rank : e.ranks) out += (out.empty() ? "" : ", ") + std::to_string(rank);
  if (e.ranks_truncated) out += ", ... (more)";
  return out;
}

std::string JoinHosts(const ScanReport::Entry& e) {
  std::string out;
  for (const std::string& host : e.hosts) {
    out += (out.empty() ? "" : ", ") + SanitizeForDisplay(host);
  }
  if (e.hosts_truncated) out += ", ... (more)";
  return out;
}

// The lines every finding shows: what, which rule, where; `pad` indents consequences.
void PrintHead(std::ostream& out, const ScanReport::Entry& e, const std::string& pad) {
  out << pad << UpperSeverity(e.severity) << "  " << e.rule->title << "\n";
  out << pad << "  signature:  " << e.rule->id << "  (" << e.count
      << (e.count == 1 ? " line)" : " lines)") << "\n";
  for (size_t i = 0; i < e.rule->labels.size() && i < e.first_labels.size(); ++i) {
    out << pad << "  " << e.rule->labels[i].name << ": " << SanitizeForDisplay(e.first_labels[i])
        << "\n";
  }
  if (!e.ranks.empty()) out << pad << "  ranks:      " << JoinRanks(e) << "\n";
  if (!e.hosts.empty()) out << pad << "  hosts:      " << JoinHosts(e) << "\n";
  out << pad << "  first:      " << SanitizeForDisplay(e.first_file) << ":" << e.first_line
      << ": " << SanitizeForDisplay(e.first_text) << (e.first_text_truncated ? " ..." : "")
      << "\n";
}

void AddOriginJson(const ScanReport::Entry& e, nlohmann::json& f) {
  f["ranks"] = e.ranks;
  nlohmann::json hosts = nlohmann::json::array();
  for (const std::string& h : e.hosts) hosts.push_back(SanitizeUtf8(h));
  f["hosts"] = hosts;
  if (e.ranks_truncated) f["ranks_truncated"] = true;
  if (e.hosts_truncated) f["hosts_truncated"] = true;
}

}  // namespace

void ScanReport::PrintText(std::ostream& out) const {
  const std::vector<Group> groups = Grouped();
  const size_t findings = entries_.size();
  std::string where = files_.size() == 1 ? SanitizeForDisplay(files_[0])
                                         : std::to_string(files_.size()) + " files";
  if (findings == 0) {
    out << "faultline: no known failure found in " << where << " (" << lines_ << " lines)\n";
    PrintUnrecognisedText(out);
    return;
  }
  out << "faultline: " << findings << (findings == 1 ? " finding" : " findings") << " in "
      << where << " (" << lines_ << " lines)";
  if (groups.size() != findings) {
    const size_t consequences = findings - groups.size();
    out << ": " << groups.size() << (groups.size() == 1 ? " root cause, " : " root causes, ")
        << consequences << (consequences == 1 ? " consequence" : " consequences");
  }
  out << "\n";
  if (const auto first = FirstFailureOf(groups);
      first && (first->rank != LineOrigin::kNoRank || !first->host.empty())) {
    out << "first failing "
        << (first->rank != LineOrigin::kNoRank ? "rank: " + std::to_string(first->rank) : "");
    if (!first->host.empty()) {
      out << (first->rank != LineOrigin::kNoRank ? " on host " : "host: ")
          << SanitizeForDisplay(first->host);
    }
    out << "  (" << first->entry->rule->id << ", " << SanitizeForDisplay(first->entry->first_file)
        << ":" << first->entry->first_line << ")\n";
  }
  for (const Group& g : groups) {
    const Entry& e = *g.root;
    out << "\n";
    PrintHead(out, e, "");
    out << "  root cause: " << e.rule->root_cause << "\n";
    out << "  fix:        " << e.rule->fix << "\n";
    if (!e.rule->fix_command.empty()) out << "  run:        " << e.rule->fix_command << "\n";
    if (!e.rule->verify_command.empty()) {
      out << "  verify:     " << e.rule->verify_command << "\n";
    }
    if (!e.rule->references.empty()) out << "  see:        " << e.rule->references[0] << "\n";
    if (!g.consequences.empty()) {
      out << "  consequences (explained by the failure above):\n";
      for (const Entry* c : g.consequences) PrintHead(out, *c, "    ");
    }
  }
  PrintUnrecognisedText(out);
}

void ScanReport::PrintUnrecognisedText(std::ostream& out) const {
  if (!HasUnrecognised()) return;
  const std::vector<const TemplateStats*> templates = discovery_->Sorted();
  out << "\nUnrecognised errors (error lines no rule names): " << templates.size()
      << (templates.size() == 1 ? " template, " : " templates, ") << discovery_->lines()
      << (discovery_->lines() == 1 ? " line" : " lines") << "\n";
  for (size_t i = 0; i < templates.size() && i < kMaxTextTemplates; ++i) {
    const TemplateStats& t = *templates[i];
    out << "\nUNRECOGNISED  " << SanitizeForDisplay(t.text) << "\n";
    out << "  template:   " << t.id << "  (" << t.count << (t.count == 1 ? " line, " : " lines, ")
        << CueName(t.cue) << ")\n";
    out << "  first:      " << SanitizeForDisplay(t.first.stream) << ":" << t.first.line_number
        << ": " << SanitizeForDisplay(t.first.text) << "\n";
  }
  if (templates.size() > kMaxTextTemplates) {
    out << "\n... and " << templates.size() - kMaxTextTemplates
        << " more templates (--format json lists them all)\n";
  }
  out << "\nto draft a rule from one: faultline rules suggest --from "
      << SanitizeForDisplay(templates[0]->first.stream) << " --template " << templates[0]->id
      << "\n";
}

void ScanReport::PrintJson(std::ostream& out) const {
  const std::vector<Group> groups = Grouped();
  nlohmann::json doc;
  doc["files"] = nlohmann::json::array();
  for (const std::string& f : files_) doc["files"].push_back(SanitizeUtf8(f));
  doc["lines"] = lines_;
  doc["lines_truncated"] = truncated_lines_;
  doc["findings"] = nlohmann::json::array();
  auto finding_json = [](const Entry* e) {
    nlohmann::json f;
    f["signature"] = e->rule->id;
    f["title"] = e->rule->title;
    f["severity"] = SeverityName(e->severity);
    f["category"] = e->rule->category;
    f["count"] = e->count;
    f["first"] = {{"file", SanitizeUtf8(e->first_file)},
                  {"line", e->first_line},
                  {"text", SanitizeUtf8(e->first_text)}};
    if (e->first_text_truncated) f["first"]["text_truncated"] = true;
    if (!e->rule->labels.empty()) {
      nlohmann::json labels = nlohmann::json::object();
      for (size_t i = 0; i < e->rule->labels.size() && i < e->first_labels.size(); ++i) {
        labels[e->rule->labels[i].name] = SanitizeUtf8(e->first_labels[i]);
      }
      f["labels"] = labels;
    }
    AddOriginJson(*e, f);
    f["root_cause"] = e->rule->root_cause;
    f["fix"] = e->rule->fix;
    if (!e->rule->fix_command.empty()) f["fix_command"] = e->rule->fix_command;
    if (!e->rule->verify_command.empty()) f["verify_command"] = e->rule->verify_command;
    f["references"] = e->rule->references;
    return f;
  };
  for (const Group& g : groups) {
    nlohmann::json root = finding_json(g.root);
    root["role"] = "root";
    root["consequences"] = nlohmann::json::array();
    for (const Entry* c : g.consequences) root["consequences"].push_back(c->rule->id);
    doc["findings"].push_back(std::move(root));
    for (const Entry* c : g.consequences) {
      nlohmann::json f = finding_json(c);
      f["role"] = "consequence";
      f["caused_by"] = g.root->rule->id;
      doc["findings"].push_back(std::move(f));
    }
  }
  doc["unrecognised"] = nlohmann::json::array();
  if (discovery_ != nullptr) {
    for (const TemplateStats* t : discovery_->Sorted()) {
      nlohmann::json examples = nlohmann::json::array();
      for (const std::string& e : t->examples) examples.push_back(SanitizeUtf8(e));
      doc["unrecognised"].push_back({{"template_id", t->id},
                                     {"template", SanitizeUtf8(t->text)},
                                     {"count", t->count},
                                     {"cue", CueName(t->cue)},
                                     {"severity", SeverityName(CueSeverity(t->cue))},
                                     {"first",
                                      {{"file", SanitizeUtf8(t->first.stream)},
                                       {"line", t->first.line_number},
                                       {"text", SanitizeUtf8(t->first.text)}}},
                                     {"examples", examples}});
    }
    doc["unrecognised_lines"] = discovery_->lines();
    if (discovery_->evictions() > 0) doc["unrecognised_evicted"] = discovery_->evictions();
  }
  doc["first_failure"] = nullptr;
  if (const auto first = FirstFailureOf(groups)) {
    doc["first_failure"] = {
        {"signature", first->entry->rule->id},
        {"rank", first->rank != LineOrigin::kNoRank ? nlohmann::json(first->rank) : nullptr},
        {"host", first->host.empty() ? nlohmann::json(nullptr)
                                     : nlohmann::json(SanitizeUtf8(first->host))},
        {"file", SanitizeUtf8(first->entry->first_file)},
        {"line", first->entry->first_line}};
  }
  // replace: a byte that slipped past sanitising must not abort the report.
  out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace faultline
