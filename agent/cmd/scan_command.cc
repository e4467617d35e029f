// `faultline scan FILE... | -`: diagnose finished logs with the same engine as the daemon.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/cmd/cli.h"
#include "agent/cmd/scan_file.h"
#include "agent/cmd/scan_report.h"
#include "agent/core/usable_cpus.h"
#include "agent/discover/discovery.h"
#include "agent/discover/error_cues.h"
#include "agent/framing/line_framer.h"

namespace faultline {
namespace {

constexpr char kScanUsage[] = R"(Usage: faultline scan [options] FILE... | -

Diagnoses finished logs (or standard input, named -) against the rule pack and prints each
failure found: what it is, how many lines matched, where it first appeared, its root cause and fix.

Options:
  --rules DIR          rule folder or file to use instead of the bundled pack (repeatable);
                       an empty folder or `--rules none` loads no rules, so only the
                       unrecognised errors are listed (discovery on its own)
  --format text|json   report for people (default) or one JSON object for machines
  --max-line-bytes N   cut lines longer than N bytes (default 1048576)
  --input-format auto|plain|cri|docker
                       what a line is: cri reads a Kubernetes container log (containerd,
                       CRI-O: the time/stream/tag prefix removed, split messages joined),
                       docker a Docker json-file log (the "log" string unescaped, split lines
                       joined); auto (default) decides for each file by its first line
  --threads N          threads matching ahead of the reader (default: the CPUs this process may
                       use, at most 8; 1 matches on the reading thread); the findings are the same
  --fail-on-unrecognised
                       unrecognised errors (error lines no rule names) count as failures
  --no-discover        do not look for unrecognised errors
  -h, --help           this help

After the findings comes a list of unrecognised errors: lines that look like errors (an
exception, a compiler error, an ERROR or FATAL log level, a crash, a non-zero exit status, ...)
that no rule explains, grouped into templates. `faultline rules suggest --from FILE` drafts a
rule from one.

Exit status: 0 nothing of severity error or critical found, 1 something was (or, with
--fail-on-unrecognised, an unrecognised error), 2 usage, rule or input error.
)";

// The config's limit too: line offsets in a batch are 32-bit, and no real log line is longer.
constexpr unsigned long long kMaxLineBytesLimit = 64ull << 20;
// Beyond this, more matching threads wait on the one thread that frames and settles the lines.
constexpr unsigned long kMaxThreads = 8;
// Below this a scan finishes before a progress bar would be worth drawing.
constexpr uint64_t kProgressMinBytes = 64ull << 20;

struct ScanOptions {
  std::vector<std::string> rule_paths;
  bool json = false;
  FramingOptions framing;
  bool discover = true;
  bool fail_on_unrecognised = false;
  size_t threads = std::min<size_t>(UsableCpus(), kMaxThreads);
  std::vector<std::string> inputs;
};

// Draws "scanning: 42% (3/7 files)" on stderr, only when stderr is a terminal.
class Progress {
 public:
  Progress(uint64_t total_bytes, size_t files)
      : enabled_(total_bytes >= kProgressMinBytes && isatty(STDERR_FILENO) == 1),
        total_(total_bytes),
        files_(files) {}
  ~Progress() {
    if (drawn_) std::cerr << "\r\x1b[K" << std::flush;
  }
  void Advance(uint64_t bytes, size_t file_index) {
    done_ += bytes;
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    drawn_ = true;
    std::cerr << "\rscanning: " << (done_ * 100 / total_) << "% (" << file_index + 1 << "/"
              << files_ << " files)" << std::flush;
  }

