#include "agent/cmd/cli.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "agent/core/version.h"
#include "agent/match/database_cache.h"
#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

constexpr char kUsage[] =
    R"(faultline: recognises known build and ML-training failures in logs, counts them and
serves the counts to Prometheus.

Usage: faultline <command> [options]

Commands:
  scan FILE... | -        diagnose finished logs (or stdin) and print what failed and how to fix it
  run -c CONFIG           watch logs as they are written; serve /metrics and /healthz
  watch -- CMD ARGS...    run a command, pass its output through, diagnose it when it ends
  check -c CONFIG         validate a config and its rules, reporting every error
  rules list|test|eval|suggest
                          list the rule pack, run its examples, evaluate it on a log corpus,
                          draft a rule from an unrecognised error
  signatures -c CONFIG    the running agent's signatures: state, counts, versions, last hit
  fix SIGNATURE -c CONFIG mark a signature fixed (--version V --note T); unfix removes it
  mute SIGNATURE -c CONFIG  stop its notifications --for 8h --reason R; unmute ends it
  alert test --receiver NAME -c CONFIG   send a [TEST] notification through the whole pipeline

Every command takes --help. faultline --version prints the version.
)";

fs::path ExecutableDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

}  // namespace

bool IsHelp(const std::string& arg) { return arg == "-h" || arg == "--help"; }

std::vector<std::string> DefaultRulePaths() {
  if (const char* env = std::getenv("FAULTLINE_RULES"); env != nullptr && *env != '\0') {
    return {env};
  }
  // /proc/self/exe is the binary itself, symlinks resolved, wherever it was started from.
  const fs::path exe_dir = ExecutableDir();
  std::error_code ec;
  // An installed <prefix>/bin/faultline uses <prefix>/share/faultline/rules; a binary in any
  // build folder of a source tree uses that tree's pack (its path compiled in); the working
  // folder's rules/ is the last resort.
  for (const fs::path& candidate : {exe_dir / ".." / "share" / "faultline" / "rules",
                                    fs::path(FAULTLINE_SOURCE_RULES_DIR), fs::path("rules")}) {
    if (fs::is_directory(candidate, ec)) return {fs::weakly_canonical(candidate, ec).string()};
  }
  return {"rules"};
}

std::shared_ptr<const RuleSet> LoadRuleSetOrReport(const std::vector<std::string>& paths,
                                                   const std::vector<std::string>& watch_patterns) {
  Result<std::vector<Rule>> rules = LoadRules(paths);
  if (!rules.ok()) {
    std::cerr << FormatErrors(rules.errors());
    std::cerr << "faultline: rule load failed with " << rules.errors().size() << " error(s)\n";
    return nullptr;
  }
  if (rules.value().empty()) {
    std::string where;
    for (const std::string& p : paths) where += (where.empty() ? "" : ", ") + p;
    std::cerr << "faultline: no rules loaded (" << where << ")"
              << ": nothing is named, only unrecognised errors are found\n";
  }
  Result<std::shared_ptr<const RuleSet>> set = RuleSet::Compile(std::move(rules).value(),
                                                               DatabaseCache::DefaultDir(),
                                                               watch_patterns);
  if (!set.ok()) {
    std::cerr << FormatErrors(set.errors());
    return nullptr;
  }
  return set.value();
}

int RunCli(const Args& args) {
  if (args.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string& command = args[0];
  const Args rest(args.begin() + 1, args.end());
  if (IsHelp(command)) {
    std::cout << kUsage;
    return kExitOk;
  }
  // `watch` reads its own: `faultline watch -- tool --version` runs the tool.
  if (command == "watch") return WatchCommand(rest);
  // `fix --version V` takes a value; elsewhere --version asks for ours.
  const bool wants_version =
      command != "fix" && std::find(args.begin(), args.end(), std::string("--version")) != args.end();
  if (command == "--version" || command == "version" || wants_version) {
    std::cout << "faultline " << kVersion << "\n";
    return kExitOk;
  }
  if (command == "scan") return ScanCommand(rest);
  if (command == "rules") return RulesCommand(rest);
  if (command == "check") return CheckCommand(rest);
  if (command == "run") return RunCommand(rest);
  if (command == "fix") return FixCommand(rest);
  if (command == "unfix") return UnfixCommand(rest);
  if (command == "mute") return MuteCommand(rest);
  if (command == "unmute") return UnmuteCommand(rest);
  if (command == "signatures") return SignaturesCommand(rest);
  if (command == "alert") return AlertCommand(rest);
  std::cerr << "faultline: unknown command '" << command << "'\n\n" << kUsage;
  return kExitUsage;
}

}  // namespace faultline
