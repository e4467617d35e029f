#include "agent/alert/alerting.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "agent/alert/line_timestamp.h"
#include "agent/alert/redact.h"
#include "agent/alert/version.h"
#include "agent/rules/consequence.h"
#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

using nlohmann::json;

// Streams whose versions are remembered; the oldest are forgotten beyond this.
constexpr std::size_t kMaxStreams = 4096;
// (line, version) pairs kept per package and stream.
constexpr std::size_t kVersionsPerPackage = 8;
// Lines after the hit an item shows.
constexpr std::size_t kContextAfterLines = 3;
// How often mutes and quiet signatures are looked at.
constexpr auto kTickInterval = std::chrono::seconds(1);
constexpr int64_t kMaxMuteMs = 30LL * 24 * 3600 * 1000;
constexpr char kSampleSignature[] = "faultline.test.sample";
// One message lists at most this many signatures and counts the rest ("and 900 more"): a flood of
// a thousand new signatures in one run is one readable message, and `faultline signatures` has
// them all.
constexpr std::size_t kMaxItemsPerNotification = 100;
// Failures of one run kept as possible causes: the first ones, where root causes are.
constexpr std::size_t kMaxCausesPerRun = 32;
// Consequences named on one item; more are still counted by their own signatures.
constexpr std::size_t kMaxConsequencesPerItem = 20;
// How long a failure that may have consequences waits for them (alerting.h, "Consequences"):
// a tool prints its summary (pip's "Command errored out", torchrun's ChildFailedError, an abort)
// within a few lines and milliseconds of the cause. Bounds the latency this adds to
// group_wait_ms 0; a larger group_wait_ms makes it moot.
constexpr uint64_t kConsequenceLines = 10;
constexpr int64_t kConsequenceWaitMs = 250;

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

json FixJson(const FixRecord& f) {
  return json{{"id", f.id},
              {"selector", f.selector},
              {"fixed_in", f.fixed_in},
              {"after_version", f.after_version},
              {"fixed_at", FormatTimestampMs(f.fixed_at_ms)},
              {"by", f.by},
              {"note", f.note},
              {"origin", FixOriginName(f.origin)},
              {"regressed", std::vector<std::string>(f.regressed_signatures.begin(),
                                                     f.regressed_signatures.end())}};
}

std::string_view JudgementReason(FixJudgement j) {
  switch (j) {
    case FixJudgement::kPreFixVersion:
      return "pre_fix_version";
    case FixJudgement::kPreFixTime:
      return "pre_fix_time";
    case FixJudgement::kVersionUnknown:
      return "version_unknown";
    case FixJudgement::kRegression:
      return "regression";
    case FixJudgement::kNoFix:
      break;
  }
  return "";
}

}  // namespace

int64_t Alerting::SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::unique_ptr<Alerting>> Alerting::Create(asio::io_context& io, const Config& config,
                                                   const std::vector<Rule>& rules,
                                                   prometheus::Registry& registry,
                                                   bool store_backed, Clock clock) {
  ErrorList errors;
  Result<std::vector<Receiver>> receivers = Receiver::Build(config.alerts, config.file);
  if (!receivers.ok()) errors = receivers.errors();
  Result<std::vector<VersionPattern>> versions = LoadVersionPatterns(config.rule_paths);
  if (!versions.ok())
    errors.insert(errors.end(), versions.errors().begin(), versions.errors().end());
  if (!errors.empty()) return errors;
  Result<std::unique_ptr<VersionWatcher>> watcher = VersionWatcher::Build(versions.value(), rules);
  if (!watcher.ok()) return watcher.errors();
  return std::unique_ptr<Alerting>(new Alerting(io, config, rules, registry, store_backed,
                                                std::move(clock), std::move(receivers).value(),
                                                std::move(watcher).value()));
}