 private:
  const bool enabled_;
  const uint64_t total_;
  const size_t files_;
  uint64_t done_ = 0;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_;
};

// Returns false (and explains on stderr) when the arguments are not usable.
bool ParseScanArgs(const Args& args, ScanOptions& options, bool& help) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* flag) -> const std::string* {
      if (i + 1 >= args.size()) {
        std::cerr << "faultline scan: " << flag << " needs a value\n";
        return nullptr;
      }
      return &args[++i];
    };
    if (IsHelp(a)) {
      help = true;
      return true;
    } else if (a == "--rules") {
      const std::string* v = value("--rules");
      if (v == nullptr) return false;
      options.rule_paths.push_back(*v);
    } else if (a == "--format") {
      const std::string* v = value("--format");
      if (v == nullptr) return false;
      if (*v != "text" && *v != "json") {
        std::cerr << "faultline scan: --format must be text or json, not '" << *v << "'\n";
        return false;
      }
      options.json = *v == "json";
    } else if (a == "--max-line-bytes") {
      const std::string* v = value("--max-line-bytes");
      if (v == nullptr) return false;
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v->c_str(), &end, 10);
      if (end == v->c_str() || *end != '\0' || n == 0 || n > kMaxLineBytesLimit) {
        std::cerr << "faultline scan: --max-line-bytes must be a number from 1 to "
                  << kMaxLineBytesLimit << "\n";
        return false;
      }
      options.framing.max_line_bytes = n;
    } else if (a == "--input-format") {
      const std::string* v = value("--input-format");
      if (v == nullptr) return false;
      const std::optional<LineFormat> format = ParseLineFormat(*v);
      if (!format) {
        std::cerr << "faultline scan: --input-format must be one of " << kLineFormatNames
                  << ", not '" << *v << "'\n";
        return false;
      }
      options.framing.format = *format;
    } else if (a == "--threads") {
      const std::string* v = value("--threads");
      if (v == nullptr) return false;
      char* end = nullptr;
      const unsigned long n = std::strtoul(v->c_str(), &end, 10);
      if (end == v->c_str() || *end != '\0' || n == 0 || n > kMaxThreads) {
        std::cerr << "faultline scan: --threads must be a number from 1 to " << kMaxThreads << "\n";
        return false;
      }
      options.threads = n;
    } else if (a == "--no-discover") {
      options.discover = false;
    } else if (a == "--fail-on-unrecognised") {
      options.fail_on_unrecognised = true;
    } else if (a.size() > 1 && a[0] == '-') {
      std::cerr << "faultline scan: unknown option '" << a << "'\n";
      return false;
    } else {
      options.inputs.push_back(a);
    }
  }
  if (options.inputs.empty()) {
    std::cerr << "faultline scan: name at least one FILE, or - for standard input\n";
    return false;
  }
  return true;
}

}  // namespace

int ScanCommand(const Args& args) {
  ScanOptions options;
  bool help = false;
  if (!ParseScanArgs(args, options, help)) {
    std::cerr << "Try 'faultline scan --help'.\n";
    return kExitUsage;
  }
  if (help) {
    std::cout << kScanUsage;
    return kExitOk;
  }
  if (options.fail_on_unrecognised && !options.discover) {
    std::cerr << "faultline scan: --fail-on-unrecognised needs discovery; drop --no-discover\n";
    return kExitUsage;
  }
  const auto rules =
      LoadRuleSetOrReport(options.rule_paths.empty() ? DefaultRulePaths() : options.rule_paths,
                          options.discover ? WatchPatterns() : std::vector<std::string>{});
  if (rules == nullptr) return kExitUsage;

  // Open everything first: a typo in the last file name should not cost a long scan.
  std::vector<int> fds;
  uint64_t total_bytes = 0;
  bool open_failed = false;
  for (const std::string& input : options.inputs) {
    const int fd = input == "-" ? STDIN_FILENO : open(input.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      std::cerr << "faultline scan: cannot open " << input << ": " << std::strerror(errno) << "\n";
      open_failed = true;
      continue;
    }
    struct stat st {};
    if (fstat(fd, &st) == 0) {
      if (S_ISREG(st.st_mode)) total_bytes += st.st_size;
      if (S_ISDIR(st.st_mode)) {
        std::cerr << "faultline scan: " << input << " is a directory\n";
        open_failed = true;
      }
    }
    fds.push_back(fd);
  }
  if (open_failed) {
    for (int fd : fds) {
      if (fd != STDIN_FILENO) close(fd);
    }
    return kExitUsage;
  }

  ScanReport report;
  Discovery discovery;
  if (options.discover) report.ShowUnrecognised(&discovery);
  MatchScratch scratch(rules->patterns());
  // Two slots per worker: one being matched, one framed and waiting, so no worker idles while
  // the reading thread settles a batch.
  const std::unique_ptr<MatchAhead> ahead =
      options.threads > 1
          ? MatchAhead::Start(rules->patterns(), options.threads, 2 * options.threads + 1)
          : nullptr;
  bool read_failed = false;
  {
    Progress progress(total_bytes, fds.size());
    for (size_t i = 0; i < fds.size(); ++i) {
      const Result<void> scanned = ScanFd(
          fds[i], options.inputs[i], rules, scratch, options.framing, report,
          [&](size_t n) { progress.Advance(n, i); }, options.discover ? &discovery : nullptr,
          ahead.get());
      if (!scanned.ok()) {
        std::cerr << "faultline scan: " << JoinErrors(scanned.errors()) << "\n";
        read_failed = true;
      }
      if (fds[i] != STDIN_FILENO) close(fds[i]);
    }
  }
  if (options.json) {
    report.PrintJson(std::cout);
  } else {
    report.PrintText(std::cout);
  }
  std::cout << std::flush;
  if (read_failed) return kExitUsage;
  const bool failed =
      report.HasFailure() || (options.fail_on_unrecognised && report.HasUnrecognised());
  return failed ? kExitFailuresFound : kExitOk;
}

}  // namespace faultline
