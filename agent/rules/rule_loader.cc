#include "agent/rules/rule_loader.h"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "agent/core/usable_cpus.h"
#include "agent/core/yaml_document.h"
#include "agent/core/yaml_fields.h"
#include "agent/rules/pattern_syntax.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxSequenceSteps = 16;
constexpr int kMaxLabelValuesLimit = 1000;

const std::set<std::string, std::less<>> kCategories = {
    "environment", "build", "runtime", "data", "hardware", "distributed", "numerics", "memory"};

// Parses one rule document, adding what is wrong to `errors` through the shared field reader.
class RuleParser {
 public:
  RuleParser(const std::string& file, ErrorList& errors) : file_(file), reader_(file, &errors) {}

  std::optional<Rule> Parse(const YAML::Node& doc) {
    reader_.set_rule_id("");  // a document without an id must not be blamed on the rule before it
    if (!doc.IsMap()) {
      Fail(doc, "", "a rule must be a YAML mapping");
      return std::nullopt;
    }
    const size_t errors_before = reader_.error_count();
    Rule rule;
    rule.file = file_;
    rule.line = YamlLine(doc);
    if (doc["id"] && doc["id"].IsScalar()) {
      reader_.set_rule_id(doc["id"].Scalar());
      rule.line = YamlLine(doc["id"]);
    }
    reader_.UnknownKeys(doc,
                        {"id",
                         "title",
                         "severity",
                         "category",
                         "tags",
                         "match",
                         "context",
                         "labels",
                         "max_label_values",
                         "resolved_by",
                         "root_cause",
                         "fix",
                         "fix_command",
                         "references",
                         "examples",
                         "class",
                         "verify_command",
                         "role",
                         "consequence_of",
                         "generic",
                         "version_of"},
                        "");

    rule.id = reader_.Required(doc, "id");
    if (!rule.id.empty() && !RE2::FullMatch(rule.id, R"([a-z0-9_]+(\.[a-z0-9_]+)+)")) {
      Fail(doc["id"], "id", "must be dotted lower-case words such as 'deepspeed.async_io.build'");
    }
    rule.title = reader_.Required(doc, "title");
    rule.severity = SeverityAt(doc, "severity", /*required=*/true).value_or(Severity::kError);
    rule.category = reader_.Required(doc, "category");
    if (!rule.category.empty() && !kCategories.contains(rule.category)) {
      Fail(doc["category"], "category",
           "unknown category '" + rule.category +
               "' (one of environment, build, runtime, data, hardware, distributed, numerics, "
               "memory)");
    }
    rule.tags = reader_.List(doc, "tags", "tags");
    ParseMatch(doc, rule);
    ParseContext(doc, rule);
    ParseLabels(doc, rule);
    if (const YAML::Node n = doc["max_label_values"]) {
      rule.max_label_values = reader_.IntegerAt(n, "max_label_values", 1, kMaxLabelValuesLimit);
    }
    rule.resolved_by = Patterns(doc, "resolved_by", "resolved_by");
    rule.version_of = reader_.Optional(doc, "version_of");
    if (!rule.version_of.empty()) {
      if (!RE2::FullMatch(rule.version_of, R"([A-Za-z0-9]([A-Za-z0-9._\-]*[A-Za-z0-9])?)")) {
        Fail(doc["version_of"], "version_of", "must be a package name such as 'deepspeed'");
      }
      rule.version_of = NormalizePackageName(rule.version_of);
    }
    rule.root_cause = reader_.Required(doc, "root_cause");
    rule.fix = reader_.Required(doc, "fix");
    for (const auto& [key, text] :
         {std::pair{"root_cause", &rule.root_cause}, std::pair{"fix", &rule.fix}}) {
      if (text->starts_with(kDraftPlaceholder)) {
        Fail(doc[key], key,
             "still the placeholder `faultline rules suggest` drafted; write it (what fails and "
             "why, or how to fix it) before the rule can load");
      }
    }
    rule.fix_command = reader_.Optional(doc, "fix_command");
    rule.verify_command = reader_.Optional(doc, "verify_command");
    rule.failure_class = reader_.Optional(doc, "class");
    if (rule.failure_class.empty()) {
      rule.failure_class = rule.id;
    } else if (!RE2::FullMatch(rule.failure_class, R"([a-z0-9_]+(\.[a-z0-9_]+)*)")) {
      Fail(doc["class"], "class", "must be dotted lower-case words such as 'gpu.no_kernel_image'");
    }
    ParseRole(doc, rule);
    if (const YAML::Node n = doc["generic"]) {
      if (!n.IsScalar() || (n.Scalar() != "true" && n.Scalar() != "false")) {
        Fail(n, "generic", "must be true or false");
      } else {
        rule.generic = n.Scalar() == "true";
      }
    }
    rule.references = reader_.List(doc, "references", "references");
    ParseExamples(doc, rule);
    if (reader_.error_count() != errors_before) return std::nullopt;
    return rule;
  }

