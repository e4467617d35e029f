// SignatureTracker: the lifecycle of every signature (docs/design.md section 5;
// docs/alerting.md section 7, behaviours 3-7, 13-15). It turns occurrences into the events
// people are told about:
//
//   new         the first failure of a signature, ever: once, across restarts and re-reads, as
//               long as the records are persisted (the state store) with the offsets that cover
//               the lines.
//   regression  an occurrence newer than a fix that covers the signature: by version when the
//               stream reports the rule's package version (fixed_in: at or above; after_version:
//               above; an unparseable version is never newer), else by the line's own timestamp,
//               else by arrival. Once per fix and signature; later occurrences are `ongoing`.
//               Occurrences not newer are counted as pre_fix (by version, by time) or
//               version_unknown, and raise nothing.
//   recurrence  a failure after quiet_for without one, when no fix covers it; realerts back off
//               exponentially (1 h doubling up to 24 h) while it keeps coming back.
//   ongoing     at most one per repeat_interval while it repeats, with the count since the last
//               message; never one per line.
//   resolved    a fix was recorded for an announced signature, it was quiet for quiet_for
//               (Tick), or the job it last failed in had resolve_after_runs successful runs in a
//               row since (OnCleanRun); once until it fails again. Receivers opt in; a receiver
//               matches it to the firing message by the signature (webhook `alert_id`,
//               Alertmanager's labels). A failure after a resolution by runs fires again, as a
//               `recurrence`, however soon it comes: the receiver closed the alert.
//
// A run is one stream of a source (agent/daemon/agent.cc): a TCP connection from `make | nc`, a
// file until it is truncated for the next build, rotated away or deleted, a writer of a fifo,
// stdin. The job is the source. A run is successful when it ended with lines in it and not one
// failure (of any signature: a build that broke elsewhere says nothing about this one). A file
// that is never truncated, rotated or deleted stays one run: quiet_for resolves its signatures.
//
// Flapping: flap_cycles resolutions (each the end of a fire/resolve cycle) within flap_window
// mark the signature flapping (state `flapping`). While it is, at most one message about it
// goes out per flap_notify_interval; the latest event held back meanwhile goes out when the
// interval is up, or when the flapping ends: a whole flap_window without a resolution.
//   mute_ended  at a mute's end, what happened while it held (a regression during the mute is
//               raised then, once, as `regression`).
// Occurrences below min_severity (warnings, by default) are counted but raise nothing: a
// signature's `new` is its first failure, not its first warning.
//
// Mutes stop notifications, never counting: events raised while muted carry muted=true and the
// mute accumulates what it hid.
//
// Time is passed in (Unix milliseconds) so tests and replays decide it. Records are kept for every
// signature (bounded by SignatureLabels' bounds on labels); what changed since the last
// checkpoint is reported by TakeDirty for the state store.
//
// Not thread-safe: the agent's event loop. Never throws.
#ifndef FAULTLINE_ALERT_SIGNATURE_TRACKER_H_
#define FAULTLINE_ALERT_SIGNATURE_TRACKER_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/alert/notification.h"
#include "agent/alert/signature_record.h"
#include "agent/rules/finding_event.h"
#include "agent/rules/rule.h"

namespace faultline {

struct LifecycleOptions {
  int64_t quiet_for_ms = 24LL * 3600 * 1000;
  int64_t repeat_interval_ms = 4LL * 3600 * 1000;
  int64_t recurrence_backoff_ms = 3600LL * 1000;
  int64_t recurrence_backoff_cap_ms = 24LL * 3600 * 1000;
  Severity min_severity = Severity::kError;
  int64_t resolve_after_runs = 3;  // 0: never by runs
  std::size_t flap_cycles = 3;
  int64_t flap_window_ms = 3600LL * 1000;
  int64_t flap_notify_interval_ms = 3600LL * 1000;
};

// One occurrence as the tracker judges it.
struct Occurrence {
  const FindingEvent* event = nullptr;
  std::string package;  // the rule's `version_of`, empty when it names none
  std::string version;  // the package's version in the stream at the line; empty: unknown
  std::optional<int64_t> line_time_ms;  // the line's own timestamp, when it has one
  int64_t arrival_ms = 0;
};

struct LifecycleEvent {
  AlertKind kind = AlertKind::kNew;
  std::string signature;
  std::string version;           // the occurrence's
  std::string regression_basis;  // version | timestamp | arrival
  std::optional<FixRecord> fix;  // regression, resolved: the fix involved
  uint64_t count_since_last = 0;
  std::string detail;  // mute_ended: the summary; resolved: why; flapping: a note
  // Not to be sent: a mute holds it, or flapping does (counted as raised all the same).
  bool muted = false;
};

// How one occurrence was judged against a fix, for the occurrence counters.
enum class FixJudgement { kNoFix, kRegression, kPreFixVersion, kPreFixTime, kVersionUnknown };

class SignatureTracker {
 public:
  explicit SignatureTracker(LifecycleOptions options = {});

