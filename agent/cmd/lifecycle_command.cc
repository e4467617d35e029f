// `faultline fix | unfix | mute | unmute | signatures` (through the running agent's admin API)
// and `faultline alert test` (in this process, through the same pipeline the agent uses).
#include <curl/curl.h>
#include <prometheus/registry.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "agent/alert/alerting.h"
#include "agent/api/admin_token.h"
#include "agent/api/alert_routes.h"
#include "agent/cmd/cli.h"
#include "agent/config/config_loader.h"

namespace faultline {
namespace {

using nlohmann::json;

constexpr char kFixUsage[] = R"(Usage: faultline fix SIGNATURE [--version V] [--note TEXT] [--by NAME] -c CONFIG
       faultline unfix SIGNATURE -c CONFIG

Marks SIGNATURE (a signature such as 'deepspeed.async_io.windows_link{lib=aio}', or a rule id,
which covers all its signatures) fixed in the running agent named by CONFIG. A later occurrence
is a regression when it is newer than the fix: in version V or later when the log reports the
rule's package version (--version), else when its line was written after now. Without
--version, the fix pins to the highest version seen so far ("fixed in the next version").
Older occurrences (old logs read again, old builds) are counted as pre_fix, never alerted.
unfix removes the fixes recorded for SIGNATURE.

Options:
  --version V      the version the fix ships in (PEP 440 or semver)
  --note TEXT      why, for the regression message ("op builder skips aio on Windows")
  --by NAME        who (default: $USER)
  -c, --config F   the agent's config: its HTTP address and admin token
)";

constexpr char kMuteUsage[] = R"(Usage: faultline mute SIGNATURE --for DURATION --reason TEXT [--by NAME] -c CONFIG
       faultline unmute SIGNATURE -c CONFIG

Stops notifications about SIGNATURE (or every signature of a rule id) for DURATION (8h, 30m,
2d; at most 30 days). Occurrences are still counted; when the mute ends, one message says what
happened meanwhile. unmute ends it now.
)";

constexpr char kSignaturesUsage[] = R"(Usage: faultline signatures -c CONFIG [--format text|json]

Lists every signature the running agent knows: state (new, active, quiet, fixed, regressed,
muted), count, first and last seen, versions and the last hit.
)";

constexpr char kAlertUsage[] = R"(Usage: faultline alert test --receiver NAME [--signature ID] -c CONFIG

Sends one notification marked [TEST] to receiver NAME of CONFIG through the whole pipeline the
agent uses (routing, rendering, signing, rate limit, retry), and prints each target's HTTP
status and response body. --signature fills it with that rule's text (a rule id or signature).
Writes no state. Exit status: 0 delivered everywhere, 1 a target failed, 2 usage or config error.

Options:
  --timeout SECONDS   give up retrying after this long (default 30)
)";

struct Flags {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;
  bool help = false;
};

// --name VALUE pairs and positional arguments; `known` are the options taking a value.
bool ParseFlags(const Args& args, const std::vector<std::string>& known, Flags* out,
                const char* command) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (IsHelp(a)) {
      out->help = true;
      return true;
    }
    std::string name = a == "-c" ? "--config" : a;
    if (name.starts_with("--")) {
      if (std::find(known.begin(), known.end(), name) == known.end() || i + 1 >= args.size()) {
        std::cerr << "faultline " << command << ": unknown option or missing value: " << a << "\n";
        return false;
      }
      out->values[name] = args[++i];
      continue;
    }
    out->positional.push_back(a);
  }
  return true;
}

bool LoadConfigOrReport(const Flags& flags, const char* command, Config* config) {
  const auto it = flags.values.find("--config");
  if (it == flags.values.end()) {
    std::cerr << "faultline " << command << ": -c CONFIG is required\n";
    return false;
  }
  Result<Config> loaded = LoadConfig(it->second);
  if (!loaded.ok()) {
    std::cerr << FormatErrors(loaded.errors());
    return false;
  }
  *config = std::move(loaded).value();
  return true;
}

size_t Collect(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// A request to the agent's admin API; returns the status (0: no answer) and body.
long CallAgent(const Config& config, const std::string& method, const std::string& path,
               const std::string& body, const std::string& token, std::string* response) {
  std::string host = config.http_address;
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  const std::string url = "http://" + host + ":" + std::to_string(config.http_port) + path;
  CURL* curl = curl_easy_init();
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  if (!token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + token).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");  // the agent is on this host
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, response);
  if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  }
  const CURLcode code = curl_easy_perform(curl);
  long status = 0;
  if (code == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  } else {
    *response = std::string("cannot reach the agent at ") + url + ": " + curl_easy_strerror(code);
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return status;
}

