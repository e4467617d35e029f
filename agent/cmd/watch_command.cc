// `faultline watch [options] -- CMD ARGS...`: runs a command, passes its output through, matches
// it live with the daemon's engine (watched_command.h), and prints the diagnosis when it ends.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>

#include "agent/daemon/agent.h"
#include "agent/cmd/cli.h"
#include "agent/cmd/scan_report.h"
#include "agent/daemon/watched_command.h"
#include "agent/config/config_loader.h"
#include "agent/core/version.h"

namespace faultline {
namespace {

constexpr char kWatchUsage[] = R"(Usage: faultline watch [options] [--] CMD [ARGS...]

Runs CMD, passes its stdout and stderr through unchanged (on a terminal, CMD runs on a
pseudo-terminal, so it keeps its colours and progress bars), recognises known failures in its
output as it runs, and when CMD ends prints the diagnosis to stderr, as `faultline scan` would.
SIGINT, SIGTERM and SIGHUP are passed on to CMD. For CI: `faultline watch -- pip install deepspeed`.

Options:
  -c, --config FILE   use FILE's rules and framing; with http.listen set, serve /metrics while
                      CMD runs. The config's sources are not read.
  --rules DIR         rule folder or file instead of the bundled pack (repeatable); an empty
                      folder or `--rules none` loads no rules (discovery only)
  --json              print the diagnosis as JSON (scan's schema) instead of text
  -h, --help          this help

Exit status: CMD's own (128 + N when a signal N killed it); 127 when CMD is not found, 126 when
it cannot be run, 2 for a usage, config or rule error.
)";

// The source id of the command's output in metrics (faultline_lines_total{source="watch"}).
constexpr char kSourceId[] = "watch";
// The command line shown as the report's "file"; longer ones are shortened.
constexpr size_t kMaxNameChars = 80;
// The signals passed on to the command.
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

struct WatchOptions {
  std::string config;
  std::vector<std::string> rule_paths;
  bool json = false;
  std::vector<std::string> command;
};

// Options end at `--` or at the first argument that is not one, which starts the command.
// `done`: --help or --version was answered, nothing to run.
bool ParseWatchArgs(const Args& args, WatchOptions& options, bool& done) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (IsHelp(a) || a == "--version") {
      std::cout << (a == "--version" ? std::string("faultline ") + kVersion + "\n" : kWatchUsage);
      done = true;
      return true;
    }
    if ((a == "-c" || a == "--config" || a == "--rules") && i + 1 >= args.size()) {
      std::cerr << "faultline watch: " << a << " needs a value\n";
      return false;
    }
    if (a == "-c" || a == "--config") {
      options.config = args[++i];
    } else if (a == "--rules") {
      options.rule_paths.push_back(args[++i]);
    } else if (a == "--json") {
      options.json = true;
    } else if (a.size() > 1 && a[0] == '-') {
      std::cerr << "faultline watch: unknown option '" << a << "'\n";
      return false;
    } else {
      break;
    }
  }
  options.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (options.command.empty()) {
    std::cerr << "faultline watch: name the command to run, e.g. faultline watch -- make\n";
    return false;
  }
  return true;
}

std::string CommandName(const std::vector<std::string>& command) {
  std::string name;
  for (const std::string& a : command) name += (name.empty() ? "" : " ") + a;
  if (name.size() > kMaxNameChars) name = name.substr(0, kMaxNameChars - 3) + "...";
  return name;
}

bool IsTerminal(int fd) { return isatty(fd) == 1; }

// Whether descriptors 1 and 2 are the same terminal (the usual interactive case).
bool SameTerminal() {
  struct stat out {
  }, err{};
  return IsTerminal(STDOUT_FILENO) && IsTerminal(STDERR_FILENO) &&
         fstat(STDOUT_FILENO, &out) == 0 && fstat(STDERR_FILENO, &err) == 0 &&
         out.st_rdev == err.st_rdev;
}

bool Ignored(int signal_number) {
  struct sigaction current {};
  return sigaction(signal_number, nullptr, &current) == 0 && current.sa_handler == SIG_IGN;
}

}  // namespace