Alerting::Alerting(asio::io_context& io, const Config& config, const std::vector<Rule>& rules,
                   prometheus::Registry& registry, bool store_backed, Clock clock,
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
      random_(std::random_device{}()) {
  for (const Rule& rule : rules) rules_.emplace(rule.id, &rule);
  std::vector<OutboxTarget> targets;
  for (const Receiver& r : receivers_) targets.push_back(r.outbox_target());
  outbox_ = std::make_unique<Outbox>(std::move(targets), store_backed_);

  events_total_ = &prometheus::BuildCounter()
                       .Name("faultline_alert_events_total")
                       .Help("Lifecycle events raised, by kind (muted ones included)")
                       .Register(registry);
  notifications_total_ = &prometheus::BuildCounter()
                              .Name("faultline_notifications_total")
                              .Help("Delivery attempts and their outcome, per receiver and kind")
                              .Register(registry);
  coalesced_total_ = &prometheus::BuildCounter()
                          .Name("faultline_notifications_coalesced_total")
                          .Help("Notifications folded into a digest by rate limiting")
                          .Register(registry);
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("faultline_notification_queue_depth")
                      .Help("Notifications waiting in the outbox, per receiver")
                      .Register(registry);
  receiver_disabled_ = &prometheus::BuildGauge()
                            .Name("faultline_receiver_disabled")
                            .Help("1 when a receiver was disabled (404 no_service, 410)")
                            .Register(registry);
  last_success_ = &prometheus::BuildGauge()
                       .Name("faultline_last_successful_notification_timestamp_seconds")
                       .Help("When a notification last reached the receiver")
                       .Register(registry);
  occurrences_total_ = &prometheus::BuildCounter()
                            .Name("faultline_signature_occurrences_total")
                            .Help(
                                "Occurrences at or above alerts.min_severity, by the "
                                "signature's state and, when a fix covered it, why it was not "
                                "a regression")
                            .Register(registry);
  for (const Receiver& r : receivers_) {
    queue_depth_->Add({{"receiver", r.target()}}).Set(0);
    receiver_disabled_->Add({{"receiver", r.target()}}).Set(0);
    last_success_->Add({{"receiver", r.target()}}).Set(0);
    coalesced_total_->Add({{"receiver", r.target()}});
  }
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
  const int64_t now = clock_();
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
    events_total_->Add({{"kind", std::string(AlertKindName(e.kind))}}).Increment();
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
                prefix.data(), static_cast<unsigned long long>(clock_()),
                static_cast<unsigned long long>(++id_counter_ & 0xffff));
  return buffer;
}

void Alerting::OnBatch(uint64_t stream_id, const std::string& source_id, const LineBatch& batch,
                       uint64_t first_line, bool matched) {
  if (matched && batch.size() > 0) {
    if (!runs_.contains(stream_id) && runs_.size() >= kMaxStreams) runs_.erase(runs_.begin());
    Run& run = runs_[stream_id];
    run.job = source_id;
    run.lines = true;
    run.last_line = std::max(run.last_line, first_line + batch.size() - 1);
    // Items of this stream held for their consequences may go now that lines came after them
    // (only then: re-arming the timer on every batch of a busy stream is waste).
    const bool held = std::any_of(groups_.begin(), groups_.end(), [&](const auto& entry) {
      return std::any_of(entry.second.where.begin(), entry.second.where.end(),
                         [&](const Waiting& w) {
                           return w.stream_id == stream_id && w.hold_through_line != 0;
                         });
    });
    if (held) ScheduleFlush();
  }
  if (!matched) {
    if (watcher_->empty()) return;
    std::vector<VersionWatcher::Hit> hits;
    watcher_->Scan(batch, first_line, &hits);
    if (hits.empty()) return;
    if (!streams_.contains(stream_id) && streams_.size() >= kMaxStreams) {
      streams_.erase(streams_.begin());
    }
    StreamInfo& stream = streams_[stream_id];
    stream.source_id = source_id;
    for (const VersionWatcher::Hit& hit : hits) {
      if (hit.kind == VersionWatcher::Hit::Kind::kVersion) {
        auto& history = stream.versions[hit.package];
        history.emplace_back(hit.line_number, hit.version);
        std::sort(history.begin(), history.end());
        while (history.size() > kVersionsPerPackage) history.pop_front();
        continue;
      }
      // A resolved_by line: the fix took effect here. Recorded once, while no fix covers the rule.
      const Rule* rule = RuleOf(hit.rule_id);
      bool needed = false;
      for (const auto& [signature, record] : tracker_.records()) {
        if (record.rule_id == hit.rule_id && record.announced && !tracker_.ActiveFix(record)) {
          needed = true;
        }
      }
      if (!needed) continue;
      FixRecord fix;
      fix.selector = hit.rule_id;
      fix.fixed_in = rule != nullptr && !rule->version_of.empty()
                         ? VersionAt(stream_id, source_id, rule->version_of, hit.line_number + 1)
                         : "";
      fix.by = "resolved_by";
      fix.note = "seen in " + source_id + " line " + std::to_string(hit.line_number);
      fix.origin = FixOrigin::kObserved;
      std::vector<LifecycleEvent> events;
      const int64_t now = clock_();
      tracker_.AddFix(fix, now, &events);
      Raise(events, nullptr, now);
    }
    return;
  }
  // After matching: items still waiting take the lines that followed their hit.
  for (auto& [key, group] : groups_) {
    for (std::size_t i = 0; i < group.items.size(); ++i) {
      const Waiting& w = group.where[i];
      AlertItem& item = group.items[i];
      if (w.stream_id != stream_id || item.context_after.size() >= kContextAfterLines) continue;
      for (std::size_t l = 0; l < batch.size() && item.context_after.size() < kContextAfterLines;
           ++l) {
        const uint64_t number = first_line + l;
        if (number <= w.hit_line + item.context_after.size()) continue;
        std::string line(batch.line(l).substr(0, FindingEvent::kMaxTextBytes));
        item.context_after.push_back(RedactSecrets(line));
      }
    }
  }
}

