// Outbox: every notification from the moment it is made until it is delivered or given up on,
// per target (a receiver, or one URL of an Alertmanager receiver), with the delivery state of
// each (docs/alerting.md section 7, behaviours 8-11).
//
// - Durable first: an entry is sent only once it is durable (the state store committed the
//   checkpoint holding it; MarkDurable). A crash before that loses the entry together with the
//   lifecycle change that made it, so the lines are read again and it is made again; a crash after
//   it finds the entry in the store and sends it. Without a store, entries are durable at once.
// - Order: a target sends its entries one at a time, oldest first; a target retrying its head
//   waits, the other targets do not.
// - Rate limit: a token bucket per target. When the bucket ran dry, the entries that waited for
//   a token (never attempted) go out as one digest ("47 more new signatures") as soon as the next
//   token comes; the digest is itself a new entry, durable before it is sent, and the entries it
//   replaces are marked coalesced. Nothing is dropped.
// - Results (OnResult) follow RetryPolicy: delivered; retried after a backoff; the whole target
//   paused (429); dead-lettered with the reason; or the target disabled (404 no_service, 410),
//   which the caller reports as a meta-alert.
//
// Time is passed in (Unix milliseconds). Not thread-safe: the agent's event loop. Never throws.
#ifndef FAULTLINE_ALERT_OUTBOX_H_
#define FAULTLINE_ALERT_OUTBOX_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/alert/notification.h"
#include "agent/alert/retry_policy.h"

namespace faultline {

struct OutboxEntry {
  enum class State { kQueued, kDelivered, kDeadLettered, kCoalesced };
  int64_t seq = 0;     // order of making, unique
  std::string target;  // the target it goes to
  Notification notification;
  State state = State::kQueued;
  int attempts = 0;
  int64_t created_ms = 0;
  int64_t first_attempt_ms = 0;
  int64_t next_attempt_ms = 0;  // not before
  int64_t done_ms = 0;
  std::string last_result;  // "HTTP 200", a curl error, the dead-letter reason
  bool durable = false;
  bool in_flight = false;
  bool ephemeral = false;  // never persisted (a test message)
};

std::string_view OutboxStateName(OutboxEntry::State state);
std::optional<OutboxEntry::State> ParseOutboxState(std::string_view name);

struct OutboxTarget {
  std::string name;
  double rate_per_second = 1;
  double burst = 3;
  RetryPolicy policy;
};

class Outbox {
 public:
  // Digests list this many items; the rest are counted (Notification::more).
  static constexpr std::size_t kMaxDigestItems = 20;

  Outbox(std::vector<OutboxTarget> targets, bool store_backed);

  // Queues `notification` for `target`; returns its seq. Unknown targets are ignored (0). An
  // ephemeral entry is never persisted and is sent without waiting for the store.
  int64_t Add(const std::string& target, Notification notification, int64_t now_ms,
              bool ephemeral = false);
  // Whether a queued entry waits for the store to commit it.
  bool WaitsForStore() const;

  struct Send {
    int64_t seq;
    std::string target;
    int attempt;  // 1 for the first
  };
  // What to send now: at most one entry per target (durable, due, target neither paused nor
  // disabled nor busy, a token available), marked in flight. May coalesce (see above).
  std::vector<Send> TakeDue(int64_t now_ms);
  // When TakeDue may next have something (a retry, a token, a pause ending), if ever.
  std::optional<int64_t> NextWakeup(int64_t now_ms) const;

  // The result of attempt `seq`. Returns the decision taken.
  RetryDecision OnResult(int64_t seq, const DeliveryOutcome& outcome, int64_t now_ms,
                         double uniform01);

  const OutboxEntry* Find(int64_t seq) const;
  // Entries the store has committed.
  void MarkDurable(const std::vector<int64_t>& seqs);
  // Every entry, when the store cannot take them (Alerting::OnCheckpointFailed).
  void MarkAllDurable();

  struct TargetStatus {
    bool disabled = false;
    std::string disabled_reason;
    int64_t paused_until_ms = 0;
    int64_t last_success_ms = 0;
    uint64_t queued = 0;
    uint64_t coalesced = 0;  // entries coalesced into digests, ever
  };
  const std::map<std::string, TargetStatus, std::less<>>& targets() const { return status_; }
  // A disabled target comes back with a new config (reload, restart).
  void SetDisabled(const std::string& target, bool disabled, std::string reason);

  // Persistence: entries that changed since the last call (whole), and entries to forget (seq).
  struct Dirty {
    std::vector<OutboxEntry> changed;
    std::vector<int64_t> removed;
  };
  Dirty TakeDirty();
  // Entries read back at start; queued ones are durable by definition and due when their saved
  // next attempt comes (a backoff or a 429's pause outlives the process, at most the policy's
  // cap or the Retry-After), in-flight ones are queued again (their attempt may or may not have
  // reached the receiver: at-least-once, and the same webhook-id lets the receiver tell).
  void Restore(std::vector<OutboxEntry> entries);
  void MarkAllDirty();

 private:
  struct Bucket {
    double tokens = 0;
    int64_t refilled_ms = 0;
    bool ran_dry = false;
  };
  void Refill(const OutboxTarget& t, Bucket& b, int64_t now_ms) const;
  OutboxEntry* Head(const std::string& target);
  // Replaces the waiting entries of `target` by one digest; returns it.
  OutboxEntry* Coalesce(const std::string& target, int64_t now_ms);
  void Finish(OutboxEntry& e, OutboxEntry::State state, int64_t now_ms);

  const bool store_backed_;
  std::map<std::string, OutboxTarget, std::less<>> config_;
  std::map<std::string, TargetStatus, std::less<>> status_;
  std::map<std::string, Bucket, std::less<>> buckets_;
  std::map<int64_t, OutboxEntry> entries_;                          // every live entry, by seq
  std::map<std::string, std::deque<int64_t>, std::less<>> queues_;  // queued seqs per target
  int64_t next_seq_ = 1;
  std::set<int64_t> dirty_;
  std::vector<int64_t> removed_;
};

}  // namespace faultline

#endif  // FAULTLINE_ALERT_OUTBOX_H_