int WatchCommand(const Args& args) {
  // Before anything is opened: what the command must inherit from the caller (`3>file`).
  std::set<int> inherited = OpenDescriptors();
  WatchOptions options;
  bool done = false;
  if (!ParseWatchArgs(args, options, done)) {
    std::cerr << "Try 'faultline watch --help'.\n";
    return kExitUsage;
  }
  if (done) return kExitOk;

  Config config;
  if (!options.config.empty()) {
    Result<Config> loaded = LoadConfig(options.config);
    if (!loaded.ok()) {
      std::cerr << FormatErrors(loaded.errors());
      return kExitUsage;
    }
    config = std::move(loaded).value();
  }
  const auto rules =
      LoadRuleSetOrReport(!options.rule_paths.empty()
                              ? options.rule_paths
                              : (options.config.empty() ? DefaultRulePaths() : config.rule_paths));
  if (rules == nullptr) return kExitUsage;
  // The command's stderr is the user's: the watcher adds only warnings, unless a config asks.
  spdlog::set_default_logger(spdlog::stderr_color_mt("faultline"));
  spdlog::set_level(options.config.empty() ? spdlog::level::warn
                                           : spdlog::level::from_str(config.log_level));

  WatchedCommand::Options watch;
  watch.name = CommandName(options.command);
  watch.quiet_after = std::chrono::milliseconds(config.context_idle_flush_ms);
  watch.max_line_bytes = config.framing.max_line_bytes;
  watch.child.argv = options.command;
  watch.child.stdout_pty = IsTerminal(STDOUT_FILENO);
  watch.child.stderr_pty = IsTerminal(STDERR_FILENO);
  watch.child.shared_pty = SameTerminal();
  watch.child.window_size_from = IsTerminal(STDOUT_FILENO)   ? STDOUT_FILENO
                                 : IsTerminal(STDERR_FILENO) ? STDERR_FILENO
                                                             : -1;
  watch.child.foreground = true;
  watch.child.inherited_fds = std::move(inherited);
  // Our writes to a closed reader must fail with EPIPE, not kill us before the report; and we
  // write to the terminal while the command holds it (TOSTOP). The command gets both as they were.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &watch.child.original_sigpipe);
  sigaction(SIGTTOU, &ignore, &watch.child.original_sigttou);
  for (int signal_number : kForwardedSignals) {
    if (!Ignored(signal_number)) watch.forward_signals.push_back(signal_number);
  }

  AgentOptions agent_options;
  agent_options.serve_http = !options.config.empty() && config.http_listen_set;
  agent_options.handle_signals = false;  // forwarded to the command instead
  agent_options.config_sources = false;
  agent_options.keep_state = false;  // one command's run: nothing to continue from
  ScanReport report;
  report.BeginFile(watch.name);
  Agent agent(std::move(config), rules, agent_options);
  agent.AddFindingSink(&report);
  WatchedCommand* command = nullptr;
  agent.AddSource([&](const SourceContext& context) {
    auto source = std::make_unique<WatchedCommand>(context.io, std::move(watch),
                                                   context.consumers(kSourceId), context.ended);
    command = source.get();
    return source;
  });
  if (Result<void> started = agent.Start(); !started.ok()) {
    std::cerr << "faultline watch: " << JoinErrors(started.errors()) << "\n";
    return kExitUsage;
  }
  agent.Run();

  if (!command->error().empty()) {
    std::cerr << "faultline watch: " << command->error() << "\n";
    return command->exit_status();
  }
  Metrics& metrics = agent.metrics();
  report.EndFile(static_cast<uint64_t>(metrics.ForSource(kSourceId).lines->Value()),
                 metrics.truncated_lines());
  if (command->output_mid_line()) std::cerr << "\n";
  if (options.json) {
    report.PrintJson(std::cerr);
  } else {
    report.PrintText(std::cerr);
  }
  std::cerr << std::flush;
  return command->exit_status();
}

}  // namespace faultline
