// Alerting (alerting.h), grouping: lifecycle events become items (redacted), routed to the
// receivers that take them, and wait out group_wait per (receiver, run), longer while a failure
// waits for its consequences; the groups are read and restored whole for the store.

#include <algorithm>
#include <chrono>

#include "agent/alert/alerting.h"
#include "agent/alert/redact.h"

namespace faultline {
namespace {

// One message lists at most this many signatures and counts the rest ("and 900 more"): a flood of
// a thousand new signatures in one run is one readable message, and `faultline signatures` has
// them all.
constexpr std::size_t kMaxItemsPerNotification = 100;
// How long a failure that may have consequences waits for them (alerting.h, "Consequences"):
// a tool prints its summary (pip's "Command errored out", torchrun's ChildFailedError, an abort)
// within a few lines of the cause, but a writer that flushes line by line on a loaded node can put
// a few hundred milliseconds between them (250 ms was seen to split one failure in two on a busy
// CI runner). Bounds the latency this adds to group_wait_ms 0 for a quiet stream; a stream that
// goes on releases it after kConsequenceLines, and a larger group_wait_ms makes it moot.
constexpr uint64_t kConsequenceLines = 10;
constexpr int64_t kConsequenceWaitMs = 1000;

}  // namespace

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
    metrics_.CountEvent(AlertKindName(e.kind));
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
  const int64_t now = NowMs();
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
    if (stream_id != 0 && (item.kind == AlertKind::kNew || item.kind == AlertKind::kRegression ||
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
  const int64_t now = NowMs();
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
  const int64_t now = NowMs();
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

}  // namespace faultline
