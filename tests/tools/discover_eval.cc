// discover_eval: measures discovery (agent/discover/) and prints the figures.
//
//   discover_eval loghub DIR [--datasets A,B,...] [--min-average X] [--min-each X]
//       Grouping accuracy (GA, see DIR/README.md) of the template miner on the Loghub 2k samples,
//       given each line's Content, beside Drain as published (drain_reference.h, its per-dataset
//       regexes and thresholds) in the same run. Fails when the miner's average or any dataset
//       is below the given floors.
//   discover_eval corpus DIR [--rules FOLDER... | --no-rules]
//       Scans each failure log of DIR/MANIFEST.tsv (not the negatives) as `faultline scan` does,
//       with discovery, and counts the files where a line holding one of the listed key phrases
//       was recorded as unrecognised (with --no-rules no rule explains anything), and the files
//       with any unrecognised template. Then the negatives: templates per 100k lines.
//   discover_eval noise [--rules FOLDER... | --no-rules] FILE...
//       Scans FILEs (healthy logs, the generated benchmark log) and prints the unrecognised
//       templates and how many there are per 100k lines.
//   discover_eval memory [N [PADDING]]
//       Records N (default 5000) distinct templates of three lines each (PADDING more bytes per
//       line) into a Discovery capped at 1,000 templates and prints its bytes and the process's
//       RSS growth.
//
// A test-side tool: ctest runs `loghub` on a few datasets with a floor (tests/CMakeLists.txt).
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
#include <unordered_map>
#include <vector>

#include "agent/cmd/cli.h"
#include "agent/cmd/scan_file.h"
#include "agent/discover/discovery.h"
#include "agent/discover/masker.h"
#include "agent/discover/template_miner.h"
#include "tests/tools/drain_reference.h"

namespace faultline {
namespace {

const std::vector<std::string> kDatasets = {
    "HDFS",      "Hadoop",  "Spark",     "Zookeeper", "BGL",    "HPC",       "Thunderbird",
    "Windows",   "Linux",   "Android",   "HealthApp", "Apache", "Proxifier", "OpenSSH",
    "OpenStack", "Mac"};

// One CSV record (RFC 4180: quoted fields, "" inside quotes); false at the end of the input.
bool ReadCsvRecord(std::istream& in, std::vector<std::string>& fields) {
  fields.clear();
  std::string field;
  bool quoted = false;
  bool any = false;
  char c;
  while (in.get(c)) {
    any = true;
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') {
          field.push_back('"');
          in.get(c);
        } else {
          quoted = false;
        }
      } else {
        field.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      field.push_back(c);
    }
  }
  if (!any) return false;
  fields.push_back(std::move(field));
  return true;
}

// The share of lines whose predicted group is exactly their true group.
double GroupingAccuracy(const std::vector<std::string>& predicted,
                        const std::vector<std::string>& truth) {
  std::unordered_map<std::string, std::vector<size_t>> by_predicted;
  std::unordered_map<std::string, size_t> truth_sizes;
  for (size_t i = 0; i < predicted.size(); ++i) {
    by_predicted[predicted[i]].push_back(i);
    ++truth_sizes[truth[i]];
  }
  size_t correct = 0;
  for (const auto& [key, lines] : by_predicted) {
    const std::string& t = truth[lines[0]];
    const bool pure = std::all_of(lines.begin(), lines.end(),
                                  [&](size_t i) { return truth[i] == t; });
    if (pure && truth_sizes[t] == lines.size()) correct += lines.size();
  }
  return predicted.empty() ? 0 : static_cast<double>(correct) / static_cast<double>(predicted.size());
}

