// Alerting: the alert side of the agent (docs/design.md section 5): it takes the owned events of
// findings and the batches of every stream, keeps the signature lifecycle, and turns its events
// into notifications that it delivers, durably, to the configured receivers.
//
//   findings ──▶ SignatureTracker ──events──▶ items (redacted) ──route──▶ group_wait per
//   (receiver, run) ──▶ Outbox (durable, per target) ──▶ HttpDelivery thread ──results──▶ Outbox
//
// - Versions: every batch passes the VersionWatcher before it is matched, so a stream's package
//   versions (and its rules' resolved_by lines, which record a fix) are known for the failures in
//   the same batch; a failure uses the version its stream reported last before its line, else
//   the source's configured version (alerts.source_versions).
// - Context after the hit: batches are seen again after matching, and the items still waiting
//   in group_wait take the next lines of their stream (up to three).
// - Grouping: items for one receiver from one run (stream) within group_wait_ms go as one
//   notification; another occurrence of a signature already waiting only updates its counts, so
//   10,000 identical lines are one message that says 10,000. group_wait_ms 0 still groups what
//   one read brought (the flush runs after the batch).
// - Consequences: a new failure that some loaded symptom rule could name as its cause waits, even
//   past group_wait, until kConsequenceLines more lines of its stream were matched, the stream
//   ended or kConsequenceWaitMs passed, so that pip's summary or an abort printed a few lines
//   after the cause goes under it instead of in a message of its own.
// - Routing: a receiver takes an item by its kind and severity (Receiver::Takes); muted items go
//   nowhere (the tracker counts them); `resolved` only to receivers that opt in.
// - Delivery: see outbox.h and http_delivery.h. A receiver found gone (404 no_service, 410) is
//   disabled and every other receiver gets a receiver_disabled meta-alert.
// - Metrics, recorded through AlertMetrics (sink/alert_metrics.h):
// faultline_alert_events_total{kind},
//   faultline_notifications_total{receiver,kind,result}, faultline_notifications_coalesced_total,
//   faultline_notification_queue_depth, faultline_receiver_disabled,
//   faultline_last_successful_notification_timestamp_seconds (all {receiver}) and
//   faultline_signature_occurrences_total{signature,state,reason}. Signature ids are the only
//   free-form label values, and they are bounded (SignatureLabels).
//
// Persistence: the tracker and the outbox report what changed (tracker(), outbox()), and the
// groups in group_wait are read whole (PendingGroups); the state participant (alert_states.h)
// writes them with each checkpoint, in the transaction that holds the counts and offsets of the
// same lines, and calls OnCommitted, after which new outbox entries may be sent. Without a store
// (store_backed false: `alert test`, an agent that keeps no state) entries are sent at once, and a
// restart forgets the lifecycle and what was still queued.
//
// Time: Unix milliseconds from the wall clock given to Create (core/clock.h). Not thread-safe:
// everything runs on the io_context's one thread, the delivery thread posts its results there.
// Create fails, with file, line and key, only at load time (a bad versions file or receiver).
// Nothing throws after.
//
// The implementation is one file per concern: alerting.cc (setup, timers), alerting_intake.cc,
// alerting_consequences.cc, alerting_grouping.cc, alerting_dispatch.cc, alerting_admin.cc and
// alerting_json.cc.
#ifndef FAULTLINE_ALERT_ALERTING_H_
#define FAULTLINE_ALERT_ALERTING_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "agent/alert/http_delivery.h"
#include "agent/alert/outbox.h"
#include "agent/alert/receiver.h"
#include "agent/alert/signature_tracker.h"
#include "agent/alert/version_watcher.h"
#include "agent/config/config.h"
#include "agent/core/asio.h"
#include "agent/core/clock.h"
#include "agent/core/result.h"
#include "agent/framing/line_batch.h"
#include "agent/rules/finding_event.h"
#include "agent/rules/rule.h"
#include "agent/sink/alert_metrics.h"

namespace faultline {

class Alerting {
 public:
  // `rules` and `metrics` must outlive the object.
  static Result<std::unique_ptr<Alerting>> Create(asio::io_context& io, const Config& config,
                                                  const std::vector<Rule>& rules,
                                                  AlertMetrics& metrics, bool store_backed,
                                                  WallClock clock = SystemNow);
  ~Alerting();
  Alerting(const Alerting&) = delete;
  Alerting& operator=(const Alerting&) = delete;

  // A reload: the rules (which must outlive the object from now on) and the versions files
  // beside them. On errors (a bad versions file) the rules are still bound and the previous
  // version patterns kept; the errors are returned for the reload's warnings.
  ErrorList BindRules(const std::vector<Rule>& rules);