std::string Alerting::VersionAt(uint64_t stream_id, const std::string& source_id,
                                const std::string& package, uint64_t line) const {
  if (const auto s = streams_.find(stream_id); s != streams_.end()) {
    if (const auto p = s->second.versions.find(package); p != s->second.versions.end()) {
      std::string found;
      for (const auto& [at, version] : p->second) {
        if (at < line) found = version;
      }
      if (!found.empty()) return found;
    }
  }
  for (const auto& [source, versions] : config_.alerts.source_versions) {
    if (source != source_id) continue;
    for (const auto& [name, version] : versions) {
      if (NormalizePackageName(name) == package) return version;
    }
  }
  return "";
}

void Alerting::OnStreamEnd(uint64_t stream_id) {
  const auto it = runs_.find(stream_id);
  if (it == runs_.end()) return;
  const Run run = std::move(it->second);
  runs_.erase(it);
  ScheduleFlush();  // nothing more comes after the items held for consequences
  if (!runs_tracked_ || !run.lines || run.failed) return;
  std::vector<LifecycleEvent> events;
  const int64_t now = clock_();
  tracker_.OnCleanRun(run.job, now, &events);
  Raise(events, nullptr, now);
}

void Alerting::OnFinding(const FindingEvent& event) {
  const int64_t now = clock_();
  if (event.severity >= tracker_.options().min_severity) {
    // Matched lines come before their batch is shown (OnBatch after matching), so the run may
    // not be known yet.
    if (!runs_.contains(event.stream_id) && runs_.size() >= kMaxStreams) {
      runs_.erase(runs_.begin());
    }
    Run& run = runs_[event.stream_id];
    run.job = event.source_id;
    run.failed = true;
  }
  const Rule* rule = RuleOf(event.rule_id);
  // Root cause and consequences: a failure of a symptom rule that an earlier failure of the same
  // run explains (rank 3's OOM, then the other ranks' watchdog timeouts and torchrun's
  // ChildFailedError) is counted and tracked like any other, but not notified on its own: the
  // explaining failure's waiting item names it. Once that item has gone out, the consequence
  // needs no message of its own.
  Run* run = nullptr;
  std::optional<std::string> cause;
  if (event.severity >= tracker_.options().min_severity && rule != nullptr) {
    run = &runs_[event.stream_id];
    cause = ExplainedBy(*run, *rule, event.severity);
  }
  Occurrence occ;
  occ.event = &event;
  occ.arrival_ms = now;
  if (rule != nullptr && !rule->version_of.empty()) {
    occ.package = rule->version_of;
    occ.version = VersionAt(event.stream_id, event.source_id, rule->version_of, event.line_number);
  }
  occ.line_time_ms =
      event.line_time
          ? std::make_optional<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                            event.line_time->time_since_epoch())
                                            .count())
          : ParseLineTimestamp(event.text, now);
  std::vector<LifecycleEvent> events;
  const FixJudgement judgement = tracker_.Observe(occ, &events);
  CountOccurrence(event, judgement, now);
  const std::string run_key = event.source_id + "#" + std::to_string(event.stream_id);
  if (cause) {
    for (const LifecycleEvent& e : events) {
      events_total_->Add({{"kind", std::string(AlertKindName(e.kind))}}).Increment();
    }
    AddConsequence(run_key, *cause, event.signature);
  } else {
    Raise(events, &event, now);
    // Only an item just routed can take in earlier symptoms: a repeat finds them taken already.
    if (run != nullptr && !events.empty()) {
      AdoptConsequences(run_key, *run, *rule, event.signature, event.severity);
    }
  }
  if (run != nullptr && run->causes.size() < kMaxCausesPerRun) {
    const bool known = std::any_of(run->causes.begin(), run->causes.end(),
                                   [&](const Cause& c) { return c.signature == event.signature; });
    if (!known) {
      run->causes.push_back(
          Cause{rule->id, event.signature, event.severity, /*explained=*/cause.has_value()});
    }
  }
  UpdateWaitingCounts(event.signature);
}

std::optional<std::string> Alerting::ExplainedBy(const Run& run, const Rule& symptom,
                                                 Severity severity) const {
  if (symptom.role != RuleRole::kSymptom) return std::nullopt;
  for (const bool roots : {true, false}) {
    for (const Cause& c : run.causes) {
      const Rule* rule = RuleOf(c.rule_id);
      if (rule == nullptr || (rule->role == RuleRole::kRoot) != roots) continue;
      if (!roots && c.explained) continue;
      if (CanExplain(symptom, severity, *rule, c.severity)) return c.signature;
    }
  }
  return std::nullopt;
}

void Alerting::AddConsequence(const std::string& run_key, const std::string& cause,
                              const std::string& consequence) {
  for (auto& [key, group] : groups_) {
    if (!key.ends_with("\n" + run_key)) continue;
    for (AlertItem& item : group.items) {
      if (item.signature != cause || item.consequences.size() >= kMaxConsequencesPerItem ||
          std::find(item.consequences.begin(), item.consequences.end(), consequence) !=
              item.consequences.end()) {
        continue;
      }
      item.consequences.push_back(consequence);
    }
  }
}