 private:
  void Fail(const YAML::Node& at, const std::string& key, const std::string& message) {
    reader_.Fail(at, key, message);
  }

  // A list of patterns, each compiled to check it.
  std::vector<std::string> Patterns(const YAML::Node& parent, const std::string& key,
                                    const std::string& path) {
    const YAML::Node n = parent[key];
    std::vector<std::string> out = reader_.List(parent, key, path);
    if (!n || !n.IsSequence()) return out;
    for (size_t i = 0; i < n.size() && i < out.size(); ++i) {
      CheckPattern(n[i], path + "[" + std::to_string(i) + "]", out[i]);
    }
    return out;
  }

  // Compiles `pattern` as the matcher will; returns its capture-group count, or -1 when invalid.
  int CheckPattern(const YAML::Node& at, const std::string& path, const std::string& pattern) {
    if (pattern.empty()) {
      Fail(at, path, "pattern is empty");
      return -1;
    }
    const RE2 re(pattern, RulePatternOptions());
    if (!re.ok()) {
      Fail(at, path, "invalid pattern: " + re.error() + " (at '" + re.error_arg() + "')");
      return -1;
    }
    if (RE2::PartialMatch("", re)) {
      Fail(at, path, "pattern matches the empty string, so it would match every line");
      return -1;
    }
    return re.NumberOfCapturingGroups();
  }

  std::optional<Severity> SeverityAt(const YAML::Node& parent, const std::string& key,
                                     bool required, const std::string& path = "") {
    const std::string where = path.empty() ? key : path;
    const YAML::Node n = parent[key];
    if (!n) {
      if (required) Fail(parent, where, "required key is missing");
      return std::nullopt;
    }
    std::optional<Severity> s = n.IsScalar() ? ParseSeverity(n.Scalar()) : std::nullopt;
    if (!s) Fail(n, where, "must be one of info, warning, error, critical");
    return s;
  }

  void ParseMatch(const YAML::Node& doc, Rule& rule) {
    const YAML::Node match = doc["match"];
    if (!match) {
      Fail(doc, "match", "required key is missing");
      return;
    }
    if (!match.IsSequence() || match.size() == 0) {
      Fail(match, "match", "must be a non-empty list of patterns or sequences");
      return;
    }
    for (size_t i = 0; i < match.size(); ++i) {
      const YAML::Node entry = match[i];
      const std::string path = "match[" + std::to_string(i) + "]";
      if (entry.IsScalar()) {
        if (CheckPattern(entry, path, entry.Scalar()) >= 0) {
          rule.match_lines.push_back(entry.Scalar());
        }
        continue;
      }
      if (!entry.IsMap()) {
        Fail(entry, path, "must be a pattern or a mapping with 'sequence'");
        continue;
      }
      reader_.UnknownKeys(entry, {"sequence", "within_lines"}, path + ".");
      SequenceMatch seq;
      const YAML::Node steps = entry["sequence"];
      if (!steps || !steps.IsSequence() || steps.size() < 2 ||
          steps.size() > static_cast<size_t>(kMaxSequenceSteps)) {
        Fail(entry, path + ".sequence",
             "must be a list of 2 to " + std::to_string(kMaxSequenceSteps) + " patterns");
        continue;
      }
      seq.steps = Patterns(entry, "sequence", path + ".sequence");
      const int default_within = static_cast<int>(seq.steps.size()) * 2;
      seq.within_lines =
          entry["within_lines"]
              ? reader_.IntegerAt(entry["within_lines"], path + ".within_lines",
                                  static_cast<int>(seq.steps.size()), ContextSpec::kMaxWithinLines)
              : default_within;
      rule.sequences.push_back(std::move(seq));
    }
  }

