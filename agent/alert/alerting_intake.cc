// Alerting (alerting.h), intake: the batches and findings of every stream, as runs of their
// jobs. Batches before matching give package versions and resolved_by lines (VersionWatcher),
// after matching the context lines of waiting items; findings go through the tracker's lifecycle
// and are counted in faultline_signature_occurrences_total.

#include <algorithm>

#include "agent/alert/alerting.h"
#include "agent/alert/line_timestamp.h"
#include "agent/alert/redact.h"
#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

// Streams whose versions are remembered; the oldest are forgotten beyond this.
constexpr std::size_t kMaxStreams = 4096;
// (line, version) pairs kept per package and stream.
constexpr std::size_t kVersionsPerPackage = 8;
// Lines after the hit an item shows.
constexpr std::size_t kContextAfterLines = 3;
// Failures of one run kept as possible causes: the first ones, where root causes are.
constexpr std::size_t kMaxCausesPerRun = 32;

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
      return std::any_of(
          entry.second.where.begin(), entry.second.where.end(),
          [&](const Waiting& w) { return w.stream_id == stream_id && w.hold_through_line != 0; });
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
      const int64_t now = NowMs();
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
  const int64_t now = NowMs();
  tracker_.OnCleanRun(run.job, now, &events);
  Raise(events, nullptr, now);
}

void Alerting::OnFinding(const FindingEvent& event) {
  const int64_t now = NowMs();
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
  occ.line_time_ms = event.line_time ? std::make_optional(UnixMs(*event.line_time))
                                     : ParseLineTimestamp(event.text, now);
  std::vector<LifecycleEvent> events;
  const FixJudgement judgement = tracker_.Observe(occ, &events);
  CountOccurrence(event, judgement, now);
  const std::string run_key = event.source_id + "#" + std::to_string(event.stream_id);
  if (cause) {
    for (const LifecycleEvent& e : events) {
      metrics_.CountEvent(AlertKindName(e.kind));
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

void Alerting::CountOccurrence(const FindingEvent& event, FixJudgement judgement, int64_t now) {
  if (event.severity < tracker_.options().min_severity) return;
  const SignatureRecord* record = tracker_.Find(event.signature);
  if (record == nullptr) return;
  metrics_.CountOccurrence(event.signature, SignatureStateName(tracker_.StateOf(*record, now)),
                           JudgementReason(judgement));
}

}  // namespace faultline