void Alerting::AdoptConsequences(const std::string& run_key, Run& run, const Rule& rule,
                                 const std::string& signature, Severity severity) {
  for (auto& [key, group] : groups_) {
    if (!key.ends_with("\n" + run_key)) continue;
    const auto root = std::find_if(group.items.begin(), group.items.end(),
                                   [&](const AlertItem& i) { return i.signature == signature; });
    if (root == group.items.end()) continue;  // this receiver does not take it
    const size_t root_index = static_cast<size_t>(root - group.items.begin());
    const Run only_this_cause{.causes = {Cause{rule.id, signature, severity}}};
    std::vector<std::string> adopted;
    std::vector<bool> explained(group.items.size(), false);
    for (size_t i = 0; i < group.items.size(); ++i) {
      const AlertItem& item = group.items[i];
      const Rule* symptom = RuleOf(item.rule_id);
      explained[i] = i != root_index && symptom != nullptr &&
                     (item.kind == AlertKind::kNew || item.kind == AlertKind::kRegression ||
                      item.kind == AlertKind::kRecurrence) &&
                     ExplainedBy(only_this_cause, *symptom, item.severity).has_value();
      if (explained[i]) adopted.push_back(item.signature);
    }
    if (adopted.empty()) continue;
    std::vector<AlertItem> kept;
    std::vector<Waiting> kept_where;
    for (size_t i = 0; i < group.items.size(); ++i) {
      if (explained[i]) continue;
      kept.push_back(std::move(group.items[i]));
      kept_where.push_back(group.where[i]);
    }
    for (AlertItem& item : kept) {
      if (item.signature != signature) continue;
      for (const std::string& s : adopted) {
        if (item.consequences.size() < kMaxConsequencesPerItem) item.consequences.push_back(s);
      }
    }
    group.items = std::move(kept);
    group.where = std::move(kept_where);
    for (Cause& c : run.causes) {
      if (std::find(adopted.begin(), adopted.end(), c.signature) != adopted.end()) {
        c.explained = true;
      }
    }
  }
}

void Alerting::CountOccurrence(const FindingEvent& event, FixJudgement judgement, int64_t now) {
  if (event.severity < tracker_.options().min_severity) return;
  const SignatureRecord* record = tracker_.Find(event.signature);
  if (record == nullptr) return;
  occurrences_total_
      ->Add({{"signature", event.signature},
             {"state", std::string(SignatureStateName(tracker_.StateOf(*record, now)))},
             {"reason", std::string(JudgementReason(judgement))}})
      .Increment();
}

AlertItem Alerting::MakeItem(const LifecycleEvent& e, const FindingEvent* event,
                             int64_t now) const {
  AlertItem item;
  item.event_id = NewId("evt");
  item.kind = e.kind;
  item.signature = e.signature;
  const SignatureRecord* record = tracker_.Find(e.signature);
  if (record != nullptr) {
    item.rule_id = record->rule_id;
    item.labels = record->labels;
    item.state = std::string(SignatureStateName(tracker_.StateOf(*record, now)));
    item.count = record->count;
    item.first_seen_ms = record->first_seen_ms;
    item.last_seen_ms = record->last_seen_ms;
    item.versions_seen = record->versions_seen;
    item.active_until_ms = record->last_seen_ms + tracker_.options().quiet_for_ms;
    item.source = record->last_source;
    item.file = RedactSecrets(record->last_file);
    item.line = record->last_line;
    item.hit = RedactSecrets(record->last_hit);
  }
  const Rule* rule = RuleOf(item.rule_id);
  if (rule != nullptr) {
    item.title = rule->title;
    item.severity = rule->severity;
    item.root_cause = rule->root_cause;
    item.fix = rule->fix;
    item.fix_command = rule->fix_command;
    item.package = rule->version_of;
  } else if (item.rule_id.starts_with(kUnrecognisedPrefix)) {
    const std::string template_id = item.rule_id.substr(kUnrecognisedPrefix.size());
    item.title = "Unrecognised error (template " + template_id + ")";
    item.root_cause = "no rule of the pack explains this error line, seen " +
                      std::to_string(config_.discover_alert_after) + " times or more";
    item.fix = "draft a rule for it from the log and add it to the pack";
    item.fix_command = "faultline rules suggest --from LOG --template " + template_id;
  }
  if (event != nullptr) {
    item.severity = event->severity;
    item.source = event->source_id;
    item.file = RedactSecrets(event->stream_name);
    item.line = event->line_number;
    item.hit = RedactSecrets(event->text);
    for (const std::string& line : event->context_before) {
      item.context_before.push_back(RedactSecrets(line));
    }
  }
  item.host = host_;
  item.count_since_last = e.count_since_last;
  item.seen_in_version = e.version;
  item.regression_basis = e.regression_basis;
  item.detail = RedactSecrets(e.detail);
  if (e.fix) {
    item.fixed_in_version =
        !e.fix->fixed_in.empty()
            ? e.fix->fixed_in
            : (e.fix->after_version.empty() ? "" : "after " + e.fix->after_version);
    item.fixed_at_ms = e.fix->fixed_at_ms;
    item.fix_note = e.fix->note;
    item.fixed_by = e.fix->by;
  }
  return item;
}

