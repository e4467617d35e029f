#include "agent/alert/signature_tracker.h"

#include <algorithm>

#include "agent/alert/version.h"

namespace faultline {
namespace {

constexpr std::pair<FixOrigin, std::string_view> kOrigins[] = {
    {FixOrigin::kCli, "cli"},
    {FixOrigin::kApi, "api"},
    {FixOrigin::kConfig, "config"},
    {FixOrigin::kObserved, "observed"},
};

// The highest of `versions` that parses; empty when none does.
std::string HighestVersion(const std::vector<std::string>& versions) {
  std::string best;
  for (const std::string& v : versions) {
    if (!IsVersion(v)) continue;
    if (best.empty() || IsNewerVersion(v, best)) best = v;
  }
  return best;
}

std::string MuteSummary(const MuteRecord& mute) {
  const uint64_t runs = mute.runs.size() + mute.runs_overflow;
  std::string s = "while muted (" + mute.reason + "): " + std::to_string(mute.occurrences) +
                  " occurrence(s) in " + std::to_string(runs) + " run(s)";
  if (mute.regressed) s += "; it regressed during the mute";
  return s;
}

std::string FlapNote(const SignatureRecord& record) {
  return "flapping: " + std::to_string(record.resolved_at_ms.size()) +
         " fire/resolve cycles within the last hour; at most one message an hour until it settles";
}

std::string WithNote(std::string detail, const std::string& note) {
  return detail.empty() ? note : detail + "; " + note;
}

}  // namespace

std::string_view FixOriginName(FixOrigin origin) {
  for (const auto& [o, name] : kOrigins) {
    if (o == origin) return name;
  }
  return "cli";
}

std::optional<FixOrigin> ParseFixOrigin(std::string_view name) {
  for (const auto& [o, n] : kOrigins) {
    if (n == name) return o;
  }
  return std::nullopt;
}

std::string_view SignatureStateName(SignatureState state) {
  switch (state) {
    case SignatureState::kNew:
      return "new";
    case SignatureState::kActive:
      return "active";
    case SignatureState::kQuiet:
      return "quiet";
    case SignatureState::kFixed:
      return "fixed";
    case SignatureState::kRegressed:
      return "regressed";
    case SignatureState::kMuted:
      return "muted";
    case SignatureState::kResolved:
      return "resolved";
    case SignatureState::kFlapping:
      return "flapping";
  }
  return "active";
}

SignatureTracker::SignatureTracker(LifecycleOptions options) : options_(options) {}

const FixRecord* SignatureTracker::LatestFix(const SignatureRecord& record) const {
  for (auto it = fixes_.rbegin(); it != fixes_.rend(); ++it) {
    if (it->Covers(record.signature, record.rule_id)) return &*it;
  }
  return nullptr;
}

const FixRecord* SignatureTracker::ActiveFix(const SignatureRecord& record) const {
  const FixRecord* latest = LatestFix(record);
  if (latest == nullptr || latest->regressed_signatures.contains(record.signature)) return nullptr;
  return latest;
}

FixRecord* SignatureTracker::MutableActiveFix(const SignatureRecord& record) {
  for (auto it = fixes_.rbegin(); it != fixes_.rend(); ++it) {
    if (!it->Covers(record.signature, record.rule_id)) continue;
    return it->regressed_signatures.contains(record.signature) ? nullptr : &*it;
  }
  return nullptr;
}

SignatureState SignatureTracker::StateOf(const SignatureRecord& record, int64_t now_ms) const {
  if (record.mute && record.mute->until_ms > now_ms) return SignatureState::kMuted;
  if (record.flapping) return SignatureState::kFlapping;
  if (const FixRecord* fix = LatestFix(record)) {
    return fix->regressed_signatures.contains(record.signature) ? SignatureState::kRegressed
                                                                : SignatureState::kFixed;
  }
  if (now_ms - record.last_seen_ms >= options_.quiet_for_ms) return SignatureState::kQuiet;
  if (record.resolved) return SignatureState::kResolved;
  if (now_ms - record.first_seen_ms < options_.quiet_for_ms) return SignatureState::kNew;
  return SignatureState::kActive;
}

const SignatureRecord* SignatureTracker::Find(std::string_view signature) const {
  const auto it = records_.find(signature);
  return it == records_.end() ? nullptr : &it->second;
}

FixJudgement SignatureTracker::Judge(const FixRecord& fix, const Occurrence& occ,
                                     std::string* basis) const {
  const std::string& bound = !fix.fixed_in.empty() ? fix.fixed_in : fix.after_version;
  if (!bound.empty() && !occ.version.empty()) {
    *basis = "version";
    const auto order = CompareVersions(occ.version, bound);
    if (!order) return FixJudgement::kVersionUnknown;
    const bool newer = !fix.fixed_in.empty() ? *order != std::strong_ordering::less
                                             : *order == std::strong_ordering::greater;
    return newer ? FixJudgement::kRegression : FixJudgement::kPreFixVersion;
  }
  // No version to compare: the line's own time, else when it arrived. A replayed or late log
  // keeps its timestamps, so it stays older than the fix.
  const int64_t at = occ.line_time_ms.value_or(occ.arrival_ms);
  *basis = occ.line_time_ms ? "timestamp" : "arrival";
  return at > fix.fixed_at_ms ? FixJudgement::kRegression : FixJudgement::kPreFixTime;
}

void SignatureTracker::Notified(SignatureRecord& record, int64_t now_ms) {
  record.last_notified_ms = now_ms;
  record.since_notified = 0;
}

FixJudgement SignatureTracker::Observe(const Occurrence& occ, std::vector<LifecycleEvent>* out) {
  const FindingEvent& event = *occ.event;
  const int64_t now = occ.arrival_ms;
  auto [it, created] = records_.try_emplace(event.signature);
  SignatureRecord& record = it->second;
  if (created) {
    record.signature = event.signature;
    record.rule_id = event.rule_id;
    record.labels = event.labels;
    record.first_seen_ms = now;
  }
  Touch(record);
  record.count += 1;
  record.last_seen_ms = now;
  record.last_source = event.source_id;
  record.last_file = event.stream_name;
  record.last_line = event.line_number;
  record.last_hit = event.text;
  if (!occ.version.empty() && std::find(record.versions_seen.begin(), record.versions_seen.end(),
                                        occ.version) == record.versions_seen.end()) {
    if (record.versions_seen.size() == SignatureRecord::kMaxVersionsSeen) {
      record.versions_seen.erase(record.versions_seen.begin());
    }
    record.versions_seen.push_back(occ.version);
  }
  const bool muted = record.mute && record.mute->until_ms > now;
  if (muted) {
    MuteRecord& mute = *record.mute;
    ++mute.occurrences;
    if (mute.runs.size() < MuteRecord::kMaxMutedRuns) {
      mute.runs.insert(event.stream_name);
    } else if (!mute.runs.contains(event.stream_name)) {
      ++mute.runs_overflow;
    }
  }
  if (event.severity < options_.min_severity) return FixJudgement::kNoFix;

  const int64_t previous_failure = record.last_failure_ms;
  const bool was_resolved = record.resolved;
  record.last_failure_ms = now;
  record.resolved = false;
  record.failed_in_job = event.source_id;
  record.clean_runs = 0;
  const auto raise = [&](LifecycleEvent e) {
    e.signature = record.signature;
    e.version = occ.version;
    e.muted = muted;
    // Muted or not, the digest cadence goes on: the mute's end summarises what it hid, so
    // nothing is owed afterwards.
    Notified(record, now);
    Emit(record, std::move(e), now, out);
  };

  if (FixRecord* active = MutableActiveFix(record)) {
    std::string basis;
    const FixJudgement judgement = Judge(*active, occ, &basis);
    switch (judgement) {
      case FixJudgement::kRegression: {
        FixRecord& fix = *active;
        fix.regressed_signatures.insert(record.signature);
        ++record.since_notified;
        fixes_dirty_ = true;
        record.announced = true;
        if (muted) record.mute->regressed = true;
        LifecycleEvent e;
        e.kind = AlertKind::kRegression;
        e.regression_basis = basis;
        e.fix = fix;
        e.count_since_last = record.since_notified;
        raise(std::move(e));
        return judgement;
      }
      case FixJudgement::kPreFixVersion:
        ++record.pre_fix_version;
        break;
      case FixJudgement::kPreFixTime:
        ++record.pre_fix_time;
        break;
      case FixJudgement::kVersionUnknown:
        ++record.version_unknown;
        break;
      case FixJudgement::kNoFix:
        break;
    }
    // Covered by the fix: counted, never a message.
    return judgement;
  }
  ++record.since_notified;

  if (!record.announced) {
    record.announced = true;
    LifecycleEvent e;
    e.kind = AlertKind::kNew;
    e.count_since_last = record.since_notified;
    raise(std::move(e));
    return FixJudgement::kNoFix;
  }
  if (was_resolved && previous_failure != 0 && now - previous_failure < options_.quiet_for_ms) {
    // Resolved by runs (or by a fix since removed): receivers closed the alert, so it fires
    // again, however soon. A quiet_for resolution is the recurrence below, with its backoff.
    LifecycleEvent e;
    e.kind = AlertKind::kRecurrence;
    e.count_since_last = record.since_notified;
    e.detail = "failing again after it was resolved";
    raise(std::move(e));
    return FixJudgement::kNoFix;
  }
  const bool regressed_before = LatestFix(record) != nullptr;
  if (!regressed_before && previous_failure != 0 &&
      now - previous_failure >= options_.quiet_for_ms &&
      (record.last_recurrence_ms == 0 ||
       now - record.last_recurrence_ms >= record.recurrence_backoff_ms)) {
    // Exponential realert: the backoff doubles while it keeps coming back within twice the
    // backoff, and starts over after a longer calm.
    if (record.last_recurrence_ms != 0 &&
        now - record.last_recurrence_ms < 2 * record.recurrence_backoff_ms) {
      record.recurrence_backoff_ms =
          std::min(2 * record.recurrence_backoff_ms, options_.recurrence_backoff_cap_ms);
    } else {
      record.recurrence_backoff_ms = options_.recurrence_backoff_ms;
    }
    record.last_recurrence_ms = now;
    LifecycleEvent e;
    e.kind = AlertKind::kRecurrence;
    e.count_since_last = record.since_notified;
    raise(std::move(e));
    return FixJudgement::kNoFix;
  }
  if (now - record.last_notified_ms >= options_.repeat_interval_ms) {
    LifecycleEvent e;
    e.kind = AlertKind::kOngoing;
    e.count_since_last = record.since_notified;
    raise(std::move(e));
  }
  return FixJudgement::kNoFix;
}

const FixRecord& SignatureTracker::AddFix(FixRecord fix, int64_t now_ms,
                                          std::vector<LifecycleEvent>* out) {
  fix.id = next_fix_id_++;
  if (fix.fixed_at_ms == 0) fix.fixed_at_ms = now_ms;
  fix.regressed_signatures.clear();
  if (fix.fixed_in.empty() && fix.after_version.empty()) {
    // "Fixed in the next version": pinned to the highest version seen so far, when any was.
    std::vector<std::string> seen;
    for (const auto& [signature, record] : records_) {
      if (fix.Covers(signature, record.rule_id)) {
        seen.insert(seen.end(), record.versions_seen.begin(), record.versions_seen.end());
      }
    }
    fix.after_version = HighestVersion(seen);
  }
  fixes_.push_back(std::move(fix));
  fixes_dirty_ = true;
  const FixRecord& stored = fixes_.back();
  for (auto& [signature, record] : records_) {
    if (!stored.Covers(signature, record.rule_id) || !record.announced || record.resolved) continue;
    LifecycleEvent e;
    e.kind = AlertKind::kResolved;
    e.signature = signature;
    e.fix = stored;
    e.muted = record.mute && record.mute->until_ms > now_ms;
    Resolve(record, std::move(e), now_ms, out);
  }
  return stored;
}

std::size_t SignatureTracker::RemoveFixes(std::string_view selector) {
  const std::size_t before = fixes_.size();
  std::erase_if(fixes_, [&](const FixRecord& f) { return f.selector == selector; });
  if (fixes_.size() != before) fixes_dirty_ = true;
  return before - fixes_.size();
}

void SignatureTracker::EnsureConfigFix(const FixRecord& fix, int64_t now_ms,
                                       std::vector<LifecycleEvent>* out) {
  for (const FixRecord& f : fixes_) {
    if (f.origin == FixOrigin::kConfig && f.selector == fix.selector &&
        f.fixed_in == fix.fixed_in && f.note == fix.note) {
      return;
    }
  }
  AddFix(fix, now_ms, out);
}

bool SignatureTracker::Mute(std::string_view selector, int64_t until_ms, std::string reason,
                            std::string by, int64_t now_ms) {
  bool any = false;
  for (auto& [signature, record] : records_) {
    if (signature != selector && record.rule_id != selector) continue;
    MuteRecord mute;
    mute.set_at_ms = now_ms;
    mute.until_ms = until_ms;
    mute.reason = reason;
    mute.by = by;
    record.mute = std::move(mute);
    Touch(record);
    any = true;
  }
  return any;
}

void SignatureTracker::EndMute(SignatureRecord& record, int64_t now_ms,
                               std::vector<LifecycleEvent>* out) {
  const MuteRecord mute = *record.mute;
  record.mute.reset();
  Touch(record);
  LifecycleEvent e;
  e.signature = record.signature;
  e.detail = MuteSummary(mute);
  e.count_since_last = mute.occurrences;
  if (mute.regressed) {
    // The page the mute held back, once.
    e.kind = AlertKind::kRegression;
    if (const FixRecord* fix = LatestFix(record)) e.fix = *fix;
    e.regression_basis = "muted";
  } else {
    e.kind = AlertKind::kMuteEnded;
  }
  Notified(record, now_ms);
  out->push_back(std::move(e));
}

std::size_t SignatureTracker::Unmute(std::string_view selector, int64_t now_ms,
                                     std::vector<LifecycleEvent>* out) {
  std::size_t n = 0;
  for (auto& [signature, record] : records_) {
    if ((signature != selector && record.rule_id != selector) || !record.mute) continue;
    EndMute(record, now_ms, out);
    ++n;
  }
  return n;
}

void SignatureTracker::Emit(SignatureRecord& record, LifecycleEvent e, int64_t now_ms,
                            std::vector<LifecycleEvent>* out) {
  if (record.flapping && !e.muted) {
    if (record.flap_notified_ms != 0 &&
        now_ms - record.flap_notified_ms < options_.flap_notify_interval_ms) {
      // Counted as raised, not sent; the latest held kind goes out when the hour is up.
      record.flap_held = e.kind;
      e.muted = true;
    } else {
      record.flap_notified_ms = now_ms;
      record.flap_held.reset();
      e.detail = WithNote(std::move(e.detail), FlapNote(record));
    }
    Touch(record);
  }
  out->push_back(std::move(e));
}

void SignatureTracker::Resolve(SignatureRecord& record, LifecycleEvent e, int64_t now_ms,
                               std::vector<LifecycleEvent>* out) {
  record.resolved = true;
  record.clean_runs = 0;
  Touch(record);
  std::erase_if(record.resolved_at_ms,
                [&](int64_t at) { return now_ms - at >= options_.flap_window_ms; });
  record.resolved_at_ms.push_back(now_ms);
  // Only the count within the window matters; a few more than the threshold is plenty.
  const std::size_t keep = std::max<std::size_t>(options_.flap_cycles, 1) * 4;
  if (record.resolved_at_ms.size() > keep) {
    record.resolved_at_ms.erase(record.resolved_at_ms.begin(),
                                record.resolved_at_ms.end() - static_cast<std::ptrdiff_t>(keep));
  }
  if (!record.flapping && options_.flap_cycles > 0 &&
      record.resolved_at_ms.size() >= options_.flap_cycles) {
    record.flapping = true;
    record.flap_notified_ms = 0;  // this resolution says so, at once
  }
  Emit(record, std::move(e), now_ms, out);
}

void SignatureTracker::OnCleanRun(std::string_view job, int64_t now_ms,
                                  std::vector<LifecycleEvent>* out) {
  if (options_.resolve_after_runs <= 0) return;
  const auto needed = static_cast<uint64_t>(options_.resolve_after_runs);
  for (auto& [signature, record] : records_) {
    if (!record.announced || record.resolved || record.last_failure_ms == 0 ||
        record.failed_in_job != job || ActiveFix(record) != nullptr) {
      continue;
    }
    ++record.clean_runs;
    Touch(record);
    if (record.clean_runs < needed) continue;
    LifecycleEvent e;
    e.kind = AlertKind::kResolved;
    e.signature = signature;
    e.detail = std::to_string(needed) + " successful run(s) of " + std::string(job) +
               " in a row since it last failed";
    e.muted = record.mute && record.mute->until_ms > now_ms;
    Resolve(record, std::move(e), now_ms, out);
  }
}

void SignatureTracker::TickFlapping(SignatureRecord& record, int64_t now_ms,
                                    std::vector<LifecycleEvent>* out) {
  if (!record.flapping) return;
  std::erase_if(record.resolved_at_ms,
                [&](int64_t at) { return now_ms - at >= options_.flap_window_ms; });
  const bool settled = record.resolved_at_ms.empty();
  const bool due =
      record.flap_held && now_ms - record.flap_notified_ms >= options_.flap_notify_interval_ms;
  if (!settled && !due) return;
  Touch(record);
  if (settled) record.flapping = false;
  if (!record.flap_held) return;
  LifecycleEvent e;
  e.kind = *record.flap_held;
  e.signature = record.signature;
  e.detail = settled ? "no longer flapping: no fire/resolve cycle within the last hour"
                     : FlapNote(record) + "; the state now, after an hour of held messages";
  if (const FixRecord* fix = LatestFix(record)) e.fix = *fix;
  e.count_since_last = record.since_notified;
  e.muted = record.mute && record.mute->until_ms > now_ms;
  record.flap_held.reset();
  record.flap_notified_ms = now_ms;
  Notified(record, now_ms);
  out->push_back(std::move(e));
}

void SignatureTracker::Tick(int64_t now_ms, std::vector<LifecycleEvent>* out) {
  for (auto& [signature, record] : records_) {
    if (record.mute && record.mute->until_ms <= now_ms) EndMute(record, now_ms, out);
    if (record.announced && !record.resolved && record.last_failure_ms != 0 &&
        now_ms - record.last_failure_ms >= options_.quiet_for_ms && ActiveFix(record) == nullptr) {
      LifecycleEvent e;
      e.kind = AlertKind::kResolved;
      e.signature = signature;
      e.detail = "quiet since " + FormatTimestampMs(record.last_failure_ms);
      e.muted = record.mute.has_value();
      Resolve(record, std::move(e), now_ms, out);
    }
    TickFlapping(record, now_ms, out);
  }
}

void SignatureTracker::OnDelivered(const std::string& signature, const std::string& receiver,
                                   int64_t now_ms) {
  const auto it = records_.find(signature);
  if (it == records_.end()) return;
  it->second.notified_by_receiver[receiver] = now_ms;
  Touch(it->second);
}

void SignatureTracker::Restore(std::vector<SignatureRecord> records, std::vector<FixRecord> fixes) {
  records_.clear();
  for (SignatureRecord& r : records) {
    std::string key = r.signature;
    records_.emplace(std::move(key), std::move(r));
  }
  fixes_ = std::move(fixes);
  std::sort(fixes_.begin(), fixes_.end(),
            [](const FixRecord& a, const FixRecord& b) { return a.id < b.id; });
  next_fix_id_ = fixes_.empty() ? 1 : fixes_.back().id + 1;
  dirty_.clear();
  fixes_dirty_ = false;
}

SignatureTracker::Dirty SignatureTracker::TakeDirty() {
  Dirty d;
  for (const std::string& signature : dirty_) {
    if (const auto it = records_.find(signature); it != records_.end()) {
      d.records.push_back(it->second);
    }
  }
  dirty_.clear();
  d.fixes_changed = fixes_dirty_;
  if (fixes_dirty_) d.fixes = fixes_;
  fixes_dirty_ = false;
  return d;
}

void SignatureTracker::MarkAllDirty() {
  for (const auto& [signature, record] : records_) dirty_.insert(signature);
  fixes_dirty_ = true;
}

}  // namespace faultline
