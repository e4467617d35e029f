// RuleSet: a rule pack compiled for matching.
//
// Every pattern of every rule (match lines, sequence steps, context conditions) goes into one
// PatternSet, identical patterns once; each pattern keeps the list of places (refs) it serves, so
// one hit fans out to every rule that uses it. Label patterns are compiled per rule and run only
// on lines that produced a finding.
//
// Immutable after Compile and shared (std::shared_ptr<const RuleSet>) by every stream; safe to
// read from several threads. Compile fails only on invalid patterns, which LoadRules has already
// reported with their file and line.
#ifndef FAULTLINE_MATCH_RULE_SET_H_
#define FAULTLINE_MATCH_RULE_SET_H_

#include <re2/re2.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "agent/core/result.h"
#include "agent/match/pattern_set.h"
#include "agent/rules/rule.h"

namespace faultline {

// What a pattern means for one rule.
enum class PatternRole : uint8_t {
  kMatch,            // a single-line fingerprint
  kSequenceStep,     // step `step` of sequence `sequence`
  kRequires,         // context.requires_any
  kDowngradeAfter,   // context.downgrade_if_followed_by
  kDowngradeBefore,  // context.downgrade_if_preceded_by
};

struct PatternRef {
  uint32_t rule;
  PatternRole role;
  uint32_t sequence = 0;  // RuleSet-wide sequence index, for kSequenceStep
  uint32_t step = 0;
};

// A rule's sequence, flattened for per-stream state.
struct CompiledSequence {
  uint32_t rule;
  uint32_t steps;
  int within_lines;
};

class RuleSet {
 public:
  // `cache_dir`: see PatternSet::Compile.
  static Result<std::shared_ptr<const RuleSet>> Compile(std::vector<Rule> rules,
                                                        const std::string& cache_dir = "");

  const std::vector<Rule>& rules() const { return rules_; }
  const PatternSet& patterns() const { return *patterns_; }
  std::span<const PatternRef> refs(uint32_t pattern) const { return refs_[pattern]; }
  const std::vector<CompiledSequence>& sequences() const { return sequences_; }
  // Pattern ids of a rule's downgrade_if_preceded_by and requires_any, checked against what the
  // stream saw before a hit.
  std::span<const uint32_t> preceded_by(uint32_t rule) const { return preceded_by_[rule]; }
  std::span<const uint32_t> requires_any(uint32_t rule) const { return requires_any_[rule]; }
  // One RE2 per entry of rules()[rule].labels.
  std::span<const std::unique_ptr<RE2>> label_regexes(uint32_t rule) const {
    return label_regexes_[rule];
  }

 private:
  RuleSet() = default;

  std::vector<Rule> rules_;
  std::unique_ptr<PatternSet> patterns_;
  std::vector<std::vector<PatternRef>> refs_;  // per pattern
  std::vector<CompiledSequence> sequences_;
  std::vector<std::vector<uint32_t>> preceded_by_;   // per rule
  std::vector<std::vector<uint32_t>> requires_any_;  // per rule
  std::vector<std::vector<std::unique_ptr<RE2>>> label_regexes_;  // per rule
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_RULE_SET_H_