std::string Encode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      char buffer[4];
      std::snprintf(buffer, sizeof buffer, "%%%02X", c);
      out += buffer;
    }
  }
  return out;
}

int Report(long status, const std::string& response, const char* command) {
  if (status >= 200 && status < 300) {
    std::cout << response;
    return kExitOk;
  }
  std::string message = response;
  const json j = json::parse(response, nullptr, false);
  if (j.is_object() && j.contains("error")) message = j["error"].get<std::string>() + "\n";
  std::cerr << "faultline " << command << ": " << (status == 0 ? "" : "HTTP " + std::to_string(status) + ": ")
            << message;
  if (!message.empty() && message.back() != '\n') std::cerr << "\n";
  return kExitFailuresFound;
}

std::string DefaultBy() {
  const char* user = std::getenv("USER");
  return user != nullptr ? user : "";
}

int SignatureCommand(const Args& args, const std::string& action) {
  const char* command = action.c_str();
  Flags flags;
  if (!ParseFlags(args, {"--config", "--version", "--note", "--by", "--for", "--reason"}, &flags,
                  command)) {
    return kExitUsage;
  }
  const bool fix_like = action == "fix" || action == "unfix";
  if (flags.help) {
    std::cout << (fix_like ? kFixUsage : kMuteUsage);
    return kExitOk;
  }
  if (flags.positional.size() != 1) {
    std::cerr << "faultline " << command << ": exactly one SIGNATURE is required\n\n"
              << (fix_like ? kFixUsage : kMuteUsage);
    return kExitUsage;
  }
  Config config;
  if (!LoadConfigOrReport(flags, command, &config)) return kExitUsage;
  Result<AdminToken> token = LoadAdminToken(config, /*create=*/false);
  if (!token.ok()) {
    std::cerr << FormatErrors(token.errors());
    return kExitUsage;
  }
  if (token.value().token.empty()) {
    std::cerr << "faultline " << command << ": no admin token: set http.admin_token_file, or start "
              << "the agent with alerts once so that it writes " << GeneratedAdminTokenPath(config)
              << "\n";
    return kExitUsage;
  }
  json body = json::object();
  const auto value = [&](const char* name) {
    const auto it = flags.values.find(name);
    return it == flags.values.end() ? std::string() : it->second;
  };
  if (action == "fix") {
    body = {{"version", value("--version")}, {"note", value("--note")},
            {"by", value("--by").empty() ? DefaultBy() : value("--by")}, {"origin", "cli"}};
  } else if (action == "mute") {
    const std::optional<int64_t> duration = ParseDurationMs(value("--for"));
    if (!duration || *duration <= 0 || value("--reason").empty()) {
      std::cerr << "faultline mute: --for DURATION (8h, 30m, 2d) and --reason TEXT are required\n";
      return kExitUsage;
    }
    body = {{"duration_ms", *duration}, {"reason", value("--reason")},
            {"by", value("--by").empty() ? DefaultBy() : value("--by")}};
  }
  std::string response;
  const long status = CallAgent(config, "POST",
                                "/api/v1/signatures/" + Encode(flags.positional[0]) + "/" + action,
                                body.dump(), token.value().token, &response);
  return Report(status, response, command);
}

std::string Cell(std::string text, std::size_t width) {
  if (text.size() > width) text = text.substr(0, width - 1) + "~";
  return text + std::string(width + 1 - text.size(), ' ');
}

}  // namespace

int FixCommand(const Args& args) { return SignatureCommand(args, "fix"); }
int UnfixCommand(const Args& args) { return SignatureCommand(args, "unfix"); }
int MuteCommand(const Args& args) { return SignatureCommand(args, "mute"); }
int UnmuteCommand(const Args& args) { return SignatureCommand(args, "unmute"); }