  // Records one occurrence and appends the events it raises. Returns how it stood to a fix.
  FixJudgement Observe(const Occurrence& occurrence, std::vector<LifecycleEvent>* out);

  // Adds a fix (its id is assigned; fixed_at_ms 0 means now). Without a version, it pins to the
  // highest version seen so far of the signatures it covers, when any were seen. Appends the
  // `resolved` events it causes. Returns the stored fix.
  const FixRecord& AddFix(FixRecord fix, int64_t now_ms, std::vector<LifecycleEvent>* out);
  // Removes every fix whose selector is `selector`; returns how many.
  std::size_t RemoveFixes(std::string_view selector);
  // A config `fixes:` entry: added once (same selector, version and note already present: kept).
  // When added, the `resolved` events of the signatures it covers go to `out`, as for AddFix.
  void EnsureConfigFix(const FixRecord& fix, int64_t now_ms, std::vector<LifecycleEvent>* out);

  // Mutes the signatures `selector` names (a signature or a rule id); false when none is known.
  bool Mute(std::string_view selector, int64_t until_ms, std::string reason, std::string by,
            int64_t now_ms);
  // Ends mutes now; appends their summaries. Returns how many ended.
  std::size_t Unmute(std::string_view selector, int64_t now_ms, std::vector<LifecycleEvent>* out);

  // A successful run of `job` ended: signatures whose last failure was in that job count it, and
  // those at resolve_after_runs are resolved.
  void OnCleanRun(std::string_view job, int64_t now_ms, std::vector<LifecycleEvent>* out);

  // Periodic: ends expired mutes, raises `resolved` for signatures quiet for quiet_for, sends
  // what flapping held back once its interval is up and ends flapping that settled.
  void Tick(int64_t now_ms, std::vector<LifecycleEvent>* out);

  // A notification about `signature` went to `receiver` (delivered).
  void OnDelivered(const std::string& signature, const std::string& receiver, int64_t now_ms);

  const SignatureRecord* Find(std::string_view signature) const;
  const std::map<std::string, SignatureRecord, std::less<>>& records() const { return records_; }
  const std::vector<FixRecord>& fixes() const { return fixes_; }
  SignatureState StateOf(const SignatureRecord& record, int64_t now_ms) const;
  // The newest fix covering `record` that has not yet raised its regression for it.
  const FixRecord* ActiveFix(const SignatureRecord& record) const;
  // The newest fix covering `record`, regressed or not.
  const FixRecord* LatestFix(const SignatureRecord& record) const;
  const LifecycleOptions& options() const { return options_; }

  // Persistence: the state at the last checkpoint, and what changed since the last TakeDirty.
  void Restore(std::vector<SignatureRecord> records, std::vector<FixRecord> fixes);
  struct Dirty {
    std::vector<SignatureRecord> records;  // changed records, whole
    bool fixes_changed = false;
    std::vector<FixRecord> fixes;  // every fix, when any changed
  };
  Dirty TakeDirty();
  // Marks everything dirty: the next TakeDirty returns the whole state.
  void MarkAllDirty();

 private:
  FixJudgement Judge(const FixRecord& fix, const Occurrence& occurrence, std::string* basis) const;
  FixRecord* MutableActiveFix(const SignatureRecord& record);
  void Notified(SignatureRecord& record, int64_t now_ms);
  void EndMute(SignatureRecord& record, int64_t now_ms, std::vector<LifecycleEvent>* out);
  // Appends `e` about `record`, unless flapping holds it back (then it goes out muted).
  void Emit(SignatureRecord& record, LifecycleEvent e, int64_t now_ms,
            std::vector<LifecycleEvent>* out);
  // Marks `record` resolved, counts the cycle for flapping and emits `e` (kind resolved).
  void Resolve(SignatureRecord& record, LifecycleEvent e, int64_t now_ms,
               std::vector<LifecycleEvent>* out);
  // Flapping that is due: the held event when the interval is up, the end after a calm window.
  void TickFlapping(SignatureRecord& record, int64_t now_ms, std::vector<LifecycleEvent>* out);
  void Touch(const SignatureRecord& record) { dirty_.insert(record.signature); }

  const LifecycleOptions options_;
  std::map<std::string, SignatureRecord, std::less<>> records_;
  std::vector<FixRecord> fixes_;  // oldest first
  int64_t next_fix_id_ = 1;
  std::set<std::string> dirty_;
  bool fixes_dirty_ = false;
};

}  // namespace faultline

#endif  // FAULTLINE_ALERT_SIGNATURE_TRACKER_H_