  // Applies the config's `fixes:` and starts the timers and the delivery thread.
  void Start();
  // Adds the config's `fixes:` not applied yet (at Start, and after a reload brought new ones).
  // A fleet-wide fix is not news on every host: receivers hear nothing of it, except
  // Alertmanager, which is told that the alerts it covers are resolved.
  void ApplyConfigFixes();
  // Stops timers and delivery; what is queued stays in the outbox for the next start.
  void Stop();

  // One finding of a stream (after metrics counted it), or the event of Discovery's alert hook
  // (a template of unrecognised errors reached discover.alert_after lines): signature
  // `unrecognised.<template id>`, no rule, through the same lifecycle (new once, quiet while it
  // repeats), with a title and a fix command of its own.
  static constexpr std::string_view kUnrecognisedPrefix = "unrecognised.";
  void OnFinding(const FindingEvent& event);
  // Every batch of a stream, before (`matched` false) and after it was matched.
  void OnBatch(uint64_t stream_id, const std::string& source_id, const LineBatch& batch,
               uint64_t first_line, bool matched);
  // A stream (a run of its source, the job) ended by itself: a run with lines and no failure is
  // a successful run of its job (SignatureTracker::OnCleanRun).
  void OnStreamEnd(uint64_t stream_id);
  // The agent is stopping: streams it closes now are not runs that ended.
  void StopRuns() { runs_tracked_ = false; }

  // The admin operations (CLI and API). `selector` is a signature or a rule id.
  struct FixRequest {
    std::string selector;
    std::string version;  // fixed in; empty: fixed in the next version / now
    std::string note;
    std::string by;
    FixOrigin origin = FixOrigin::kApi;
  };
  Result<FixRecord> Fix(const FixRequest& request);
  std::size_t Unfix(const std::string& selector);
  // Mutes for `duration_ms` (at most 30 days); false when `selector` names no known signature.
  bool Mute(const std::string& selector, int64_t duration_ms, const std::string& reason,
            const std::string& by);
  std::size_t Unmute(const std::string& selector);

  // A notification marked test through routing, rendering, signing, rate limiting and retry, to
  // every target of `receiver`, about `signature` (a rule id or a signature; empty: a sample).
  // Writes no lifecycle state. `done` runs once per target with the final result.
  using TestDone = std::function<void(const std::string& target, const RetryDecision& decision,
                                      const DeliveryOutcome& last)>;
  Result<std::vector<std::string>> Test(const std::string& receiver, const std::string& signature,
                                        TestDone done);

  // JSON for GET /api/v1/signatures and `faultline signatures`.
  std::string SignaturesJson() const;
  // The lifecycle state of `signature` ("flapping", "regressed", ...); empty when unknown.
  std::string StateName(std::string_view signature) const;
  // JSON of every target's delivery state.
  std::string ReceiversJson() const;

  // Persistence (alert_states.h).
  SignatureTracker& tracker() { return tracker_; }
  Outbox& outbox() { return *outbox_; }
  // Items waiting out group_wait: their lifecycle change is in the tracker already, so they are
  // persisted with it (a crash in group_wait must not lose the `new` it holds). `items` holds the
  // group's items and `more`; id, receiver and created_ms are not used.
  struct PendingGroup {
    std::string key;  // target + '\n' + run
    std::string target;
    int64_t due_ms = 0;
    Notification items;
  };
  std::vector<PendingGroup> PendingGroups() const;
  // At start, before Start: the groups of the last checkpoint (their streams are gone, so they
  // take no more context lines); due ones go out at Start.
  void RestoreGroups(std::vector<PendingGroup> groups);
  // The checkpoint holding these outbox entries committed: they may go out.
  void OnCommitted(const std::vector<int64_t>& outbox_seqs);
  // A checkpoint failed (the store is not writable: full disk, read-only state.dir). Entries that
  // waited for it go out now rather than wait for a store that may not come back: a crash before
  // a later checkpoint may then repeat them (at-least-once), but none is held back.
  void OnCheckpointFailed();
  // Something waits for a checkpoint before it can be sent (to ask the store for one soon).
  bool WaitsForCheckpoint() const { return waiting_for_store_; }
  // Called when the outbox has entries that are not durable yet.
  void SetCheckpointRequest(std::function<void()> request) {
    request_checkpoint_ = std::move(request);
  }

 private:
  Alerting(asio::io_context& io, const Config& config, const std::vector<Rule>& rules,
           AlertMetrics& metrics, bool store_backed, WallClock clock,
           std::vector<Receiver> receivers, std::unique_ptr<VersionWatcher> watcher);

