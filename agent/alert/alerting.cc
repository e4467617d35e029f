// Alerting (alerting.h), its setup and its own timers: Create, the metric families it registers,
// binding rules at a reload, Start and Stop, the config's fixes and the tick that ends mutes and
// quiet signatures. The other concerns have a file each (alerting.h lists them).

#include "agent/alert/alerting.h"

#include <unistd.h>

#include <chrono>

namespace faultline {
namespace {

// How often mutes and quiet signatures are looked at.
constexpr auto kTickInterval = std::chrono::seconds(1);

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

}  // namespace

Result<std::unique_ptr<Alerting>> Alerting::Create(asio::io_context& io, const Config& config,
                                                   const std::vector<Rule>& rules,
                                                   AlertMetrics& metrics, bool store_backed,
                                                   WallClock clock) {
  ErrorList errors;
  Result<std::vector<Receiver>> receivers = Receiver::Build(config.alerts, config.file);
  if (!receivers.ok()) errors = receivers.errors();
  Result<std::vector<VersionPattern>> versions = LoadVersionPatterns(config.rule_paths);
  if (!versions.ok())
    errors.insert(errors.end(), versions.errors().begin(), versions.errors().end());
  if (!errors.empty()) return errors;
  Result<std::unique_ptr<VersionWatcher>> watcher = VersionWatcher::Build(versions.value(), rules);
  if (!watcher.ok()) return watcher.errors();
  return std::unique_ptr<Alerting>(new Alerting(io, config, rules, metrics, store_backed,
                                                std::move(clock), std::move(receivers).value(),
                                                std::move(watcher).value()));
}

Alerting::Alerting(asio::io_context& io, const Config& config, const std::vector<Rule>& rules,
                   AlertMetrics& metrics, bool store_backed, WallClock clock,
                   std::vector<Receiver> receivers, std::unique_ptr<VersionWatcher> watcher)
    : io_(io),
      config_(config),
      clock_(std::move(clock)),
      store_backed_(store_backed),
      host_(config.alerts.host.empty() ? HostName() : config.alerts.host),
      receivers_(std::move(receivers)),
      watcher_(std::move(watcher)),
      tracker_(LifecycleOptions{
          .quiet_for_ms = config.alerts.quiet_for_ms,
          .repeat_interval_ms = config.alerts.repeat_interval_ms,
          .min_severity = ParseSeverity(config.alerts.min_severity).value_or(Severity::kError),
          .resolve_after_runs = config.alerts.resolve_after_runs}),
      group_timer_(io),
      dispatch_timer_(io),
      tick_timer_(io),
      random_(std::random_device{}()),
      metrics_(metrics) {
  for (const Rule& rule : rules) rules_.emplace(rule.id, &rule);
  std::vector<OutboxTarget> targets;
  for (const Receiver& r : receivers_) targets.push_back(r.outbox_target());
  outbox_ = std::make_unique<Outbox>(std::move(targets), store_backed_);

  for (const Receiver& r : receivers_) metrics_.AddReceiver(r.target());
}

ErrorList Alerting::BindRules(const std::vector<Rule>& rules) {
  rules_.clear();
  for (const Rule& rule : rules) rules_.emplace(rule.id, &rule);
  Result<std::vector<VersionPattern>> versions = LoadVersionPatterns(config_.rule_paths);
  if (!versions.ok()) return versions.errors();
  Result<std::unique_ptr<VersionWatcher>> watcher = VersionWatcher::Build(versions.value(), rules);
  if (!watcher.ok()) return watcher.errors();
  watcher_ = std::move(watcher).value();
  return {};
}

Alerting::~Alerting() {
  *alive_ = false;
  Stop();
}

void Alerting::Start() {
  if (running_) return;
  running_ = true;
  std::weak_ptr<bool> alive = alive_;
  delivery_ =
      std::make_unique<HttpDelivery>(io_, [this, alive](uint64_t ticket, DeliveryOutcome o) {
        if (alive.expired() || !running_) return;
        OnDelivered(static_cast<int64_t>(ticket), std::move(o));
      });
  ApplyConfigFixes();
  Tick();
  ScheduleFlush();  // groups restored from the store
  Dispatch();
}

void Alerting::ApplyConfigFixes() {
  const int64_t now = NowMs();
  std::vector<LifecycleEvent> resolved;
  for (const FixConfig& fc : config_.fixes) {
    FixRecord fix;
    fix.selector = fc.signature;
    fix.fixed_in = fc.version;
    fix.note = fc.note;
    fix.by = fc.by;
    fix.origin = FixOrigin::kConfig;
    tracker_.EnsureConfigFix(fix, now, &resolved);
  }
  for (const LifecycleEvent& e : resolved) {
    metrics_.CountEvent(AlertKindName(e.kind));
    Route(MakeItem(e, nullptr, now), "agent", 0, 0, /*group=*/false, /*alertmanager_only=*/true);
  }
}

void Alerting::Stop() {
  if (!running_) return;
  running_ = false;
  group_timer_.cancel();
  dispatch_timer_.cancel();
  tick_timer_.cancel();
  if (delivery_) delivery_->Stop();
}

const Rule* Alerting::RuleOf(const std::string& rule_id) const {
  const auto it = rules_.find(rule_id);
  return it == rules_.end() ? nullptr : it->second;
}

std::string Alerting::NewId(std::string_view prefix) const {
  // Unique across restarts: the time, then a counter for ids made within one millisecond.
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*s_%llx%04llx", static_cast<int>(prefix.size()),
                prefix.data(), static_cast<unsigned long long>(NowMs()),
                static_cast<unsigned long long>(++id_counter_ & 0xffff));
  return buffer;
}

void Alerting::Tick() {
  if (!running_) return;
  std::vector<LifecycleEvent> events;
  const int64_t now = NowMs();
  tracker_.Tick(now, &events);
  Raise(events, nullptr, now);
  UpdateGauges();
  tick_timer_.expires_after(kTickInterval);
  std::weak_ptr<bool> alive = alive_;
  tick_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    Tick();
  });
}

}  // namespace faultline
