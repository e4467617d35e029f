// `faultline run -c CONFIG` (the daemon) and `faultline check -c CONFIG` (validate only).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "agent/daemon/agent.h"
#include "agent/cmd/cli.h"
#include "agent/config/config_loader.h"
#include "agent/core/version.h"
#include "agent/discover/error_cues.h"

namespace faultline {
namespace {

constexpr char kRunUsage[] = R"(Usage: faultline run -c CONFIG

Watches the log files named in CONFIG as they are written, recognises known failures with the
rule pack, and serves Prometheus metrics (/metrics), a health check (/healthz) and a status page
(/). SIGHUP reloads CONFIG and its rules (an invalid one is rejected and the running one kept);
SIGINT or SIGTERM stop it cleanly.

Options:
  -c, --config FILE   the agent's config (see config/faultline.yaml)
  -h, --help          this help
)";

constexpr char kCheckUsage[] = R"(Usage: faultline check -c CONFIG

Validates CONFIG and every rule it loads, and reports every error with file, line and key.
Exit status: 0 valid, 2 not.

Options:
  -c, --config FILE   the config to check
  -h, --help          this help
)";

// Parses `-c FILE`; returns false after explaining on stderr.
bool ParseConfigFlag(const Args& args, const char* command, std::string& config, bool& help) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (IsHelp(args[i])) {
      help = true;
      return true;
    }
    if ((args[i] == "-c" || args[i] == "--config") && i + 1 < args.size()) {
      config = args[++i];
    } else {
      std::cerr << "faultline " << command << ": unexpected argument '" << args[i] << "'\n";
      return false;
    }
  }
  if (config.empty()) {
    std::cerr << "faultline " << command << ": -c CONFIG is required\n";
    return false;
  }
  return true;
}

// Loads the config and its rules, printing every error; null rules on failure.
std::shared_ptr<const RuleSet> LoadAll(const std::string& path, Config& config) {
  Result<Config> loaded = LoadConfig(path);
  if (!loaded.ok()) {
    std::cerr << FormatErrors(loaded.errors());
    return nullptr;
  }
  config = std::move(loaded).value();
  return LoadRuleSetOrReport(config.rule_paths, config.discover_enabled ? WatchPatterns()
                                                                        : std::vector<std::string>{});
}

}  // namespace

int CheckCommand(const Args& args) {
  std::string path;
  bool help = false;
  if (!ParseConfigFlag(args, "check", path, help)) return kExitUsage;
  if (help) {
    std::cout << kCheckUsage;
    return kExitOk;
  }
  Config config;
  const auto rules = LoadAll(path, config);
  if (rules == nullptr) return kExitUsage;
  std::cout << "faultline check: " << path << " is valid: " << rules->rules().size()
            << " rules, " << config.file_sources.size() << " file source(s)";
  if (!config.net_sources.empty()) {
    std::cout << ", " << config.net_sources.size() << " network source(s)";
  }
  std::cout << "\n";
  return kExitOk;
}

int RunCommand(const Args& args) {
  std::string path;
  bool help = false;
  if (!ParseConfigFlag(args, "run", path, help)) return kExitUsage;
  if (help) {
    std::cout << kRunUsage;
    return kExitOk;
  }
  Config config;
  const auto rules = LoadAll(path, config);
  if (rules == nullptr) return kExitUsage;
  // The agent's own log goes to stderr, as daemons' logs do under systemd and in containers.
  spdlog::set_default_logger(spdlog::stderr_color_mt("faultline"));
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::info("faultline {} starting: {} rules ({} patterns, {} prefiltered, {})", kVersion,
               rules->rules().size(), rules->patterns().size(), rules->patterns().prefiltered(),
               rules->patterns().from_cache() ? "loaded from cache" : "compiled");
  Agent agent(std::move(config), rules);
  if (Result<void> started = agent.Start(); !started.ok()) {
    std::cerr << "faultline run: " << JoinErrors(started.errors()) << "\n";
    return kExitUsage;
  }
  agent.Run();
  spdlog::info("stopped");
  return kExitOk;
}

}  // namespace faultline
