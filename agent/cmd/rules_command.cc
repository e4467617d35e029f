// `faultline rules list|test|eval`: look at the rule pack, run its examples, measure it on a
// corpus of real logs.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include "agent/cmd/cli.h"
#include "agent/cmd/rule_draft.h"
#include "agent/cmd/scan_file.h"
#include "agent/discover/error_cues.h"
#include "agent/cmd/scan_report.h"
#include "agent/framing/line_framer.h"
#include "agent/framing/utf8.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

constexpr char kRulesUsage[] = R"(Usage: faultline rules <list|test|eval|suggest> [options]

  list [--rules DIR]... [--format text|json]
        every loaded rule: id, severity, category, title; then how many rules and failure
        classes (a rule's `class`, or its id) are loaded. JSON also has each rule's patterns
        (match, context, labels), for tools that measure or rewrite the pack
  test [DIR...]
        runs every rule's examples: each `match` example must raise the rule at its severity,
        no `no_match` example may; fails on any miss (default: the bundled pack)
  eval --corpus DIR [--classes FILE] [--rules DIR]...
        scans every log listed in DIR/MANIFEST.tsv and prints, per class, how many files were
        named with the expected rule (class-to-rule map: FILE, default tests/corpus/classes.tsv
        of the source tree), how many of those as a root cause rather than a consequence and as
        the report's first failure, and how many error-level findings the negative logs raised;
        fails on any miss or any such finding. A missing corpus is reported and skipped (exit 0).
  suggest --from LOG [--template ID] [--rules DIR]...
        scans LOG (- for stdin) like `faultline scan` and prints a draft rule (YAML) for one of
        its unrecognised errors: template ID, or the one that appeared first. Its root cause and
        fix are placeholders the rule loader rejects until you write them; its examples are the
        template's lines. Exit 1 when there is no unrecognised error (or no template ID).

Exit status: 0 all good, 1 a test or evaluation failed, 2 usage or rule errors.
)";

// Reads repeated --rules DIR options and returns the remaining arguments.
bool TakeRules(const Args& args, std::vector<std::string>& rules, Args& rest) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--rules") {
      if (i + 1 >= args.size()) {
        std::cerr << "faultline rules: --rules needs a value\n";
        return false;
      }
      rules.push_back(args[++i]);
    } else {
      rest.push_back(args[i]);
    }
  }
  if (rules.empty()) rules = DefaultRulePaths();
  return true;
}

int ListRules(const Args& args) {
  std::vector<std::string> paths;
  Args rest;
  if (!TakeRules(args, paths, rest)) return kExitUsage;
  bool json = false;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == "--format" && i + 1 < rest.size() &&
        (rest[i + 1] == "json" || rest[i + 1] == "text")) {
      json = rest[++i] == "json";
    } else {
      std::cerr << "faultline rules list: unexpected argument '" << rest[i] << "'\n";
      return kExitUsage;
    }
  }
  const auto rules = LoadRuleSetOrReport(paths);
  if (rules == nullptr) return kExitUsage;
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const Rule& r : rules->rules()) {
      nlohmann::json match = nlohmann::json::array();
      for (const std::string& pattern : r.match_lines) match.push_back(pattern);
      for (const SequenceMatch& sequence : r.sequences) {
        match.push_back({{"sequence", sequence.steps}, {"within_lines", sequence.within_lines}});
      }
      nlohmann::json context = nullptr;
      if (r.context) {
        const ContextSpec& c = *r.context;
        context = {{"within_lines", c.within_lines},
                   {"requires_any", c.requires_any},
                   {"downgrade_if_followed_by", c.downgrade_if_followed_by},
                   {"downgrade_if_preceded_by", c.downgrade_if_preceded_by},
                   {"downgrade_to", SeverityName(c.downgrade_to)}};
        if (c.unconfirmed_severity) {
          context["unconfirmed_severity"] = SeverityName(*c.unconfirmed_severity);
        }
      }
      nlohmann::json labels = nlohmann::json::object();
      for (const LabelSpec& label : r.labels) labels[label.name] = label.pattern;
      out.push_back({{"id", r.id},
                     {"class", r.failure_class},
                     {"role", r.role == RuleRole::kSymptom ? "symptom" : "root"},
                     {"generic", r.generic},
                     {"title", r.title},
                     {"severity", SeverityName(r.severity)},
                     {"category", r.category},
                     {"tags", r.tags},
                     {"file", r.file},
                     {"references", r.references},
                     {"has_fix_command", !r.fix_command.empty()},
                     {"examples_match", r.examples.match.size()},
                     {"examples_no_match", r.examples.no_match.size()},
                     {"consequence_of", r.consequence_of},
                     {"generic", r.generic},
                     {"match", match},
                     {"context", context},
                     {"labels", labels}});
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  std::set<std::string> classes;
  for (const Rule& r : rules->rules()) {
    std::cout << std::left << std::setw(52) << r.id << " " << std::setw(8)
              << SeverityName(r.severity) << " " << std::setw(12) << r.category << " " << r.title
              << "\n";
    classes.insert(r.failure_class);
  }
  std::cout << rules->rules().size() << " rules, " << classes.size() << " failure classes\n";
  return kExitOk;
}

