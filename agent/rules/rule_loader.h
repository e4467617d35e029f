// Rule-pack loading: YAML files to validated Rules (schema in rules/README.md).
//
// A load reads every *.yaml / *.yml file under the given files and folders (recursively, in path
// order), each holding one or more YAML documents of one rule each. Everything is checked at
// load: required keys, unknown keys (an error, never ignored), value types and ranges, duplicate
// ids, and every pattern is compiled with RE2 so a bad one is reported with RE2's error_arg().
// Every error names file, line, rule id and key; all errors of a load are returned together and
// a load with any error yields no rules. Throws nothing.
#ifndef FAULTLINE_RULES_RULE_LOADER_H_
#define FAULTLINE_RULES_RULE_LOADER_H_

#include <string>
#include <string_view>
#include <vector>

#include "agent/core/result.h"
#include "agent/rules/rule.h"

namespace faultline {

// The rule path that names no rules at all (`--rules none`): discovery alone, nothing named.
inline constexpr std::string_view kNoRulesPath = "none";

// Loads every rule file under `paths` (files or folders). A folder without rule files, or
// kNoRulesPath, adds no rules and is no error: a load may yield none. A path that does not exist
// is an error, so a misspelt folder is never taken for an empty one.
Result<std::vector<Rule>> LoadRules(const std::vector<std::string>& paths);

// A package name as PEP 503 normalises it: lower case, each run of '-', '_', '.' one '-'
// ("DeepSpeed" and "deep_speed" are "deepspeed" and "deep-speed").
std::string NormalizePackageName(std::string_view name);

// What a file of a rule pack is, by its name: the one definition the rule load, the versions
// load (alert/version_watcher.h) and reload.watch (daemon/config_watcher.h) all use. A file
// whose name ends in .yaml or .yml (and is more than that suffix) is a rule file, unless it ends
// in .versions.yaml or .versions.yml: those hold version patterns, which rule loads skip.
// Anything else (an editor's .swp, a README) is neither.
enum class RulePackFile { kOther, kRules, kVersionPatterns };
RulePackFile ClassifyRulePackFile(std::string_view path);

// Whether `path` names a version-pattern file (ClassifyRulePackFile says kVersionPatterns).
bool IsVersionPatternFile(std::string_view path);

// Parses the rules in `yaml`, reporting errors against `file_name`.
Result<std::vector<Rule>> ParseRules(std::string_view yaml, const std::string& file_name);

}  // namespace faultline

#endif  // FAULTLINE_RULES_RULE_LOADER_H_