std::vector<std::string> SplitList(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int Loghub(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << "discover_eval loghub DIR [--datasets A,B] [--min-average X] [--min-each X]\n";
    return 2;
  }
  const std::string dir = args[0];
  std::vector<std::string> datasets = kDatasets;
  double min_average = 0;
  double min_each = 0;
  for (size_t i = 1; i + 1 < args.size(); i += 2) {
    if (args[i] == "--datasets") datasets = SplitList(args[i + 1], ',');
    if (args[i] == "--min-average") min_average = std::stod(args[i + 1]);
    if (args[i] == "--min-each") min_each = std::stod(args[i + 1]);
  }
  if (access((dir + "/README.md").c_str(), R_OK) != 0) {
    // A user's own clone has no shared/ samples beside it; CI has them.
    std::printf("no Loghub samples at %s: evaluation skipped\n", dir.c_str());
    return 0;
  }
  std::printf("%-12s %6s %9s %9s %10s\n", "dataset", "lines", "faultline", "Drain", "templates");
  double sum = 0;
  double drain_sum = 0;
  bool below = false;
  for (const std::string& name : datasets) {
    const std::string path = dir + "/" + name + "/" + name + "_2k.log_structured.csv";
    std::ifstream in(path, std::ios::binary);
    std::vector<std::string> fields;
    if (!in || !ReadCsvRecord(in, fields)) {
      std::cerr << "discover_eval: cannot read " << path << "\n";
      return 2;
    }
    const auto column = [&](const char* want) {
      return std::find(fields.begin(), fields.end(), want) - fields.begin();
    };
    const size_t content = column("Content");
    const size_t event = column("EventId");
    if (content >= fields.size() || event >= fields.size()) {
      std::cerr << "discover_eval: " << path << " has no Content or EventId column\n";
      return 2;
    }
    const DrainSettings* settings = PublishedDrainSettings(name);
    TemplateMiner miner;
    std::unique_ptr<DrainReference> drain =
        settings ? std::make_unique<DrainReference>(*settings) : nullptr;
    std::vector<std::string> truth;
    std::vector<uint32_t> slots;
    std::vector<size_t> drain_clusters;
    std::vector<std::string> tokens;
    while (ReadCsvRecord(in, fields)) {
      if (fields.size() <= std::max(content, event)) continue;
      truth.push_back(fields[event]);
      MaskLine(fields[content], tokens);
      slots.push_back(miner.Add(tokens).slot);
      if (drain) drain_clusters.push_back(drain->Add(fields[content]));
    }
    std::vector<std::string> predicted;
    for (uint32_t slot : slots) predicted.push_back(std::to_string(slot));
    const double ga = GroupingAccuracy(predicted, truth);
    double drain_ga = 0;
    if (drain) {
      // As logparser's evaluator: lines grouped by their final template text.
      std::vector<std::string> by_template;
      for (size_t c : drain_clusters) by_template.push_back(drain->Template(c));
      drain_ga = GroupingAccuracy(by_template, truth);
    }
    sum += ga;
    drain_sum += drain_ga;
    below = below || ga < min_each;
    std::printf("%-12s %6zu %9.3f %9.3f %10zu\n", name.c_str(), truth.size(), ga, drain_ga,
                miner.size());
  }
  const double average = sum / static_cast<double>(datasets.size());
  std::printf("%-12s %6s %9.3f %9.3f\n", "average", "", average,
              drain_sum / static_cast<double>(datasets.size()));
  if (average < min_average || below) {
    std::printf("FAIL: below the floor (average %.3f, each %.3f)\n", min_average, min_each);
    return 1;
  }
  return 0;
}

struct FileResult {
  std::set<uint64_t> recorded;  // line numbers recorded as unrecognised
  size_t lines = 0;
  size_t templates = 0;
};