int SignaturesCommand(const Args& args) {
  Flags flags;
  if (!ParseFlags(args, {"--config", "--format"}, &flags, "signatures")) return kExitUsage;
  if (flags.help) {
    std::cout << kSignaturesUsage;
    return kExitOk;
  }
  Config config;
  if (!LoadConfigOrReport(flags, "signatures", &config)) return kExitUsage;
  std::string response;
  const long status = CallAgent(config, "GET", "/api/v1/signatures", "", "", &response);
  if (status != 200) return Report(status, response, "signatures");
  if (flags.values["--format"] == "json") {
    std::cout << response;
    return kExitOk;
  }
  const json j = json::parse(response, nullptr, false);
  if (!j.is_object()) return Report(500, "the agent's answer is not JSON\n", "signatures");
  std::cout << Cell("STATE", 9) << Cell("COUNT", 8) << Cell("FIRST SEEN", 20) << Cell("LAST SEEN", 20)
            << "SIGNATURE\n";
  for (const json& s : j["signatures"]) {
    const auto day = [](const json& v) {
      const std::string t = v.get<std::string>();
      return t.size() >= 19 ? t.substr(0, 10) + " " + t.substr(11, 8) : t;
    };
    std::cout << Cell(s["state"].get<std::string>(), 9)
              << Cell(std::to_string(s["count"].get<uint64_t>()), 8) << Cell(day(s["first_seen"]), 20)
              << Cell(day(s["last_seen"]), 20) << s["signature"].get<std::string>() << "\n";
    const json& hit = s["last_hit"];
    std::cout << "    last hit: " << hit["file"].get<std::string>() << ":" << hit["line"].get<uint64_t>()
              << ": " << hit["text"].get<std::string>().substr(0, 160) << "\n";
    if (!s["versions_seen"].empty()) std::cout << "    versions: " << s["versions_seen"].dump() << "\n";
    for (const json& f : s["fixes"]) {
      std::cout << "    fix #" << f["id"].get<int64_t>() << ": "
                << (f["fixed_in"].get<std::string>().empty()
                        ? (f["after_version"].get<std::string>().empty()
                               ? "at " + f["fixed_at"].get<std::string>()
                               : "after " + f["after_version"].get<std::string>())
                        : "in " + f["fixed_in"].get<std::string>())
                << " by " << f["by"].get<std::string>() << " (" << f["origin"].get<std::string>()
                << ")" << (f["note"].get<std::string>().empty() ? "" : ": " + f["note"].get<std::string>())
                << "\n";
    }
  }
  return kExitOk;
}

int AlertCommand(const Args& args) {
  if (args.empty() || IsHelp(args[0])) {
    std::cout << kAlertUsage;
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] != "test") {
    std::cerr << "faultline alert: unknown subcommand '" << args[0] << "'\n\n" << kAlertUsage;
    return kExitUsage;
  }
  Flags flags;
  if (!ParseFlags(Args(args.begin() + 1, args.end()), {"--config", "--receiver", "--signature", "--timeout"},
                  &flags, "alert test")) {
    return kExitUsage;
  }
  if (flags.help) {
    std::cout << kAlertUsage;
    return kExitOk;
  }
  if (flags.values["--receiver"].empty() || !flags.positional.empty()) {
    std::cerr << "faultline alert test: --receiver NAME is required\n";
    return kExitUsage;
  }
  Config config;
  if (!LoadConfigOrReport(flags, "alert test", &config)) return kExitUsage;
  const auto rules = LoadRuleSetOrReport(config.rule_paths);
  if (rules == nullptr) return kExitUsage;
  const std::optional<int64_t> timeout =
      flags.values["--timeout"].empty() ? std::optional<int64_t>(30000)
                                        : ParseDurationMs(flags.values["--timeout"] + "s");
  if (!timeout) {
    std::cerr << "faultline alert test: --timeout takes whole seconds\n";
    return kExitUsage;
  }
  asio::io_context io;
  // A one-shot send: its series are never scraped.
  prometheus::Registry registry;
  AlertMetrics alert_metrics(registry);
  Result<std::unique_ptr<Alerting>> alerting =
      Alerting::Create(io, config, rules->rules(), alert_metrics, /*store_backed=*/false);
  if (!alerting.ok()) {
    std::cerr << FormatErrors(alerting.errors());
    return kExitUsage;
  }
  Alerting& a = *alerting.value();
  a.Start();
  std::size_t pending = 0;
  bool failed = false;
  Result<std::vector<std::string>> targets = a.Test(
      flags.values["--receiver"], flags.values["--signature"],
      [&](const std::string& target, const RetryDecision& d, const DeliveryOutcome& last) {
        --pending;
        const bool ok = d.action == RetryDecision::Action::kDone;
        failed = failed || !ok;
        std::cout << target << ": " << (ok ? "delivered" : "FAILED") << ": " << d.reason << "\n";
        if (last.transport == DeliveryOutcome::Transport::kCompleted) {
          std::cout << "  HTTP " << last.status << "\n  body: " << last.body.substr(0, 2000) << "\n";
        } else {
          std::cout << "  " << last.transport_error << "\n";
        }
      });
  if (!targets.ok()) {
    std::cerr << "faultline alert test: " << targets.errors().front().message << "\n";
    return kExitUsage;
  }
  pending = targets.value().size();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(*timeout);
  while (pending > 0 && std::chrono::steady_clock::now() < deadline) {
    io.run_for(std::chrono::milliseconds(50));
    io.restart();
  }
  if (pending > 0) {
    std::cout << "gave up after " << *timeout / 1000 << " s; still retrying:\n" << a.ReceiversJson() << "\n";
    failed = true;
  }
  a.Stop();
  return failed ? kExitFailuresFound : kExitOk;
}

}  // namespace faultline