void Alerting::Raise(const std::vector<LifecycleEvent>& events, const FindingEvent* event,
                     int64_t now) {
  for (const LifecycleEvent& e : events) {
    events_total_->Add({{"kind", std::string(AlertKindName(e.kind))}}).Increment();
    if (e.muted) continue;
    const AlertItem item = MakeItem(e, event, now);
    const std::string run = event != nullptr
                                ? event->source_id + "#" + std::to_string(event->stream_id)
                                : std::string("agent");
    Route(item, run, event != nullptr ? event->stream_id : 0,
          event != nullptr ? event->line_number : 0, true);
  }
}

void Alerting::Route(const AlertItem& item, const std::string& group_key, uint64_t stream_id,
                     uint64_t hit_line, bool group, bool alertmanager_only) {
  const int64_t now = clock_();
  for (const Receiver& r : receivers_) {
    if (alertmanager_only && r.type() != ReceiverConfig::Type::kAlertmanager) continue;
    if (!r.Takes(item.kind, item.severity)) continue;
    if (outbox_->targets().at(r.target()).disabled) continue;
    if (!group) {
      Notification n;
      n.id = NewId("ntf");
      n.receiver = r.name();
      n.created_ms = now;
      n.items.push_back(item);
      Enqueue(r.target(), std::move(n));
      continue;
    }
    Group& g = groups_[r.target() + "\n" + group_key];
    if (g.items.empty()) {
      g.target = r.target();
      g.due_ms = now + config_.alerts.group_wait_ms;
    }
    if (g.items.size() >= kMaxItemsPerNotification) {
      ++g.more;
      continue;
    }
    Waiting where{stream_id, hit_line};
    if (stream_id != 0 &&
        (item.kind == AlertKind::kNew || item.kind == AlertKind::kRegression ||
         item.kind == AlertKind::kRecurrence)) {
      if (const Rule* rule = RuleOf(item.rule_id); rule != nullptr && MayHaveConsequences(*rule)) {
        where.hold_through_line = hit_line + kConsequenceLines;
        where.hold_until_ms = now + kConsequenceWaitMs;
      }
    }
    g.items.push_back(item);
    g.where.push_back(where);
  }
  if (group) ScheduleFlush();
}

bool Alerting::MayHaveConsequences(const Rule& cause) const {
  return std::any_of(rules_.begin(), rules_.end(), [&](const auto& entry) {
    return entry.second->role == RuleRole::kSymptom && IsConsequenceOf(*entry.second, cause);
  });
}

int64_t Alerting::DueOf(const Group& g, int64_t now) const {
  int64_t due = g.due_ms;
  for (const Waiting& w : g.where) {
    if (w.hold_until_ms <= now || w.hold_until_ms <= due) continue;
    const auto run = runs_.find(w.stream_id);
    if (run == runs_.end() || run->second.last_line >= w.hold_through_line) continue;
    due = w.hold_until_ms;
  }
  return due;
}

void Alerting::UpdateWaitingCounts(const std::string& signature) {
  const SignatureRecord* record = tracker_.Find(signature);
  if (record == nullptr) return;
  for (auto& [key, group] : groups_) {
    for (AlertItem& item : group.items) {
      if (item.signature != signature) continue;
      item.count_since_last += record->count - item.count;
      item.count = record->count;
      item.last_seen_ms = record->last_seen_ms;
      item.active_until_ms = record->last_seen_ms + tracker_.options().quiet_for_ms;
    }
  }
}

void Alerting::ScheduleFlush() {
  if (groups_.empty()) return;
  const int64_t now = clock_();
  int64_t due = INT64_MAX;
  for (const auto& [key, g] : groups_) due = std::min(due, DueOf(g, now));
  if (due <= now) {
    // After the batch in hand: one read's worth of lines makes one message.
    if (flush_posted_) return;
    flush_posted_ = true;
    std::weak_ptr<bool> alive = alive_;
    asio::post(io_, [this, alive] {
      if (alive.expired()) return;
      flush_posted_ = false;
      FlushDue(false);
    });
    return;
  }
  group_timer_.expires_after(std::chrono::milliseconds(due - now));
  std::weak_ptr<bool> alive = alive_;
  group_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    FlushDue(false);
  });
}

void Alerting::FlushDue(bool all) {
  const int64_t now = clock_();
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (!all && DueOf(it->second, now) > now) {
      ++it;
      continue;
    }
    Group g = std::move(it->second);
    it = groups_.erase(it);
    Notification n;
    n.id = NewId("ntf");
    n.receiver = g.target;
    n.created_ms = now;
    n.items = std::move(g.items);
    n.more = g.more;
    Enqueue(g.target, std::move(n));
  }
  ScheduleFlush();
}

