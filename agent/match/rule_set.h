// RuleSet: a rule pack compiled for matching.
//
// Every pattern of every rule (match lines, sequence steps, context conditions) goes into one
// PatternSet, identical patterns once (a pattern used only by context conditions in a window tier
// of its own, matched near the hits that need it); each pattern keeps the list of places (refs) it
// serves, so one hit fans out to every rule that uses it. Label patterns are compiled per rule and
// run only on lines that produced a finding.
//
// Watch patterns (LineWatcher, line_watcher.h) can be compiled in beside the rules: they serve no
// rule and only mark lines for a watcher, at no cost to lines that match nothing.
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
  kWatch,            // watch pattern `rule` (an index into the watch patterns, not a rule)
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
  // At most this many watch patterns: their hits are reported as bits of a 32-bit mask.
  static constexpr std::size_t kMaxWatchPatterns = 32;

  // `cache_dir`: see PatternSet::Compile. `watch_patterns`: RE2 patterns for a LineWatcher
  // (at most kMaxWatchPatterns; more is a load error). `window_context`: patterns that serve only
  // context conditions are matched only near the hits that need them (the default; false matches
  // them on every line, the reference the windowed matching is tested against).
  static Result<std::shared_ptr<const RuleSet>> Compile(
      std::vector<Rule> rules, const std::string& cache_dir = "",
      const std::vector<std::string>& watch_patterns = {}, bool window_context = true);

  const std::vector<Rule>& rules() const { return rules_; }
  const PatternSet& patterns() const { return *patterns_; }
  std::span<const PatternRef> refs(uint32_t pattern) const { return refs_[pattern]; }
  const std::vector<CompiledSequence>& sequences() const { return sequences_; }
  // Pattern ids of a rule's downgrade_if_preceded_by and requires_any, checked against what the
  // stream saw before a hit.
  std::span<const uint32_t> preceded_by(uint32_t rule) const { return preceded_by_[rule]; }
  std::span<const uint32_t> requires_any(uint32_t rule) const { return requires_any_[rule]; }
  std::size_t watch_count() const { return watch_count_; }
  // Whether a hit of `pattern` can raise a rule with context, whose patterns must then be matched
  // within the window around it (PatternSet::MatchWindow).
  bool opens_window(uint32_t pattern) const { return opens_window_[pattern]; }
  // Bit i is set when `pattern` is watch pattern i.
  uint32_t watch_mask(uint32_t pattern) const { return watch_masks_[pattern]; }
  // How many lines around its hit a finding of `rule` explains: its context window, or the span
  // of its longest sequence; 0 for a plain single-line rule. And the widest of all rules.
  uint32_t explain_window(uint32_t rule) const { return explain_windows_[rule]; }
  uint32_t max_explain_window() const { return max_explain_window_; }
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
  std::vector<std::vector<uint32_t>> preceded_by_;                // per rule
  std::vector<std::vector<uint32_t>> requires_any_;               // per rule
  std::vector<std::vector<std::unique_ptr<RE2>>> label_regexes_;  // per rule
  std::size_t watch_count_ = 0;
  std::vector<uint32_t> watch_masks_;      // per pattern
  std::vector<bool> opens_window_;         // per pattern
  std::vector<uint32_t> explain_windows_;  // per rule
  uint32_t max_explain_window_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_RULE_SET_H_
