// field_eval: the rule pack and discovery on real whole logs (tests/corpus/field/), as a user
// meets them, and the figures of issue 19.
//
//   field_eval DIR [--rules FOLDER...] [--max-healthy-errors N] [--max-templates-per-100k X]
//              [--min-named X] [--min-surfaced X] [--max-project-share X]
//
// DIR/MANIFEST.tsv lists the logs (path, kind, project, source, decisive_line, decisive_text,
// expected_class, note); DIR/classes.tsv maps each expected class to the rule ids that name it
// (an entry ending in '.' is a family of ids). Each log is scanned as `faultline scan` scans it,
// with discovery, and every finding and unrecognised line is noted with its line number:
// - a healthy log's error-level findings (each one would page someone) and its unrecognised
//   templates, summed as templates per 100k healthy lines;
// - a failing log's decisive line: *named* when a finding of a fitting rule at error severity or
//   worse is on it, *surfaced* when any finding or an unrecognised template is.
// The decisive line is found as the manifest gives it (a line number as `grep -n` counts, and a
// piece of its text), then mapped to faultline's own numbering, which also splits at a bare '\r'.
// Prints one row per log and the totals; exits 1 when a bound given is not met, or when the
// manifest is wrong (a decisive text not on its line, a log under 200 lines, one project over
// --max-project-share of the logs), 2 on usage or rule errors.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agent/cmd/cli.h"
#include "agent/cmd/scan_file.h"
#include "agent/discover/discovery.h"
#include "agent/discover/error_cues.h"

namespace faultline {
namespace {

constexpr size_t kMinLines = 200;

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(s);
  while (std::getline(in, cell, sep)) out.push_back(cell);
  return out;
}

// Every finding of a scan, by line, beside the report `scan` prints.
class RecordingReport : public ScanReport {
 public:
  struct Hit {
    const Rule* rule;
    Severity severity;
  };
  void OnFinding(const Finding& finding) override {
    hits[finding.line_number].push_back(Hit{finding.rule, finding.severity});
    ScanReport::OnFinding(finding);
  }
  std::map<uint64_t, std::vector<Hit>> hits;
};

struct LogResult {
  uint64_t lines = 0;
  size_t templates = 0;
  std::set<uint64_t> unrecognised;  // line numbers recorded as unrecognised
  std::map<uint64_t, std::vector<RecordingReport::Hit>> hits;
  std::vector<std::string> first_templates;  // a few, to print
};

bool Scan(const std::string& path, const std::shared_ptr<const RuleSet>& rules,
          LogResult& result) {
  Discovery discovery;
  discovery.SetObserver([&](const UnrecognisedLine& line, const TemplateStats&) {
    result.unrecognised.insert(line.line_number);
  });
  MatchScratch scratch(rules->patterns());
  RecordingReport report;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::cerr << "field_eval: cannot open " << path << "\n";
    return false;
  }
  const Result<void> scanned =
      ScanFd(fd, path, rules, scratch, FramingOptions{}, report, nullptr, &discovery);
  close(fd);
  const bool ok = scanned.ok();
  if (!ok) std::cerr << "field_eval: " << JoinErrors(scanned.errors()) << "\n";
  result.lines = report.lines();
  result.templates = discovery.size();
  result.hits = std::move(report.hits);
  for (const TemplateStats* t : discovery.Sorted()) {
    result.first_templates.push_back(t->text.substr(0, 160) + "  (line " +
                                     std::to_string(t->first.line_number) + ")");
  }
  discovery.SetObserver(nullptr);
  return ok;
}

// The framed line (faultline's numbering: '\n', "\r\n" and a bare '\r' end a line) holding
// `text` within the `grep_line`th '\n'-terminated line; 0 when the text is not on it.
uint64_t FramedLineOf(const std::string& bytes, uint64_t grep_line, const std::string& text) {
  uint64_t newline_line = 1;
  uint64_t framed = 1;
  std::string current;
  for (size_t i = 0; i <= bytes.size(); ++i) {
    const bool end = i == bytes.size();
    const char c = end ? '\n' : bytes[i];
    if (c == '\n' || c == '\r') {
      if (newline_line == grep_line && current.find(text) != std::string::npos) return framed;
      current.clear();
      if (c == '\r' && i + 1 < bytes.size() && bytes[i + 1] == '\n') ++i;
      if (c == '\n' || (i < bytes.size() && bytes[i] == '\n')) ++newline_line;
      ++framed;
      if (end) break;
      continue;
    }
    current.push_back(c);
  }
  return 0;
}

