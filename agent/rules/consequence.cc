#include "agent/rules/consequence.h"

#include <string_view>

namespace faultline {

bool IsConsequenceOf(const Rule& symptom, const Rule& cause) {
  if (symptom.role != RuleRole::kSymptom) return false;
  if (&symptom == &cause || symptom.id == cause.id) return false;
  if (symptom.consequence_of.empty()) return true;
  constexpr std::string_view kCategory = "category:";
  for (const std::string& entry : symptom.consequence_of) {
    const std::string_view e = entry;
    if (e.substr(0, kCategory.size()) == kCategory) {
      if (e.substr(kCategory.size()) == cause.category) return true;
    } else if (!e.empty() && e.back() == '.') {
      if (std::string_view(cause.id).substr(0, e.size()) == e) return true;
    } else if (e == cause.id) {
      return true;
    }
  }
  return false;
}

bool CanExplain(const Rule& symptom, Severity symptom_severity, const Rule& cause,
                Severity cause_severity) {
  return IsConsequenceOf(symptom, cause) &&
         (IsFailure(cause_severity) || !IsFailure(symptom_severity));
}

}  // namespace faultline