// The highest severity at which `report` raised `rule`; nothing when it did not raise it.
std::optional<Severity> HighestSeverity(const ScanReport& report, const Rule& rule) {
  for (const ScanReport::Entry* e : report.Sorted()) {
    if (e->rule == &rule) return e->severity;
  }
  return std::nullopt;
}

std::string Quote(std::string_view text) {
  std::string shown = SanitizeForDisplay(text.substr(0, 160));
  for (char& c : shown) {
    if (c == '\n') c = ' ';
  }
  return "\"" + shown + (text.size() > 160 ? "...\"" : "\"");
}

int TestRules(const Args& args) {
  std::vector<std::string> paths;
  for (const std::string& a : args) {
    if (a.size() > 1 && a[0] == '-') {
      std::cerr << "faultline rules test: unknown option '" << a << "'\n";
      return kExitUsage;
    }
    paths.push_back(a);
  }
  if (paths.empty()) paths = DefaultRulePaths();
  const auto rules = LoadRuleSetOrReport(paths);
  if (rules == nullptr) return kExitUsage;
  MatchScratch scratch(rules->patterns());
  size_t examples = 0;
  size_t failures = 0;
  for (const Rule& rule : rules->rules()) {
    const std::string where = rule.file + ":" + std::to_string(rule.line);
    if (rule.examples.match.empty()) {
      std::cout << "FAIL " << rule.id << " (" << where
                << "): no `examples.match`: a rule without examples is untested\n";
      ++failures;
    }
    for (size_t i = 0; i < rule.examples.match.size(); ++i) {
      ++examples;
      ScanReport report;
      ScanText(rule.examples.match[i], "example", rules, scratch, report);
      if (HighestSeverity(report, rule) != rule.severity) {
        ++failures;
        std::cout << "FAIL " << rule.id << " (" << where << "): examples.match[" << i
                  << "] did not raise it at " << SeverityName(rule.severity) << ": "
                  << Quote(rule.examples.match[i]) << "\n";
      }
    }
    for (size_t i = 0; i < rule.examples.no_match.size(); ++i) {
      ++examples;
      ScanReport report;
      ScanText(rule.examples.no_match[i], "example", rules, scratch, report);
      if (const auto raised = HighestSeverity(report, rule); raised && *raised >= rule.severity) {
        ++failures;
        std::cout << "FAIL " << rule.id << " (" << where << "): examples.no_match[" << i
                  << "] raised it: " << Quote(rule.examples.no_match[i]) << "\n";
      }
    }
  }
  std::cout << "rules test: " << rules->rules().size() << " rules, " << examples
            << " examples, " << failures << " failed\n";
  return failures == 0 ? kExitOk : kExitFailuresFound;
}

std::vector<std::vector<std::string>> ReadTsv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '\t')) cells.push_back(cell);
    rows.push_back(std::move(cells));
  }
  return rows;
}

std::string DefaultClassesFile() {
  for (const std::string& rules_dir : DefaultRulePaths()) {
    const fs::path candidate = fs::path(rules_dir) / ".." / "tests" / "corpus" / "classes.tsv";
    std::error_code ec;
    if (fs::exists(candidate, ec)) return candidate.lexically_normal().string();
  }
  return "tests/corpus/classes.tsv";
}