void Alerting::Enqueue(const std::string& target, Notification n) {
  for (const Receiver& r : receivers_) {
    if (r.target() == target) n.receiver = r.name();
  }
  outbox_->Add(target, std::move(n), clock_());
  if (store_backed_) {
    waiting_for_store_ = true;
    if (request_checkpoint_) request_checkpoint_();
  }
  Dispatch();
}

void Alerting::OnCommitted(const std::vector<int64_t>& outbox_seqs) {
  outbox_->MarkDurable(outbox_seqs);
  waiting_for_store_ = outbox_->WaitsForStore();
  Dispatch();
}

void Alerting::OnCheckpointFailed() {
  if (!outbox_->WaitsForStore()) return;
  outbox_->MarkAllDurable();
  waiting_for_store_ = false;
  Dispatch();
}

std::vector<Alerting::PendingGroup> Alerting::PendingGroups() const {
  std::vector<PendingGroup> out;
  out.reserve(groups_.size());
  for (const auto& [key, g] : groups_) {
    PendingGroup p{.key = key, .target = g.target, .due_ms = g.due_ms, .items = {}};
    p.items.items = g.items;
    p.items.more = g.more;
    out.push_back(std::move(p));
  }
  return out;
}

void Alerting::RestoreGroups(std::vector<PendingGroup> groups) {
  for (PendingGroup& p : groups) {
    if (!outbox_->targets().contains(p.target) || p.items.items.empty()) continue;
    Group& g = groups_[p.key];
    g.target = std::move(p.target);
    g.due_ms = p.due_ms;
    g.more = p.items.more;
    g.items = std::move(p.items.items);
    // Stream 0 is no stream: no context lines come after a restart.
    g.where.assign(g.items.size(), Waiting{0, 0});
  }
}

void Alerting::Dispatch() {
  if (!running_ || delivery_ == nullptr) return;
  const int64_t now = clock_();
  for (const Outbox::Send& send : outbox_->TakeDue(now)) {
    const OutboxEntry* entry = outbox_->Find(send.seq);
    for (const Receiver& r : receivers_) {
      if (r.target() != send.target) continue;
      delivery_->Send(HttpDelivery::Request{static_cast<uint64_t>(send.seq),
                                            r.Prepare(entry->notification, now / 1000),
                                            r.connect_timeout_ms(), r.timeout_ms()});
    }
  }
  // A digest made by TakeDue waits for the store before it goes.
  if (store_backed_ && outbox_->WaitsForStore()) {
    waiting_for_store_ = true;
    if (request_checkpoint_) request_checkpoint_();
  }
  ArmDispatchTimer();
  UpdateGauges();
}

void Alerting::ArmDispatchTimer() {
  const int64_t now = clock_();
  const std::optional<int64_t> next = outbox_->NextWakeup(now);
  dispatch_timer_.cancel();
  if (!next) return;
  dispatch_timer_.expires_after(std::chrono::milliseconds(std::max<int64_t>(1, *next - now)));
  std::weak_ptr<bool> alive = alive_;
  dispatch_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    Dispatch();
  });
}

void Alerting::OnDelivered(int64_t seq, DeliveryOutcome outcome) {
  const OutboxEntry* entry = outbox_->Find(seq);
  if (entry == nullptr) return;
  const std::string target = entry->target;
  const Notification notification = entry->notification;
  const int64_t now = clock_();
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const RetryDecision d = outbox_->OnResult(seq, outcome, now, uniform(random_));
  const std::string kind = notification.items.size() == 1 && notification.more == 0
                               ? std::string(AlertKindName(notification.items.front().kind))
                               : std::string("digest");
  static constexpr std::string_view kResults[] = {"delivered", "retried", "rate_limited",
                                                  "dead_lettered", "receiver_disabled"};
  notifications_total_
      ->Add({{"receiver", target},
             {"kind", notification.test ? std::string("test") : kind},
             {"result", std::string(kResults[static_cast<int>(d.action)])}})
      .Increment();
  switch (d.action) {
    case RetryDecision::Action::kDone:
      // Forget it in the store soon: a crash before that sends it once more (same webhook-id).
      if (store_backed_ && request_checkpoint_) request_checkpoint_();
      last_success_->Add({{"receiver", target}}).Set(static_cast<double>(now) / 1000);
      if (!notification.test) {
        for (const AlertItem& item : notification.items) {
          tracker_.OnDelivered(item.signature, target, now);
        }
      }
      break;
    case RetryDecision::Action::kRetry:
    case RetryDecision::Action::kPauseReceiver:
      spdlog::warn("alert to {} failed ({}); next try in {} ms", target, d.reason, d.delay.count());
      // The backoff is kept in the store soon, so that a restart waits it out too.
      if (store_backed_ && !notification.test && request_checkpoint_) request_checkpoint_();
      break;
    case RetryDecision::Action::kDeadLetter:
      spdlog::error("alert {} to {} dead-lettered: {}", notification.id, target, d.reason);
      break;
    case RetryDecision::Action::kDisableReceiver:
      ReportDisabled(target, d.reason);
      break;
  }
  if (notification.test && d.action != RetryDecision::Action::kRetry &&
      d.action != RetryDecision::Action::kPauseReceiver) {
    if (const auto it = tests_.find(notification.id + "\n" + target); it != tests_.end()) {
      TestDone done = std::move(it->second);
      tests_.erase(it);
      done(target, d, outcome);
    }
  }
  Dispatch();
}

