// Rule: one failure class of the rule pack, as loaded from YAML (schema in rules/README.md).
//
// A Rule is a plain value: it holds the rule's text (patterns, root cause, fix, examples) and
// where it was loaded from, so that every later error or report can point at its file and line.
// It is immutable once the RuleSet that compiles it is built; RuleSet owns the Rules.
#ifndef FAULTLINE_RULES_RULE_H_
#define FAULTLINE_RULES_RULE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace faultline {

// What `faultline rules suggest` writes for the root cause and fix of a drafted rule. The loader
// rejects a rule whose root_cause or fix still starts with it, so a draft cannot ship unfinished.
inline constexpr std::string_view kDraftPlaceholder = "FILL IN:";

// Ordered: a larger value is worse. Downgrades take the minimum.
enum class Severity { kInfo = 0, kWarning = 1, kError = 2, kCritical = 3 };

std::string_view SeverityName(Severity severity);
std::optional<Severity> ParseSeverity(std::string_view name);
// Error and critical findings fail a scan (exit status 1) and are what alerts page people for.
inline bool IsFailure(Severity severity) { return severity >= Severity::kError; }

// Several patterns on nearby lines, in order: one message that a tool split over lines.
struct SequenceMatch {
  std::vector<std::string> steps;
  int within_lines = 0;  // the first and last step are fewer than this many lines apart
};

// Conditions over nearby lines of the same stream that decide a hit's severity.
struct ContextSpec {
  static constexpr int kDefaultWithinLines = 50;
  static constexpr int kMaxWithinLines = 10000;

  int within_lines = kDefaultWithinLines;
  std::vector<std::string> requires_any;
  std::optional<Severity> unconfirmed_severity;  // empty: unconfirmed hits are dropped
  std::vector<std::string> downgrade_if_followed_by;
  std::vector<std::string> downgrade_if_preceded_by;
  Severity downgrade_to = Severity::kWarning;
};

// A bounded label taken from the hit line by a pattern with exactly one capture group.
struct LabelSpec {
  std::string name;
  std::string pattern;
};

struct RuleExamples {
  std::vector<std::string> match;     // each must raise the rule at its own severity
  std::vector<std::string> no_match;  // each must not
};

// What a finding of a rule means next to the others of the same log (rules/README.md, "Root
// cause and consequences"): a root cause, or a consequence that another failure explains.
enum class RuleRole { kRoot, kSymptom };

struct Rule {
  static constexpr int kDefaultMaxLabelValues = 20;

  std::string id;
  // The failure class the rule belongs to (several rules can be wordings of one class); the
  // rule id when the rule does not say.
  std::string failure_class;
  std::string title;
  Severity severity = Severity::kError;
  std::string category;
  std::vector<std::string> tags;
  std::vector<std::string> match_lines;  // single-line patterns
  std::vector<SequenceMatch> sequences;  // multi-line patterns
  std::optional<ContextSpec> context;
  std::vector<LabelSpec> labels;
  int max_label_values = kDefaultMaxLabelValues;
  std::vector<std::string> resolved_by;
  std::string root_cause;
  std::string fix;
  std::string fix_command;
  // How to confirm that the fix took (`ds_report`, `nvidia-smi`), shown next to the fix.
  std::string verify_command;
  // kSymptom: a consequence of whatever root cause the same log shows. consequence_of narrows
  // that: the rule is a consequence only of findings whose rule id equals an entry, starts with
  // an entry ending in '.' (a family), or whose category is named as 'category:NAME'.
  RuleRole role = RuleRole::kRoot;
  // A catch-all (a `CUDA error: <message>` line, "cannot open shared object file"): when a rule
  // that is not generic raises the same line, that rule explains it and this one stays silent.
  bool generic = false;
  std::vector<std::string> consequence_of;
  std::vector<std::string> references;
  RuleExamples examples;

  std::string file;  // where the rule was loaded from
  int line = 0;      // 1-based line of the rule's `id` key
};

}  // namespace faultline

#endif  // FAULTLINE_RULES_RULE_H_