int EvalRules(const Args& args) {
  std::vector<std::string> paths;
  Args rest;
  if (!TakeRules(args, paths, rest)) return kExitUsage;
  std::string corpus;
  std::string classes_file;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == "--corpus" && i + 1 < rest.size()) {
      corpus = rest[++i];
    } else if (rest[i] == "--classes" && i + 1 < rest.size()) {
      classes_file = rest[++i];
    } else {
      std::cerr << "faultline rules eval: unexpected argument '" << rest[i] << "'\n";
      return kExitUsage;
    }
  }
  if (corpus.empty()) {
    std::cerr << "faultline rules eval: --corpus DIR is required\n";
    return kExitUsage;
  }
  const std::string manifest = (fs::path(corpus) / "MANIFEST.tsv").string();
  std::error_code ec;
  if (!fs::exists(manifest, ec)) {
    std::cout << "rules eval: no corpus at " << corpus << " (no MANIFEST.tsv): evaluation skipped\n";
    return kExitOk;
  }
  if (classes_file.empty()) classes_file = DefaultClassesFile();
  if (!fs::exists(classes_file, ec)) {
    std::cerr << "faultline rules eval: class map " << classes_file << " not found\n";
    return kExitUsage;
  }
  const auto rules = LoadRuleSetOrReport(paths);
  if (rules == nullptr) return kExitUsage;

  std::map<std::string, std::set<std::string>> expected;  // class -> rule ids
  std::set<std::string> known_ids;
  for (const Rule& r : rules->rules()) known_ids.insert(r.id);
  bool bad_map = false;
  for (const auto& row : ReadTsv(classes_file)) {
    if (row.size() < 2 || row[0] == "class") continue;
    std::stringstream ids(row[1]);
    std::string id;
    while (std::getline(ids, id, ',')) {
      if (!known_ids.contains(id)) {
        std::cerr << classes_file << ": class " << row[0] << ": no loaded rule '" << id << "'\n";
        bad_map = true;
      }
      expected[row[0]].insert(id);
    }
  }
  if (bad_map) return kExitUsage;

  struct ClassStats {
    int files = 0;
    int named = 0;
    int as_root = 0;  // named as a root cause, not as the consequence of another finding
    int first = 0;    // named as the first failure
    int error_level = 0;  // negatives: files with an error-level finding
  };
  std::map<std::string, ClassStats> stats;
  std::vector<std::string> problems;
  MatchScratch scratch(rules->patterns());
  for (const auto& row : ReadTsv(manifest)) {
    if (row.size() < 2 || row[0] == "path") continue;
    const std::string& cls = row[1];
    ScanReport report;
    const Result<void> scanned =
        ScanPath((fs::path(corpus) / row[0]).string(), rules, scratch, report);
    if (!scanned.ok()) {
      std::cerr << "faultline rules eval: " << JoinErrors(scanned.errors()) << "\n";
      return kExitUsage;
    }
    ClassStats& s = stats[cls];
    ++s.files;
    if (cls == "negative") {
      for (const ScanReport::Entry* e : report.Sorted()) {
        if (IsFailure(e->severity)) {
          ++s.error_level;
          problems.push_back("negative " + row[0] + " raised " + e->rule->id + " at " +
                             std::string(SeverityName(e->severity)) + " (line " +
                             std::to_string(e->first_line) + ")");
          break;
        }
      }
      continue;
    }
    auto want = expected.find(cls);
    if (want == expected.end()) continue;
    bool named = false;
    for (const ScanReport::Entry* e : report.Sorted()) {
      if (want->second.contains(e->rule->id)) named = true;
    }
    const std::vector<ScanReport::Group> groups = report.Grouped();
    if (std::any_of(groups.begin(), groups.end(), [&](const ScanReport::Group& g) {
          return want->second.contains(g.root->rule->id);
        })) {
      ++s.as_root;
    }
    if (const auto first = report.FirstFailureOf(groups);
        first && want->second.contains(first->entry->rule->id)) {
      ++s.first;
    }
    if (named) {
      ++s.named;
    } else {
      std::string got;
      for (const ScanReport::Entry* e : report.Sorted()) {
        got += (got.empty() ? "" : ", ") + e->rule->id;
      }
      problems.push_back("missed " + row[0] + " (found: " + (got.empty() ? "nothing" : got) +
                         ")");
    }
  }

  std::cout << std::left << std::setw(34) << "class" << std::right << std::setw(7) << "files"
            << std::setw(8) << "named" << std::setw(8) << "root" << std::setw(8) << "first"
            << std::setw(13) << "error-level" << "\n";
  int covered_files = 0;
  int named_files = 0;
  int root_files = 0;
  int first_files = 0;
  int uncovered = 0;
  for (const auto& [cls, s] : stats) {
    std::cout << std::left << std::setw(34) << cls << std::right << std::setw(7) << s.files;
    if (cls == "negative") {
      std::cout << std::setw(8) << "-" << std::setw(8) << "-" << std::setw(8) << "-"
                << std::setw(13) << s.error_level << "\n";
    } else if (expected.contains(cls)) {
      covered_files += s.files;
      named_files += s.named;
      root_files += s.as_root;
      first_files += s.first;
      std::cout << std::setw(8) << s.named << std::setw(8) << s.as_root << std::setw(8) << s.first
                << std::setw(13) << "-" << "\n";
    } else {
      ++uncovered;
      std::cout << std::setw(8) << "n/a" << std::setw(8) << "-" << std::setw(8) << "-"
                << std::setw(13) << "-" << "  (no rule mapped)\n";
    }
  }
  std::cout << "\nrules eval: " << named_files << "/" << covered_files
            << " files of covered classes named (" << root_files << " as a root cause, "
            << first_files << " as the first failure), " << stats["negative"].error_level << "/"
            << stats["negative"].files << " negatives with an error-level finding, " << uncovered
            << " classes without a rule\n";
  for (const std::string& p : problems) std::cout << "  " << p << "\n";
  return problems.empty() ? kExitOk : kExitFailuresFound;
}