void Alerting::ReportDisabled(const std::string& target, const std::string& reason) {
  spdlog::error(
      "receiver {} disabled: {} (fix its URL in the config; a restart or reload "
      "enables it again)",
      target, reason);
  receiver_disabled_->Add({{"receiver", target}}).Set(1);
  AlertItem item;
  item.event_id = NewId("evt");
  item.kind = AlertKind::kReceiverDisabled;
  item.signature = "faultline.receiver_disabled{receiver=" + target + "}";
  item.rule_id = "faultline.receiver_disabled";
  item.labels = {{"receiver", target}};
  item.title = "Receiver " + target + " was disabled";
  item.severity = Severity::kError;
  item.state = "active";
  item.host = host_;
  item.detail = reason;
  item.first_seen_ms = item.last_seen_ms = clock_();
  item.active_until_ms = item.last_seen_ms + tracker_.options().quiet_for_ms;
  Route(item, "agent", 0, 0, false);
}

void Alerting::Tick() {
  if (!running_) return;
  std::vector<LifecycleEvent> events;
  const int64_t now = clock_();
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

void Alerting::UpdateGauges() {
  for (const auto& [name, status] : outbox_->targets()) {
    queue_depth_->Add({{"receiver", name}}).Set(static_cast<double>(status.queued));
    receiver_disabled_->Add({{"receiver", name}}).Set(status.disabled ? 1 : 0);
    prometheus::Counter& coalesced = coalesced_total_->Add({{"receiver", name}});
    if (static_cast<double>(status.coalesced) > coalesced.Value()) {
      coalesced.Increment(static_cast<double>(status.coalesced) - coalesced.Value());
    }
    if (status.last_success_ms != 0) {
      last_success_->Add({{"receiver", name}})
          .Set(static_cast<double>(status.last_success_ms) / 1000);
    }
  }
}

Result<FixRecord> Alerting::Fix(const FixRequest& request) {
  bool known = rules_.contains(request.selector) || tracker_.Find(request.selector) != nullptr;
  if (!known) {
    return Error{
        "", 0, "", "signature",
        "'" + request.selector + "' is neither a signature seen by this agent nor a rule id"};
  }
  if (!request.version.empty() && !IsVersion(request.version)) {
    return Error{"", 0, "", "version",
                 "'" + request.version + "' is not a PEP 440 or semver version"};
  }
  FixRecord fix;
  fix.selector = request.selector;
  fix.fixed_in = request.version;
  fix.note = request.note;
  fix.by = request.by;
  fix.origin = request.origin;
  std::vector<LifecycleEvent> events;
  const int64_t now = clock_();
  const FixRecord stored = tracker_.AddFix(fix, now, &events);
  Raise(events, nullptr, now);
  if (request_checkpoint_) request_checkpoint_();
  return stored;
}

std::size_t Alerting::Unfix(const std::string& selector) {
  const std::size_t n = tracker_.RemoveFixes(selector);
  if (n > 0 && request_checkpoint_) request_checkpoint_();
  return n;
}

bool Alerting::Mute(const std::string& selector, int64_t duration_ms, const std::string& reason,
                    const std::string& by) {
  const int64_t now = clock_();
  const bool any = tracker_.Mute(selector, now + std::clamp<int64_t>(duration_ms, 1, kMaxMuteMs),
                                 reason, by, now);
  if (any && request_checkpoint_) request_checkpoint_();
  return any;
}

std::size_t Alerting::Unmute(const std::string& selector) {
  std::vector<LifecycleEvent> events;
  const int64_t now = clock_();
  const std::size_t n = tracker_.Unmute(selector, now, &events);
  Raise(events, nullptr, now);
  if (n > 0 && request_checkpoint_) request_checkpoint_();
  return n;
}

Result<std::vector<std::string>> Alerting::Test(const std::string& receiver,
                                                const std::string& signature, TestDone done) {
  std::vector<const Receiver*> targets;
  for (const Receiver& r : receivers_) {
    if (r.name() == receiver) targets.push_back(&r);
  }
  if (targets.empty()) {
    std::string names;
    for (const Receiver& r : receivers_) {
      if (names.find(r.name()) == std::string::npos)
        names += (names.empty() ? "" : ", ") + r.name();
    }
    return Error{"", 0, "", "receiver",
                 "no receiver named '" + receiver +
                     "' (configured: " + (names.empty() ? std::string("none") : names) + ")"};
  }
  const int64_t now = clock_();
  AlertItem item;
  item.event_id = NewId("evt");
  item.kind = AlertKind::kNew;
  item.signature = signature.empty() ? kSampleSignature : signature;
  item.rule_id = item.signature.substr(0, item.signature.find('{'));
  item.title = "faultline test notification";
  item.severity = Severity::kError;
  item.state = "new";
  item.host = host_;
  item.source = "faultline-alert-test";
  item.hit = "This is a test message from faultline alert test; no failure happened.";
  item.count = 1;
  item.first_seen_ms = item.last_seen_ms = now;
  item.active_until_ms = now;
  if (const SignatureRecord* record = tracker_.Find(item.signature)) {
    item.rule_id = record->rule_id;
    item.labels = record->labels;
    item.count = record->count;
    item.hit = RedactSecrets(record->last_hit);
    item.file = RedactSecrets(record->last_file);
    item.line = record->last_line;
  }
  if (const Rule* rule = RuleOf(item.rule_id)) {
    item.title = rule->title;
    item.root_cause = rule->root_cause;
    item.fix = rule->fix;
    item.fix_command = rule->fix_command;
    item.package = rule->version_of;
  } else if (!signature.empty()) {
    return Error{"", 0, "", "signature",
                 "'" + signature + "' is neither a signature seen by this agent nor a rule id"};
  }
  Notification n;
  n.id = NewId("test");
  n.created_ms = now;
  n.test = true;
  n.items.push_back(item);
  std::vector<std::string> names;
  for (const Receiver* r : targets) {
    tests_[n.id + "\n" + r->target()] = done;
    n.receiver = r->name();
    // A test writes no state: never persisted, and so sent at once.
    outbox_->Add(r->target(), n, now, /*ephemeral=*/true);
    names.push_back(r->target());
  }
  Dispatch();
  return names;
}

std::string Alerting::SignaturesJson() const {
  const int64_t now = clock_();
  json list = json::array();
  for (const auto& [signature, r] : tracker_.records()) {
    json labels = json::object();
    for (const auto& [name, value] : r.labels) labels[name] = value;
    json fixes = json::array();
    for (const FixRecord& f : tracker_.fixes()) {
      if (f.Covers(signature, r.rule_id)) fixes.push_back(FixJson(f));
    }
    json mute = nullptr;
    if (r.mute) {
      mute = json{{"until", FormatTimestampMs(r.mute->until_ms)},
                  {"reason", r.mute->reason},
                  {"by", r.mute->by},
                  {"occurrences", r.mute->occurrences}};
    }
    json notified = json::object();
    for (const auto& [receiver, at] : r.notified_by_receiver)
      notified[receiver] = FormatTimestampMs(at);
    list.push_back(
        {{"signature", signature},
         {"rule_id", r.rule_id},
         {"labels", labels},
         {"state", SignatureStateName(tracker_.StateOf(r, now))},
         {"count", r.count},
         {"first_seen", FormatTimestampMs(r.first_seen_ms)},
         {"last_seen", FormatTimestampMs(r.last_seen_ms)},
         {"versions_seen", r.versions_seen},
         {"pre_fix",
          {{"version", r.pre_fix_version},
           {"time", r.pre_fix_time},
           {"version_unknown", r.version_unknown}}},
         {"fixes", fixes},
         {"mute", mute},
         {"resolution",
          {{"job", r.failed_in_job}, {"clean_runs", r.clean_runs}, {"flapping", r.flapping}}},
         {"last_hit",
          {{"source", r.last_source},
           {"file", RedactSecrets(r.last_file)},
           {"line", r.last_line},
           {"text", RedactSecrets(r.last_hit)}}},
         {"notified", notified}});
  }
  json fixes = json::array();
  for (const FixRecord& f : tracker_.fixes()) fixes.push_back(FixJson(f));
  return json{{"signatures", list}, {"fixes", fixes}}.dump(2, ' ', false,
                                                           json::error_handler_t::replace);
}

std::string Alerting::StateName(std::string_view signature) const {
  const SignatureRecord* record = tracker_.Find(signature);
  if (record == nullptr) return "";
  return std::string(SignatureStateName(tracker_.StateOf(*record, clock_())));
}

std::string Alerting::ReceiversJson() const {
  json list = json::array();
  for (const Receiver& r : receivers_) {
    const Outbox::TargetStatus& s = outbox_->targets().at(r.target());
    list.push_back({{"name", r.name()},
                    {"target", r.target()},
                    {"disabled", s.disabled},
                    {"disabled_reason", s.disabled_reason},
                    {"paused_until", FormatTimestampMs(s.paused_until_ms)},
                    {"last_success", FormatTimestampMs(s.last_success_ms)},
                    {"queued", s.queued},
                    {"coalesced", s.coalesced}});
  }
  return json{{"receivers", list}}.dump(2);
}

}  // namespace faultline
