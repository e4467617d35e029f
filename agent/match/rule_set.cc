#include "agent/match/rule_set.h"

#include <algorithm>
#include <map>
#include <string>

#include "agent/rules/pattern_syntax.h"

namespace faultline {

Result<std::shared_ptr<const RuleSet>> RuleSet::Compile(
    std::vector<Rule> rules, const std::string& cache_dir,
    const std::vector<std::string>& watch_patterns, bool window_context) {
  std::shared_ptr<RuleSet> set(new RuleSet());
  set->rules_ = std::move(rules);
  const size_t n = set->rules_.size();
  set->preceded_by_.resize(n);
  set->requires_any_.resize(n);
  set->label_regexes_.resize(n);
  set->explain_windows_.resize(n, 0);

  std::vector<std::string> texts;
  std::map<std::string, uint32_t> ids;
  auto intern = [&](const std::string& pattern, PatternRef ref) {
    auto [it, inserted] = ids.emplace(pattern, static_cast<uint32_t>(texts.size()));
    if (inserted) {
      texts.push_back(pattern);
      set->refs_.emplace_back();
    }
    set->refs_[it->second].push_back(ref);
    return it->second;
  };

  ErrorList errors;
  for (uint32_t r = 0; r < n; ++r) {
    const Rule& rule = set->rules_[r];
    for (const std::string& p : rule.match_lines) intern(p, {r, PatternRole::kMatch});
    uint32_t window = rule.context ? static_cast<uint32_t>(rule.context->within_lines) : 0;
    for (const SequenceMatch& seq : rule.sequences) {
      window = std::max(window, static_cast<uint32_t>(seq.within_lines));
    }
    set->explain_windows_[r] = window;
    set->max_explain_window_ = std::max(set->max_explain_window_, window);
    for (const SequenceMatch& seq : rule.sequences) {
      const auto seq_index = static_cast<uint32_t>(set->sequences_.size());
      set->sequences_.push_back({r, static_cast<uint32_t>(seq.steps.size()), seq.within_lines});
      for (uint32_t s = 0; s < seq.steps.size(); ++s) {
        intern(seq.steps[s], {r, PatternRole::kSequenceStep, seq_index, s});
      }
    }
    if (rule.context) {
      for (const std::string& p : rule.context->requires_any) {
        set->requires_any_[r].push_back(intern(p, {r, PatternRole::kRequires}));
      }
      for (const std::string& p : rule.context->downgrade_if_followed_by) {
        intern(p, {r, PatternRole::kDowngradeAfter});
      }
      for (const std::string& p : rule.context->downgrade_if_preceded_by) {
        set->preceded_by_[r].push_back(intern(p, {r, PatternRole::kDowngradeBefore}));
      }
    }
    for (const LabelSpec& label : rule.labels) {
      auto re = std::make_unique<RE2>(label.pattern, RulePatternOptions());
      if (!re->ok() || re->NumberOfCapturingGroups() != 1) {
        errors.push_back(Error{rule.file, rule.line, rule.id, "labels." + label.name,
                               "label pattern must compile and have one capture group"});
      }
      set->label_regexes_[r].push_back(std::move(re));
    }
  }
  if (watch_patterns.size() > kMaxWatchPatterns) {
    errors.push_back(Error{"", 0, "", "watch_patterns",
                           "at most " + std::to_string(kMaxWatchPatterns) + " watch patterns"});
  }
  if (!errors.empty()) return errors;
  set->watch_count_ = watch_patterns.size();
  for (uint32_t w = 0; w < watch_patterns.size(); ++w) {
    intern(watch_patterns[w], {w, PatternRole::kWatch});
  }
  set->watch_masks_.assign(texts.size(), 0);
  for (uint32_t p = 0; p < texts.size(); ++p) {
    for (const PatternRef& ref : set->refs_[p]) {
      if (ref.role == PatternRole::kWatch) set->watch_masks_[p] |= 1u << ref.rule;
    }
  }

  // A pattern that only ever serves context conditions is needed within its rules' windows of
  // their hits, nowhere else: it is matched there only (PatternSet's window tiers). A pattern a
  // rule with context triggers on opens such a window.
  PatternSetOptions options;
  options.cache_dir = cache_dir;
  options.windows.assign(texts.size(), 0);
  set->opens_window_.assign(texts.size(), false);
  for (uint32_t p = 0; p < texts.size(); ++p) {
    uint32_t window = 0;
    bool context_only = true;
    for (const PatternRef& ref : set->refs_[p]) {
      // A watch ref (discovery's cue patterns) belongs to no rule: with no rules loaded there is
      // no rule to look up.
      switch (ref.role) {
        case PatternRole::kRequires:
        case PatternRole::kDowngradeAfter:
        case PatternRole::kDowngradeBefore:
          window = std::max(
              window, static_cast<uint32_t>(set->rules_[ref.rule].context->within_lines));
          break;
        case PatternRole::kMatch:
        case PatternRole::kSequenceStep:
          context_only = false;
          if (set->rules_[ref.rule].context) set->opens_window_[p] = true;
          break;
        case PatternRole::kWatch:
          context_only = false;
          break;
      }
    }
    // A window of 0 lines still means the hit's own line.
    if (context_only && window_context) options.windows[p] = std::max(window, 1u);
  }
  Result<std::unique_ptr<PatternSet>> patterns = PatternSet::Compile(texts, options);
  if (!patterns.ok()) return patterns.errors();
  set->patterns_ = std::move(patterns).value();
  return std::shared_ptr<const RuleSet>(std::move(set));
}

}  // namespace faultline