// Scans `path` as `faultline scan` does, with discovery, and notes which lines were recorded.
bool ScanWithDiscovery(const std::string& path, const std::shared_ptr<const RuleSet>& rules,
                       FileResult& result, Discovery** kept = nullptr) {
  static std::vector<std::unique_ptr<Discovery>> discoveries;
  discoveries.push_back(std::make_unique<Discovery>());
  Discovery& discovery = *discoveries.back();
  discovery.SetObserver([&](const UnrecognisedLine& line, const TemplateStats&) {
    result.recorded.insert(line.line_number);
  });
  MatchScratch scratch(rules->patterns());
  ScanReport report;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::cerr << "discover_eval: cannot open " << path << "\n";
    return false;
  }
  const Result<void> scanned =
      ScanFd(fd, path, rules, scratch, FramingOptions{}, report, nullptr, &discovery);
  close(fd);
  const bool ok = scanned.ok();
  if (!ok) std::cerr << "discover_eval: " << JoinErrors(scanned.errors()) << "\n";
  result.lines = report.lines();
  result.templates = discovery.size();
  discovery.SetObserver(nullptr);
  if (kept != nullptr) *kept = &discovery;
  return ok;
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// `--rules FOLDER`... (default: the bundled pack), or `--no-rules`: no rule at all, what
// `--rules` at an empty folder means (the loader itself refuses a folder without rule files).
std::shared_ptr<const RuleSet> RulesFrom(const std::vector<std::string>& args, size_t& i) {
  std::vector<std::string> paths;
  for (; i < args.size(); ++i) {
    if (args[i] == "--rules" && i + 1 < args.size()) {
      paths.push_back(args[++i]);
    } else if (args[i] == "--no-rules") {
      ++i;
      return RuleSet::Compile({}, "", WatchPatterns()).value();
    } else {
      break;
    }
  }
  if (paths.empty()) paths = DefaultRulePaths();
  return LoadRuleSetOrReport(paths, WatchPatterns());
}

int Corpus(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << "discover_eval corpus DIR [--rules FOLDER... | --no-rules]\n";
    return 2;
  }
  const std::string dir = args[0];
  size_t i = 1;
  const auto rules = RulesFrom(args, i);
  if (rules == nullptr) return 2;
  std::ifstream manifest(dir + "/MANIFEST.tsv");
  if (!manifest) {
    std::cerr << "discover_eval: no " << dir << "/MANIFEST.tsv\n";
    return 2;
  }
  std::string row;
  size_t files = 0, found = 0, any = 0, negative_lines = 0, negative_templates = 0;
  std::vector<std::string> misses;
  while (std::getline(manifest, row)) {
    const std::vector<std::string> cells = SplitList(row, '\t');
    if (cells.size() < 3 || cells[0] == "path") continue;
    const std::string path = dir + "/" + cells[0];
    FileResult result;
    Discovery* discovery = nullptr;
    if (!ScanWithDiscovery(path, rules, result, &discovery)) return 2;
    if (cells[1] == "negative") {
      negative_lines += result.lines;
      negative_templates += result.templates;
      for (const TemplateStats* t : discovery->Sorted()) {
        std::cout << "  negative " << cells[0] << ": " << t->text << "\n";
      }
      continue;
    }
    ++files;
    if (result.templates > 0) ++any;
    // The key phrases of the file (MANIFEST's expected_signature_keywords, split at " || ").
    std::vector<std::string> keys;
    std::string rest = cells[2];
    for (size_t at; (at = rest.find(" || ")) != std::string::npos; rest.erase(0, at + 4)) {
      keys.push_back(rest.substr(0, at));
    }
    keys.push_back(rest);
    const std::vector<std::string> lines = ReadLines(path);
    bool hit = false;
    for (size_t n = 0; n < lines.size() && !hit; ++n) {
      for (const std::string& key : keys) {
        if (!key.empty() && lines[n].find(key) != std::string::npos &&
            result.recorded.contains(n + 1)) {
          hit = true;
        }
      }
    }
    if (hit) {
      ++found;
    } else {
      misses.push_back(cells[0] + (result.templates > 0 ? " (other templates: " +
                                                               std::to_string(result.templates) + ")"
                                                         : " (no template)"));
    }
  }
  std::printf("failure files: %zu; failure line among unrecognised: %zu (%.0f%%); any unrecognised "
              "template: %zu (%.0f%%)\n",
              files, found, 100.0 * found / std::max<size_t>(files, 1), any,
              100.0 * any / std::max<size_t>(files, 1));
  std::printf("negatives: %zu lines, %zu templates (%.1f per 100k lines)\n", negative_lines,
              negative_templates, 1e5 * negative_templates / std::max<size_t>(negative_lines, 1));
  for (const std::string& m : misses) std::cout << "  missed " << m << "\n";
  return 0;
}