int SuggestRule(const Args& args) {
  std::vector<std::string> paths;
  Args rest;
  if (!TakeRules(args, paths, rest)) return kExitUsage;
  std::string log;
  std::string template_id;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == "--from" && i + 1 < rest.size()) {
      log = rest[++i];
    } else if (rest[i] == "--template" && i + 1 < rest.size()) {
      template_id = rest[++i];
    } else {
      std::cerr << "faultline rules suggest: unexpected argument '" << rest[i] << "'\n";
      return kExitUsage;
    }
  }
  if (log.empty()) {
    std::cerr << "faultline rules suggest: --from LOG is required\n";
    return kExitUsage;
  }
  const auto rules = LoadRuleSetOrReport(paths, WatchPatterns());
  if (rules == nullptr) return kExitUsage;
  const int fd = log == "-" ? STDIN_FILENO : open(log.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::cerr << "faultline rules suggest: cannot open " << log << ": " << std::strerror(errno)
              << "\n";
    return kExitUsage;
  }
  Discovery discovery;
  ScanReport report;
  MatchScratch scratch(rules->patterns());
  const Result<void> scanned =
      ScanFd(fd, log, rules, scratch, FramingOptions{}, report, nullptr, &discovery);
  if (fd != STDIN_FILENO) close(fd);
  if (!scanned.ok()) {
    std::cerr << "faultline rules suggest: " << JoinErrors(scanned.errors()) << "\n";
    return kExitUsage;
  }
  const std::vector<const TemplateStats*> templates = discovery.Sorted();
  if (templates.empty()) {
    std::cerr << "faultline rules suggest: no unrecognised errors in " << log
              << ": every error line there is explained by a rule (or there is none)\n";
    return kExitFailuresFound;
  }
  const TemplateStats* chosen = nullptr;
  if (!template_id.empty()) {
    chosen = discovery.Find(template_id);
  } else {
    // The first failure of a log is usually its cause.
    chosen = *std::min_element(templates.begin(), templates.end(),
                               [](const TemplateStats* a, const TemplateStats* b) {
                                 return a->first.line_number < b->first.line_number;
                               });
  }
  if (chosen == nullptr) {
    std::cerr << "faultline rules suggest: no template " << template_id << " in " << log
              << "; its templates are:\n";
  }
  if (chosen == nullptr || template_id.empty()) {
    for (const TemplateStats* t : templates) {
      if (t == chosen) continue;
      std::cerr << (chosen == nullptr ? "  " : "  also: ") << t->id << "  (" << t->count
                << (t->count == 1 ? " line)  " : " lines)  ") << SanitizeForDisplay(t->text)
                << "\n";
    }
    if (chosen == nullptr) return kExitFailuresFound;
  }
  const RuleDraft draft = DraftRule(*chosen, log);
  std::cout << draft.yaml;
  std::cerr << "faultline rules suggest: drafted " << draft.id << " from template " << chosen->id
            << " (" << chosen->count << (chosen->count == 1 ? " line" : " lines")
            << "); fill in root_cause and fix before it can load\n";
  return kExitOk;
}

}  // namespace

int RulesCommand(const Args& args) {
  if (args.empty() || IsHelp(args[0])) {
    (args.empty() ? std::cerr : std::cout) << kRulesUsage;
    return args.empty() ? kExitUsage : kExitOk;
  }
  const Args rest(args.begin() + 1, args.end());
  for (const std::string& a : rest) {
    if (IsHelp(a)) {
      std::cout << kRulesUsage;
      return kExitOk;
    }
  }
  if (args[0] == "list") return ListRules(rest);
  if (args[0] == "test") return TestRules(rest);
  if (args[0] == "eval") return EvalRules(rest);
  if (args[0] == "suggest") return SuggestRule(rest);
  std::cerr << "faultline rules: unknown subcommand '" << args[0] << "'\n" << kRulesUsage;
  return kExitUsage;
}

}  // namespace faultline