  struct StreamInfo {
    std::string source_id;
    // Per package: (line, version), oldest first, a few kept.
    std::map<std::string, std::deque<std::pair<uint64_t, std::string>>> versions;
  };
  // A failure of a run that may explain the symptoms after it (see OnFinding).
  struct Cause {
    std::string rule_id;  // looked up again at use: a reload may have replaced the rule
    std::string signature;
    Severity severity = Severity::kError;
    bool explained = false;  // itself a consequence: explains nothing more
  };
  // A stream as a run of its job: whether it had lines and a failure.
  struct Run {
    std::string job;
    bool lines = false;
    bool failed = false;
    uint64_t last_line = 0;  // the last line matched so far
    std::deque<Cause> causes;  // its first failures, oldest first, at most kMaxCausesPerRun
  };
  struct Waiting {
    uint64_t stream_id = 0;
    uint64_t hit_line = 0;
    // Held for its consequences (see "Consequences" above) until its stream's last matched line
    // reaches hold_through_line or the clock hold_until_ms; 0: not held.
    uint64_t hold_through_line = 0;
    int64_t hold_until_ms = 0;
  };
  // Items for one target from one run, waiting out group_wait.
  struct Group {
    std::string target;
    int64_t due_ms = 0;
    std::vector<AlertItem> items;
    std::vector<Waiting> where;  // per item
    uint64_t more = 0;           // items beyond kMaxItemsPerNotification, counted only
  };

  // The clock's now in Unix milliseconds, as the tracker and the outbox keep times.
  int64_t NowMs() const { return UnixMs(clock_()); }
  std::string VersionAt(uint64_t stream_id, const std::string& source_id,
                        const std::string& package, uint64_t line) const;
  void Raise(const std::vector<LifecycleEvent>& events, const FindingEvent* event, int64_t now);
  AlertItem MakeItem(const LifecycleEvent& e, const FindingEvent* event, int64_t now) const;
  void Route(const AlertItem& item, const std::string& group_key, uint64_t stream_id,
             uint64_t hit_line, bool group, bool alertmanager_only = false);
  void UpdateWaitingCounts(const std::string& signature);
  // The signature of the run's failure that explains a finding of `symptom` at `severity`:
  // the earliest root cause that can, else the earliest symptom nothing explained (as `scan`
  // groups a report); nullopt when none does or `symptom` is not a symptom rule.
  std::optional<std::string> ExplainedBy(const Run& run, const Rule& symptom,
                                         Severity severity) const;
  // Names `consequence` on the waiting items of `cause` from `run_key`.
  void AddConsequence(const std::string& run_key, const std::string& cause,
                      const std::string& consequence);
  // A failure of `rule` (signature `signature`) just routed from `run_key`: the waiting items of
  // the same run's symptoms it explains leave their groups and are named on its item instead.
  void AdoptConsequences(const std::string& run_key, Run& run, const Rule& rule,
                         const std::string& signature, Severity severity);
  // Whether a loaded symptom rule can name `cause` as its cause.
  bool MayHaveConsequences(const Rule& cause) const;
  // When `g` may go: its group_wait, or later while an item is held for its consequences.
  int64_t DueOf(const Group& g, int64_t now) const;
  void ScheduleFlush();
  void FlushDue(bool all);
  void Enqueue(const std::string& target, Notification n);
  void Dispatch();
  void ArmDispatchTimer();
  void OnDelivered(int64_t seq, DeliveryOutcome outcome);
  void ReportDisabled(const std::string& target, const std::string& reason);
  void Tick();
  std::string NewId(std::string_view prefix) const;
  const Rule* RuleOf(const std::string& rule_id) const;
  void CountOccurrence(const FindingEvent& event, FixJudgement judgement, int64_t now);
  void UpdateGauges();

  asio::io_context& io_;
  const Config& config_;
  const WallClock clock_;
  const bool store_backed_;
  const std::string host_;
  std::map<std::string, const Rule*, std::less<>> rules_;
  std::vector<Receiver> receivers_;  // one per target
  std::unique_ptr<VersionWatcher> watcher_;
  SignatureTracker tracker_;
  std::unique_ptr<Outbox> outbox_;
  std::unique_ptr<HttpDelivery> delivery_;
  // Held by posted delivery results: they do nothing once this object is gone.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

  std::map<uint64_t, StreamInfo> streams_;
  std::map<uint64_t, Run> runs_;  // by stream id, the oldest forgotten beyond kMaxStreams
  bool runs_tracked_ = true;
  std::map<std::string, Group> groups_;          // by target + '\n' + run
  std::map<std::string, TestDone> tests_;        // by notification id
  std::map<int64_t, std::string> test_entries_;  // outbox seq -> notification id
  asio::steady_timer group_timer_;
  asio::steady_timer dispatch_timer_;
  asio::steady_timer tick_timer_;
  bool flush_posted_ = false;
  bool running_ = false;
  bool waiting_for_store_ = false;
  std::function<void()> request_checkpoint_;
  mutable uint64_t id_counter_ = 0;
  std::mt19937_64 random_;

  AlertMetrics& metrics_;
};

}  // namespace faultline

#endif  // FAULTLINE_ALERT_ALERTING_H_