int Noise(const std::vector<std::string>& args) {
  size_t i = 0;
  const auto rules = RulesFrom(args, i);
  if (rules == nullptr) return 2;
  size_t lines = 0, templates = 0, unrecognised = 0;
  for (; i < args.size(); ++i) {
    FileResult result;
    Discovery* discovery = nullptr;
    if (!ScanWithDiscovery(args[i], rules, result, &discovery)) return 2;
    lines += result.lines;
    templates += result.templates;
    unrecognised += discovery->lines();
    for (const TemplateStats* t : discovery->Sorted()) {
      std::cout << "  " << args[i] << ": " << t->count << "x [" << CueName(t->cue) << "] "
                << t->text.substr(0, 160) << "\n";
    }
  }
  std::printf("%zu lines, %zu unrecognised lines in %zu templates: %.2f templates per 100k lines\n",
              lines, unrecognised, templates, 1e5 * templates / std::max<size_t>(lines, 1));
  return 0;
}

long RssKiB() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long value = 0;
  while (status >> key) {
    if (key == "VmRSS:") {
      status >> value;
      return value;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

int Memory(const std::vector<std::string>& args) {
  const size_t n = args.empty() ? 5000 : std::stoul(args[0]);
  const size_t padding = args.size() > 1 ? std::stoul(args[1]) : 0;
  // Five letters from a number: three such words per line, each a different function of k,
  // make any two lines differ in three words, so none joins another's template.
  const auto word = [](size_t x) {
    std::string w;
    for (int i = 0; i < 5; ++i, x /= 26) w.push_back(static_cast<char>('a' + x % 26));
    return w;
  };
  const long before = RssKiB();
  Discovery discovery(DiscoveryOptions{.max_templates = 1000});
  uint64_t line_number = 0;
  for (size_t k = 0; k < n; ++k) {
    // Three lines per template, with numbers and a path that vary as in real lines, so each
    // keeps three examples: about 130 bytes each, plus `padding` bytes of message.
    for (int repeat = 0; repeat < 3; ++repeat) {
      const std::string line = "RuntimeError: " + word(k) + " stage " + word(k * 7 + 3) +
                               " failed in " + word(k * 13 + 5) + " at step " +
                               std::to_string(k * 3 + repeat) + " reading /data/shard" +
                               std::to_string(k % 97 + repeat) + "/part-" + std::to_string(k) +
                               ".arrow: unexpected end of stream " + std::string(padding, 'x');
      discovery.Record({ErrorCue::kException, "train", "/logs/train.log", ++line_number, line});
    }
  }
  const long after = RssKiB();
  std::printf("%zu templates of 3 lines (%zu bytes of padding each): %zu held, %llu evicted; "
              "%.2f MiB held (ApproximateBytes), RSS +%.2f MiB\n",
              n, padding, discovery.size(), static_cast<unsigned long long>(discovery.evictions()),
              discovery.ApproximateBytes() / 1048576.0, (after - before) / 1024.0);
  return 0;
}

}  // namespace
}  // namespace faultline

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << "usage: discover_eval loghub|corpus|noise|memory ...\n";
    return 2;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "loghub") return faultline::Loghub(rest);
  if (args[0] == "corpus") return faultline::Corpus(rest);
  if (args[0] == "noise") return faultline::Noise(rest);
  if (args[0] == "memory") return faultline::Memory(rest);
  std::cerr << "discover_eval: unknown command '" << args[0] << "'\n";
  return 2;
}
