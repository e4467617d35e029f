// Agent reload: what a new config and rule pack change in a running agent, applied on the loop in
// one step once the ReloadCoordinator compiled them off it (reload_coordinator.h).
//
// - Rules: every live stream is rebound to the new RuleSet (StreamMatcher::Rebind): its framer,
//   offsets, partial line and the pending hits of rules that still exist are kept; the pending
//   hits of removed rules are settled first, under the old rules. Then signature labels and
//   metrics are rebound by rule id: unchanged rules keep their counters, new rules start at 0,
//   removed rules' series go (as do their rows on the status page).
// - Sources: SourceSet::Apply starts added sources, stops removed ones and restarts the ones
//   whose section changed; the others are not touched.
// - Settings that only a restart can change (http.listen, limits.max_open_files, discover.*) are
//   kept as they run, with a warning; the new rules are compiled with the discovery's watch
//   patterns when it runs, and each stream's discovery takes the new rules' explain window;
//   framing.* and rules.context_idle_flush_ms apply to streams and sources started
//   from now on; log.level, reload.* and the admin token apply at once.
// - Alerts: the lifecycle and the outbox go on; the rules and the versions files beside them are
//   rebound, alerts.group_wait_ms, alerts.source_versions and fixes added to `fixes:` (or to the
//   file it names) apply at once; a fix removed from there stays until `faultline unfix`.
//   Receivers, the lifecycle's timings and turning alerts on or off need a restart (kept, with a
//   warning).
#include <spdlog/spdlog.h>

#include <set>

#include "agent/api/alert_routes.h"
#include "agent/core/clock.h"
#include "agent/daemon/agent.h"
#include "agent/discover/error_cues.h"

