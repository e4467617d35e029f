// Alerting (alerting.h), root cause and consequences: which earlier failure of a run explains a
// symptom (the test itself is rules/consequence.h, shared with `scan`), naming a consequence on
// its cause's waiting item, and a cause that arrives after its symptoms taking them in.

#include <algorithm>

#include "agent/alert/alerting.h"
#include "agent/rules/consequence.h"

namespace faultline {
namespace {

// Consequences named on one item; more are still counted by their own signatures.
constexpr std::size_t kMaxConsequencesPerItem = 20;

}  // namespace

std::optional<std::string> Alerting::ExplainedBy(const Run& run, const Rule& symptom,
                                                 Severity severity) const {
  if (symptom.role != RuleRole::kSymptom) return std::nullopt;
  for (const bool roots : {true, false}) {
    for (const Cause& c : run.causes) {
      const Rule* rule = RuleOf(c.rule_id);
      if (rule == nullptr || (rule->role == RuleRole::kRoot) != roots) continue;
      if (!roots && c.explained) continue;
      if (CanExplain(symptom, severity, *rule, c.severity)) return c.signature;
    }
  }
  return std::nullopt;
}

void Alerting::AddConsequence(const std::string& run_key, const std::string& cause,
                              const std::string& consequence) {
  for (auto& [key, group] : groups_) {
    if (!key.ends_with("\n" + run_key)) continue;
    for (AlertItem& item : group.items) {
      if (item.signature != cause || item.consequences.size() >= kMaxConsequencesPerItem ||
          std::find(item.consequences.begin(), item.consequences.end(), consequence) !=
              item.consequences.end()) {
        continue;
      }
      item.consequences.push_back(consequence);
    }
  }
}

void Alerting::AdoptConsequences(const std::string& run_key, Run& run, const Rule& rule,
                                 const std::string& signature, Severity severity) {
  for (auto& [key, group] : groups_) {
    if (!key.ends_with("\n" + run_key)) continue;
    const auto root = std::find_if(group.items.begin(), group.items.end(),
                                   [&](const AlertItem& i) { return i.signature == signature; });
    if (root == group.items.end()) continue;  // this receiver does not take it
    const size_t root_index = static_cast<size_t>(root - group.items.begin());
    const Run only_this_cause{.causes = {Cause{rule.id, signature, severity}}};
    std::vector<std::string> adopted;
    std::vector<bool> explained(group.items.size(), false);
    for (size_t i = 0; i < group.items.size(); ++i) {
      const AlertItem& item = group.items[i];
      const Rule* symptom = RuleOf(item.rule_id);
      explained[i] = i != root_index && symptom != nullptr &&
                     (item.kind == AlertKind::kNew || item.kind == AlertKind::kRegression ||
                      item.kind == AlertKind::kRecurrence) &&
                     ExplainedBy(only_this_cause, *symptom, item.severity).has_value();
      if (explained[i]) adopted.push_back(item.signature);
    }
    if (adopted.empty()) continue;
    std::vector<AlertItem> kept;
    std::vector<Waiting> kept_where;
    for (size_t i = 0; i < group.items.size(); ++i) {
      if (explained[i]) continue;
      kept.push_back(std::move(group.items[i]));
      kept_where.push_back(group.where[i]);
    }
    for (AlertItem& item : kept) {
      if (item.signature != signature) continue;
      for (const std::string& s : adopted) {
        if (item.consequences.size() < kMaxConsequencesPerItem) item.consequences.push_back(s);
      }
    }
    group.items = std::move(kept);
    group.where = std::move(kept_where);
    for (Cause& c : run.causes) {
      if (std::find(adopted.begin(), adopted.end(), c.signature) != adopted.end()) {
        c.explained = true;
      }
    }
  }
}

bool Alerting::MayHaveConsequences(const Rule& cause) const {
  return std::any_of(rules_.begin(), rules_.end(), [&](const auto& entry) {
    return entry.second->role == RuleRole::kSymptom && IsConsequenceOf(*entry.second, cause);
  });
}

}  // namespace faultline