  void ParseContext(const YAML::Node& doc, Rule& rule) {
    const YAML::Node n = doc["context"];
    if (!n) return;
    if (!n.IsMap()) {
      Fail(n, "context", "must be a mapping");
      return;
    }
    reader_.UnknownKeys(n,
                        {"within_lines", "requires_any", "unconfirmed_severity",
                         "downgrade_if_followed_by", "downgrade_if_preceded_by", "downgrade_to"},
                        "context.");
    ContextSpec ctx;
    if (n["within_lines"]) {
      ctx.within_lines = reader_.IntegerAt(n["within_lines"], "context.within_lines", 1,
                                           ContextSpec::kMaxWithinLines);
    }
    ctx.requires_any = Patterns(n, "requires_any", "context.requires_any");
    ctx.unconfirmed_severity =
        SeverityAt(n, "unconfirmed_severity", false, "context.unconfirmed_severity");
    ctx.downgrade_if_followed_by =
        Patterns(n, "downgrade_if_followed_by", "context.downgrade_if_followed_by");
    ctx.downgrade_if_preceded_by =
        Patterns(n, "downgrade_if_preceded_by", "context.downgrade_if_preceded_by");
    if (auto s = SeverityAt(n, "downgrade_to", false, "context.downgrade_to")) {
      ctx.downgrade_to = *s;
    }
    if (ctx.requires_any.empty() && ctx.downgrade_if_followed_by.empty() &&
        ctx.downgrade_if_preceded_by.empty()) {
      Fail(n, "context",
           "needs at least one of requires_any, downgrade_if_followed_by, "
           "downgrade_if_preceded_by");
    }
    if (ctx.unconfirmed_severity && ctx.requires_any.empty()) {
      Fail(n["unconfirmed_severity"], "context.unconfirmed_severity",
           "only means something together with requires_any");
    }
    rule.context = std::move(ctx);
  }

  void ParseLabels(const YAML::Node& doc, Rule& rule) {
    const YAML::Node n = doc["labels"];
    if (!n) return;
    if (!n.IsMap()) {
      Fail(n, "labels", "must be a mapping of label name to pattern");
      return;
    }
    static const std::set<std::string, std::less<>> kReserved = {"signature", "severity", "source",
                                                                 "rule"};
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string name = it->first.Scalar();
      const std::string path = "labels." + name;
      if (!RE2::FullMatch(name, "[a-z_][a-z0-9_]*") || kReserved.contains(name)) {
        Fail(it->first, path,
             "label names are lower-case Prometheus names and not one of signature, severity, "
             "source, rule");
        continue;
      }
      if (!it->second.IsScalar()) {
        Fail(it->second, path, "must be a pattern");
        continue;
      }
      const int groups = CheckPattern(it->second, path, it->second.Scalar());
      if (groups < 0) continue;
      if (groups != 1) {
        Fail(it->second, path,
             "must have exactly one capture group (has " + std::to_string(groups) + ")");
        continue;
      }
      rule.labels.push_back(LabelSpec{name, it->second.Scalar()});
    }
  }

  void ParseRole(const YAML::Node& doc, Rule& rule) {
    if (const YAML::Node n = doc["role"]) {
      if (n.IsScalar() && n.Scalar() == "root") {
        rule.role = RuleRole::kRoot;
      } else if (n.IsScalar() && n.Scalar() == "symptom") {
        rule.role = RuleRole::kSymptom;
      } else {
        Fail(n, "role", "must be root or symptom");
      }
    }
    rule.consequence_of = reader_.List(doc, "consequence_of", "consequence_of");
    for (size_t i = 0; i < rule.consequence_of.size(); ++i) {
      const std::string& entry = rule.consequence_of[i];
      if (!RE2::FullMatch(entry, R"((category:[a-z]+)|([a-z0-9_]+(\.[a-z0-9_]+)*\.?))")) {
        Fail(doc["consequence_of"][i], "consequence_of[" + std::to_string(i) + "]",
             "must be a rule id, a family ending in '.' (e.g. 'gpu.') or 'category:NAME'");
      }
    }
    if (!rule.consequence_of.empty()) rule.role = RuleRole::kSymptom;
  }

  void ParseExamples(const YAML::Node& doc, Rule& rule) {
    const YAML::Node n = doc["examples"];
    if (!n) return;
    if (!n.IsMap()) {
      Fail(n, "examples", "must be a mapping with 'match' and 'no_match' lists");
      return;
    }
    reader_.UnknownKeys(n, {"match", "no_match"}, "examples.");
    rule.examples.match = reader_.List(n, "match", "examples.match");
    rule.examples.no_match = reader_.List(n, "no_match", "examples.no_match");
  }

  const std::string& file_;
  YamlFieldReader reader_;
};