// Whether `rule` names the class whose classes.tsv entries are `ids`: a rule id, a failure class,
// a family ('gpu.cuda.'), a category ('category:build'), or '*' (any rule: a generic class such as
// a plain Python exception, which every specific rule on its line names better).
bool Fits(const Rule& rule, const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    if (id == "*" || rule.id == id || rule.failure_class == id ||
        (id.ends_with('.') && rule.id.starts_with(id)) ||
        (id.starts_with("category:") && rule.category == id.substr(9))) {
      return true;
    }
  }
  return false;
}

double Flag(const std::vector<std::string>& args, size_t& i) {
  if (i + 1 >= args.size()) {
    std::cerr << "field_eval: " << args[i] << " needs a value\n";
    std::exit(2);
  }
  return std::stod(args[++i]);
}

int Main(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << "field_eval DIR [--rules FOLDER...] [--max-healthy-errors N] "
                 "[--max-templates-per-100k X] [--min-named X] [--min-surfaced X] "
                 "[--max-project-share X]\n";
    return 2;
  }
  const std::string dir = args[0];
  std::vector<std::string> rule_paths;
  double max_healthy_errors = -1, max_templates = -1, min_named = -1, min_surfaced = -1;
  double max_project_share = -1;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--rules" && i + 1 < args.size()) {
      rule_paths.push_back(args[++i]);
    } else if (args[i] == "--max-healthy-errors") {
      max_healthy_errors = Flag(args, i);
    } else if (args[i] == "--max-templates-per-100k") {
      max_templates = Flag(args, i);
    } else if (args[i] == "--min-named") {
      min_named = Flag(args, i);
    } else if (args[i] == "--min-surfaced") {
      min_surfaced = Flag(args, i);
    } else if (args[i] == "--max-project-share") {
      max_project_share = Flag(args, i);
    } else {
      std::cerr << "field_eval: unknown argument " << args[i] << "\n";
      return 2;
    }
  }
  if (rule_paths.empty()) rule_paths = DefaultRulePaths();
  const auto rules = LoadRuleSetOrReport(rule_paths, WatchPatterns());
  if (rules == nullptr) return 2;

  std::map<std::string, std::vector<std::string>> fitting;
  {
    std::ifstream classes(dir + "/classes.tsv");
    for (std::string row; std::getline(classes, row);) {
      if (row.empty() || row[0] == '#' || row.starts_with("class\t")) continue;
      const auto cells = Split(row, '\t');
      if (cells.size() >= 2) fitting[cells[0]] = Split(cells[1], ',');
    }
  }
  std::ifstream manifest(dir + "/MANIFEST.tsv");
  if (!manifest) {
    std::cerr << "field_eval: no " << dir << "/MANIFEST.tsv\n";
    return 2;
  }
  bool manifest_ok = true;
  size_t logs = 0, healthy = 0, healthy_paging = 0, healthy_errors = 0, failing = 0, named = 0;
  size_t surfaced = 0;
  uint64_t healthy_lines = 0, failing_lines = 0;
  size_t healthy_templates = 0;
  std::map<std::string, size_t> per_project;
  std::cout << "kind     lines  result                       log\n";
  for (std::string row; std::getline(manifest, row);) {
    if (row.empty() || row.starts_with("path\t")) continue;
    const auto cells = Split(row, '\t');
    if (cells.size() < 7) {
      std::cerr << "field_eval: MANIFEST row with " << cells.size() << " cells: " << row << "\n";
      manifest_ok = false;
      continue;
    }
    const std::string& file = cells[0];
    const std::string& kind = cells[1];
    ++logs;
    ++per_project[cells[2]];
    LogResult result;
    if (!Scan(dir + "/" + file, rules, result)) return 2;
    if (result.lines < kMinLines) {
      std::cerr << "field_eval: " << file << " has " << result.lines << " lines, under "
                << kMinLines << "\n";
      manifest_ok = false;
    }
    char prefix[64];
    std::snprintf(prefix, sizeof prefix, "%-8s %6llu  ", kind.c_str(),
                  static_cast<unsigned long long>(result.lines));
    if (kind == "healthy") {
      ++healthy;
      healthy_lines += result.lines;
      healthy_templates += result.templates;
      std::vector<std::string> errors;
      for (const auto& [line, hits] : result.hits) {
        for (const auto& hit : hits) {
          if (IsFailure(hit.severity)) {
            errors.push_back(std::string(SeverityName(hit.severity)) + " " + hit.rule->id +
                             " at line " + std::to_string(line));
          }
        }
      }
      healthy_errors += errors.size();
      if (!errors.empty()) ++healthy_paging;
      char cell[64];
      std::snprintf(cell, sizeof cell, "%zu errors, %zu templates", errors.size(),
                    result.templates);
      std::printf("%s%-28s %s\n", prefix, cell, file.c_str());
      for (const std::string& e : errors) std::printf("    FALSE ALARM %s\n", e.c_str());
      for (const std::string& t : result.first_templates) std::printf("    template %s\n", t.c_str());
      continue;
    }
    if (kind != "failing") {
      std::cerr << "field_eval: " << file << ": kind must be healthy or failing, not " << kind
                << "\n";
      manifest_ok = false;
      continue;
    }
    ++failing;
    failing_lines += result.lines;
    std::ifstream in(dir + "/" + file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const uint64_t decisive = FramedLineOf(bytes, std::stoull(cells[4]), cells[5]);
    if (decisive == 0) {
      std::cerr << "field_eval: " << file << ": '" << cells[5] << "' is not on line " << cells[4]
                << "\n";
      manifest_ok = false;
      continue;
    }
    const std::string& expected = cells[6];
    const auto fit = fitting.find(expected);
    if (fit == fitting.end()) {
      std::cerr << "field_eval: class " << expected << " of " << file << " is not in classes.tsv\n";
      manifest_ok = false;
    }
    std::string by = "-";
    bool is_named = false, is_surfaced = false;
    if (const auto at = result.hits.find(decisive); at != result.hits.end()) {
      for (const auto& hit : at->second) {
        if (IsFailure(hit.severity) && fit != fitting.end() && Fits(*hit.rule, fit->second)) {
          is_named = true;
          by = hit.rule->id;
        }
        is_surfaced = true;
        if (by == "-") by = hit.rule->id + " (" + std::string(SeverityName(hit.severity)) + ")";
      }
    }
    if (!is_surfaced && result.unrecognised.contains(decisive)) {
      is_surfaced = true;
      by = "unrecognised";
    }
    named += is_named;
    surfaced += is_surfaced;
    char cell[64];
    std::snprintf(cell, sizeof cell, "%s %s", is_named ? "NAMED" : (is_surfaced ? "surfaced" : "MISSED"),
                  expected.c_str());
    std::printf("%s%-28s %s\n    line %llu: %s\n", prefix, cell, file.c_str(),
                static_cast<unsigned long long>(decisive), by.c_str());
  }
  const double templates_per_100k =
      healthy_lines == 0 ? 0 : 100000.0 * static_cast<double>(healthy_templates) /
                                   static_cast<double>(healthy_lines);
  const double named_share = failing == 0 ? 1 : static_cast<double>(named) / failing;
  const double surfaced_share = failing == 0 ? 1 : static_cast<double>(surfaced) / failing;
  std::printf(
      "\nfield corpus: %zu logs (%zu healthy, %llu lines; %zu failing, %llu lines)\n"
      "healthy: %zu of %zu logs raise an error-level finding (%zu findings); %.1f unrecognised "
      "templates per 100k lines (%zu)\n"
      "failing: decisive line named in %zu of %zu (%.0f%%), surfaced in %zu of %zu (%.0f%%)\n",
      logs, healthy, static_cast<unsigned long long>(healthy_lines), failing,
      static_cast<unsigned long long>(failing_lines), healthy_paging, healthy, healthy_errors,
      templates_per_100k, healthy_templates, named, failing, 100 * named_share, surfaced, failing,
      100 * surfaced_share);
  size_t largest = 0;
  std::string largest_project;
  for (const auto& [project, n] : per_project) {
    if (n > largest) largest = n, largest_project = project;
  }
  std::printf("largest source: %s, %zu of %zu logs\n", largest_project.c_str(), largest, logs);
  bool ok = manifest_ok;
  if (max_project_share >= 0 && largest > max_project_share * static_cast<double>(logs)) {
    std::printf("FAIL: %s holds more than %.0f%% of the logs\n", largest_project.c_str(),
                100 * max_project_share);
    ok = false;
  }
  if (max_healthy_errors >= 0 && healthy_errors > max_healthy_errors) {
    std::printf("FAIL: %zu error-level findings on healthy logs (at most %.0f)\n", healthy_errors,
                max_healthy_errors);
    ok = false;
  }
  if (max_templates >= 0 && templates_per_100k > max_templates) {
    std::printf("FAIL: %.1f templates per 100k healthy lines (at most %.1f)\n", templates_per_100k,
                max_templates);
    ok = false;
  }
  if (min_named >= 0 && named_share < min_named) {
    std::printf("FAIL: named share %.2f under %.2f\n", named_share, min_named);
    ok = false;
  }
  if (min_surfaced >= 0 && surfaced_share < min_surfaced) {
    std::printf("FAIL: surfaced share %.2f under %.2f\n", surfaced_share, min_surfaced);
    ok = false;
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace faultline

int main(int argc, char** argv) {
  return faultline::Main(std::vector<std::string>(argv + 1, argv + argc));
}