namespace faultline {
namespace {

HttpResponse ReloadResponse(const ReloadResult& result) {
  std::string body;
  if (result.ok) {
    body = "reload applied: " + result.summary + "\n";
  } else {
    body = "reload rejected; the running config is kept:\n";
    for (const std::string& e : result.errors) body += e + "\n";
  }
  for (const std::string& w : result.warnings) body += "warning: " + w + "\n";
  // 422: the request was understood, the config it names is what is wrong.
  return HttpResponse{result.ok ? 200u : 422u, "text/plain; charset=utf-8", std::move(body)};
}

// The rule paths, and a `fixes:` file (watched through its folder, as a rule file is): a fix
// marked in a fleet's shared file reaches every agent that watches its config.
std::vector<std::string> WatchedRulePaths(const Config& config) {
  std::vector<std::string> paths = config.rule_paths;
  if (!config.fixes_file.empty()) paths.push_back(config.fixes_file);
  return paths;
}

}  // namespace

void Agent::StartReloads() {
  reloads_ = std::make_unique<ReloadCoordinator>(
      io_, config_.file,
      [this](LoadedConfig next, std::string* summary) {
        return ApplyReload(std::move(next), summary);
      },
      [this](const ReloadResult& result) { OnReloadResult(result); },
      [watch = config_.discover_enabled](const std::string& path) {
        return LoadConfigAndRulesWatching(path,
                                          watch ? WatchPatterns() : std::vector<std::string>{});
      });
  reloads_->SetBudget(
      {std::chrono::milliseconds(config_.reload.timeout_ms), config_.reload.max_memory_bytes});
  metrics_.SetLoadedAt(rules_loaded_at_);
  AddReloadRoute();
  if (config_.reload.watch) {
    config_watcher_ =
        std::make_unique<ConfigWatcher>(io_, [this] { reloads_->Request("file change"); });
    config_watcher_->Watch(config_.file, WatchedRulePaths(config_));
  }
}

void Agent::AddReloadRoute() {
  if (admin_token_.empty()) {
    http_.AddRoute({.path = "/-/reload",
                    .methods = {HttpMethod::kPost},
                    .admin = true,
                    .handler = [](const HttpRequest&) {
                      return HttpResponse{403, "text/plain; charset=utf-8",
                                          "reloading over HTTP needs a token: set "
                                          "http.admin_token_file (SIGHUP reloads without one)\n"};
                    }});
    return;
  }
  http_.AddRoute({.path = "/-/reload",
                  .methods = {HttpMethod::kPost},
                  .admin = true,
                  .bearer_token = admin_token_,
                  .deferred_handler = [this](const HttpRequest&, HttpResponder respond) {
                    reloads_->Request("HTTP", [respond](const ReloadResult& result) {
                      respond(ReloadResponse(result));
                    });
                  }});
}

std::vector<std::string> Agent::ApplyReload(LoadedConfig next, std::string* summary) {
  std::vector<std::string> warnings = std::move(next.warnings);
  Config& wanted = next.config;
  if (wanted.http_address != config_.http_address || wanted.http_port != config_.http_port) {
    warnings.push_back("http.listen changes only at a restart; still listening on " +
                       config_.http_address + ":" + std::to_string(config_.http_port));
    wanted.http_address = config_.http_address;
    wanted.http_port = config_.http_port;
  }
  if (wanted.max_open_files != config_.max_open_files) {
    warnings.push_back("limits.max_open_files changes only at a restart");
    wanted.max_open_files = config_.max_open_files;
  }
  if (wanted.discover_enabled != config_.discover_enabled ||
      wanted.discover_max_templates != config_.discover_max_templates ||
      wanted.discover_alert_after != config_.discover_alert_after ||
      wanted.discover_max_series != config_.discover_max_series) {
    warnings.push_back("discover.* changes only at a restart");
    wanted.discover_enabled = config_.discover_enabled;
    wanted.discover_max_templates = config_.discover_max_templates;
    wanted.discover_alert_after = config_.discover_alert_after;
    wanted.discover_max_series = config_.discover_max_series;
  }

  // Rules: streams first, so that pending hits of removed rules settle under the old binding.
  RebindStreams(next.rules, next.scratch.get());
  signature_labels_.Bind(next.rules->rules());
  metrics_.BindRules(next.rules->rules());
  std::set<std::string, std::less<>> ids;
  for (const Rule& rule : next.rules->rules()) ids.insert(rule.id);
  tally_.Retain(ids);
  retired_match_errors_.vectorscan += scratch_->errors().vectorscan;
  retired_match_errors_.re2_set += scratch_->errors().re2_set;
  rules_ = next.rules;
  scratch_ = std::move(next.scratch);
  rules_loaded_at_ = SystemNow();

  if (wanted.alerts.enabled != config_.alerts.enabled ||
      wanted.alerts.receivers != config_.alerts.receivers ||
      wanted.alerts.host != config_.alerts.host ||
      wanted.alerts.quiet_for_ms != config_.alerts.quiet_for_ms ||
      wanted.alerts.repeat_interval_ms != config_.alerts.repeat_interval_ms ||
      wanted.alerts.min_severity != config_.alerts.min_severity) {
    warnings.push_back(
        "alerts: receivers, host, quiet_for_ms, repeat_interval_ms, min_severity and turning "
        "alerts "
        "on or off change only at a restart");
    wanted.alerts.enabled = config_.alerts.enabled;
    wanted.alerts.receivers = config_.alerts.receivers;
    wanted.alerts.host = config_.alerts.host;
    wanted.alerts.quiet_for_ms = config_.alerts.quiet_for_ms;
    wanted.alerts.repeat_interval_ms = config_.alerts.repeat_interval_ms;
    wanted.alerts.min_severity = config_.alerts.min_severity;
  }

  const bool rewatch = wanted.rule_paths != config_.rule_paths ||
                       wanted.fixes_file != config_.fixes_file ||
                       wanted.reload.watch != config_.reload.watch;
  config_ = std::move(wanted);
  spdlog::set_level(spdlog::level::from_str(config_.log_level));
  reloads_->SetBudget(
      {std::chrono::milliseconds(config_.reload.timeout_ms), config_.reload.max_memory_bytes});
  // The alert side reads config_ (now the new one) and the new rules.
  if (alerting_ != nullptr) {
    for (const Error& e : alerting_->BindRules(rules_->rules())) warnings.push_back(e.ToString());
    alerting_->ApplyConfigFixes();
  }
  if (next.admin_token != admin_token_) {
    admin_token_ = std::move(next.admin_token);
    AddReloadRoute();
    if (alerting_ != nullptr) AddLifecycleRoutes();
  }
  if (rewatch) {
    if (!config_.reload.watch) {
      config_watcher_.reset();
    } else {
      if (config_watcher_ == nullptr) {
        config_watcher_ =
            std::make_unique<ConfigWatcher>(io_, [this] { reloads_->Request("file change"); });
      }
      config_watcher_->Watch(config_.file, WatchedRulePaths(config_));
    }
  }

  // Sources last: the ones started now take the new rules. (Reload runs only in agents whose
  // sources are the config's.)
  const SourceSet::Changes changes = sources_.Apply(config_);
  for (const std::string& id : changes.restarted) {
    warnings.push_back("source " + id + " restarted: its settings changed");
  }
  for (const auto& [id, error] : changes.failed) {
    warnings.push_back("source " + id + " not started: " + error +
                       " (tried again at the next reload)");
  }
  *summary = std::to_string(rules_->rules().size()) + " rules, " + std::to_string(sources_.size()) +
             " source(s)";
  if (!changes.started.empty())
    *summary += ", " + std::to_string(changes.started.size()) + " started";
  if (!changes.stopped.empty())
    *summary += ", " + std::to_string(changes.stopped.size()) + " stopped";
  return warnings;
}

void Agent::OnReloadResult(const ReloadResult& result) {
  metrics_.CountReload(result.ok, SystemNow());
  (result.ok ? reloads_ok_ : reloads_failed_) += 1;
  last_reload_ = result;
  if (result.ok) {
    spdlog::info(
        "reload ({}) applied in {:.1f} ms ({:.1f} ms on the loop; memory peak {} KiB, {} KiB "
        "held): {}",
        result.trigger, result.duration_ms, result.apply_ms, result.peak_bytes >> 10,
        result.retained_bytes >> 10, result.summary);
  } else {
    spdlog::error("reload ({}) rejected; the running config is kept:", result.trigger);
    for (const std::string& e : result.errors) spdlog::error("  {}", e);
  }
  for (const std::string& w : result.warnings) spdlog::warn("reload: {}", w);
}

MatchErrors Agent::MatchErrorTotals() const {
  MatchErrors totals = retired_match_errors_;
  totals.vectorscan += scratch_->errors().vectorscan;
  totals.re2_set += scratch_->errors().re2_set;
  return totals;
}

}  // namespace faultline
