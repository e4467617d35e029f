// The root-cause test, the one definition that `faultline scan`'s report (cmd/scan_report.h) and
// the daemon's alerts (alert/alerting.h) both use, so that the two cannot drift apart
// (rules/README.md, "Root cause and consequences").
//
// IsConsequenceOf: whether a finding of `symptom` can be explained by a finding of `cause`, per
// the symptom rule's `role` and `consequence_of`. A rule of role root is nobody's consequence. A
// symptom without consequence_of can be explained by any other rule; with it, only by rules whose
// id equals an entry, starts with an entry that ends in '.' (a family, 'gpu.'), or whose category
// an entry names ('category:memory'). A rule is never its own consequence.
//
// CanExplain adds the severities of the two findings: a lesser finding does not explain a
// failure (the failure would vanish under a warning), so a cause below error explains only
// symptoms below error.
//
// Which findings may explain (roots first, then symptoms that nothing explained; before or
// after in the input) is the caller's choice. Pure; thread-safe; nothing fails.
#ifndef FAULTLINE_RULES_CONSEQUENCE_H_
#define FAULTLINE_RULES_CONSEQUENCE_H_

#include "agent/rules/rule.h"

namespace faultline {

bool IsConsequenceOf(const Rule& symptom, const Rule& cause);

// Whether a finding of `cause` at `cause_severity` may explain one of `symptom` at
// `symptom_severity` (each the effective severity of its finding).
bool CanExplain(const Rule& symptom, Severity symptom_severity, const Rule& cause,
                Severity cause_severity);

}  // namespace faultline

#endif  // FAULTLINE_RULES_CONSEQUENCE_H_
