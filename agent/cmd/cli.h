// The command line: `faultline <command> [options]`, one function per command.
//
// Each command returns the process exit status. Load-time problems (bad flags, config or rules)
// are printed to stderr with file, line and key and give status 2 (kExitUsage); `scan` gives 1
// when it found a failure. Commands write their report to the given streams so tests can run
// them in-process.
#ifndef FAULTLINE_CMD_CLI_H_
#define FAULTLINE_CMD_CLI_H_

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/match/rule_set.h"

namespace faultline {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailuresFound = 1;
inline constexpr int kExitUsage = 2;

using Args = std::vector<std::string>;

int RunCli(const Args& args);

int ScanCommand(const Args& args);
int RulesCommand(const Args& args);
int CheckCommand(const Args& args);
int RunCommand(const Args& args);
int WatchCommand(const Args& args);
int FixCommand(const Args& args);
int UnfixCommand(const Args& args);
int MuteCommand(const Args& args);
int UnmuteCommand(const Args& args);
int SignaturesCommand(const Args& args);
int AlertCommand(const Args& args);

// Where the bundled rule pack is when no --rules is given: $FAULTLINE_RULES, else `rules/` next to
// the source tree the binary was built in, else <prefix>/share/faultline/rules, else ./rules.
std::vector<std::string> DefaultRulePaths();

// Loads and compiles rules, printing every error to stderr; null on failure. `watch_patterns` are
// compiled in beside them (RuleSet::Compile), for discovery.
std::shared_ptr<const RuleSet> LoadRuleSetOrReport(
    const std::vector<std::string>& paths, const std::vector<std::string>& watch_patterns = {});

// True when `arg` is -h or --help.
bool IsHelp(const std::string& arg);

}  // namespace faultline

#endif  // FAULTLINE_CMD_CLI_H_