// A thread is worth starting for this many files (a rule file parses in about a millisecond).
constexpr size_t kFilesPerParseThread = 16;


}  // namespace

std::string NormalizePackageName(std::string_view name) {
  std::string out;
  bool in_separator = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      in_separator = true;
      continue;
    }
    if (in_separator && !out.empty()) out.push_back('-');
    in_separator = false;
    out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return out;
}

RulePackFile ClassifyRulePackFile(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  // As std::filesystem reads an extension: a name that is only ".yaml" has none.
  const auto ends = [name](std::string_view suffix) {
    return name.size() > suffix.size() && name.ends_with(suffix);
  };
  if (!ends(".yaml") && !ends(".yml")) return RulePackFile::kOther;
  // *.versions.yaml beside the rules are data for learning package versions from lines
  // (agent/alert/version_watcher.h), not rules.
  if (path.ends_with(".versions.yaml") || path.ends_with(".versions.yml")) {
    return RulePackFile::kVersionPatterns;
  }
  return RulePackFile::kRules;
}

bool IsVersionPatternFile(std::string_view path) {
  return ClassifyRulePackFile(path) == RulePackFile::kVersionPatterns;
}

Result<std::vector<Rule>> ParseRules(std::string_view yaml, const std::string& file_name) {
  ErrorList errors;
  std::vector<Rule> rules;
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments(yaml, file_name);
  if (!docs.ok()) return docs.errors();
  RuleParser parser(file_name, errors);
  for (const YAML::Node& doc : docs.value()) {
    if (doc.IsNull()) continue;  // an empty document, e.g. a trailing '---'
    if (std::optional<Rule> rule = parser.Parse(doc)) rules.push_back(std::move(*rule));
  }
  if (!errors.empty()) return errors;
  return rules;
}

Result<std::vector<Rule>> LoadRules(const std::vector<std::string>& paths) {
  ErrorList errors;
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (path == kNoRulesPath) continue;
    if (fs::is_directory(path, ec)) {
      for (auto it = fs::recursive_directory_iterator(path, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) &&
            ClassifyRulePackFile(it->path().string()) == RulePackFile::kRules) {
          files.push_back(it->path());
        }
      }
      if (ec) errors.push_back(Error{path, 0, "", "", "cannot read folder: " + ec.message()});
    } else if (fs::is_regular_file(path, ec)) {
      files.push_back(path);
    } else {
      errors.push_back(Error{path, 0, "", "", "no such rule file or folder"});
    }
  }
  std::sort(files.begin(), files.end());

  // Files are parsed on several threads (most of a start's CPU is parsing YAML and checking
  // patterns, file by file), then taken in order, so rules and errors come out as from one.
  std::vector<std::optional<Result<std::vector<Rule>>>> parsed(files.size());
  std::atomic<size_t> next_file{0};
  const auto parse_files = [&] {
    for (size_t i = next_file++; i < files.size(); i = next_file++) {
      try {
        Result<std::string> text = ReadYamlFile(files[i], "rule file");
        parsed[i].emplace(text.ok() ? ParseRules(text.value(), files[i])
                                    : Result<std::vector<Rule>>(text.errors()));
      } catch (const std::exception& e) {
        // Out of memory, say: reported against the file rather than ending a helper thread.
        parsed[i].emplace(Error{files[i], 0, "", "", std::string("cannot load: ") + e.what()});
      }
    }
  };
  {
    std::vector<std::jthread> helpers;
    const size_t threads = std::min(UsableCpus(), files.size() / kFilesPerParseThread + 1);
    try {
      for (size_t t = 1; t < threads; ++t) helpers.emplace_back(parse_files);
    } catch (const std::system_error&) {
      // Fewer threads: this one parses what the others do not.
    }
    parse_files();
  }
  std::vector<Rule> rules;
  std::map<std::string, const Rule*> seen;
  for (std::optional<Result<std::vector<Rule>>>& file : parsed) {
    if (!file->ok()) {
      errors.insert(errors.end(), file->errors().begin(), file->errors().end());
      continue;
    }
    for (Rule& rule : file->value()) rules.push_back(std::move(rule));
  }
  for (const Rule& rule : rules) {
    auto [it, inserted] = seen.emplace(rule.id, &rule);
    if (!inserted) {
      errors.push_back(Error{rule.file, rule.line, rule.id, "id",
                             "duplicate rule id, first defined at " + it->second->file + ":" +
                                 std::to_string(it->second->line)});
    }
  }
  if (!errors.empty()) return errors;
  return rules;
}

}  // namespace faultline
