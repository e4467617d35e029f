// IsConsequenceOf: whether a finding of `symptom` can be explained by a finding of `cause`, per
// the symptom rule's `role` and `consequence_of` (rules/README.md, "Root cause and consequences").
//
// A rule of role root is nobody's consequence. A symptom without consequence_of can be explained
// by any other rule; with it, only by rules whose id equals an entry, starts with an entry that
// ends in '.' (a family, 'gpu.'), or whose category an entry names ('category:memory'). A rule is
// never its own consequence. Which findings may explain (roots first, then symptoms that nothing
// explained) is the caller's choice. Pure; thread-safe.
#ifndef FAULTLINE_RULES_CONSEQUENCE_H_
#define FAULTLINE_RULES_CONSEQUENCE_H_

#include "agent/rules/rule.h"

namespace faultline {

bool IsConsequenceOf(const Rule& symptom, const Rule& cause);

}  // namespace faultline

#endif  // FAULTLINE_RULES_CONSEQUENCE_H_
