// AlertStates: the alert side's participant in the state store (state/state_store.h), component
// "alerts": the signature lifecycle records, the fix records, the outbox and the groups waiting
// out group_wait, written in the same checkpoint transaction as the stream offsets and counters
// of the same lines.
//
// What that gives (issue 9; docs/alerting.md section 7, behaviours 7 and 8):
// - `new` exactly once: a signature's record (announced) commits together with the offsets of the
//   lines that raised it, so a restart from the checkpoint either re-reads those lines with no
//   record (and raises `new` again, whose first message was never sent, see below) or finds the
//   record and raises nothing. Re-reading a file from offset 0 finds the record too. Fixes, the
//   regression a fix raised and mutes are in the records and fixes, so they hold the same way.
// - Durable before sent: an outbox entry goes out only once the checkpoint holding it committed
//   (Committed calls Alerting::OnCommitted), so `kill -9` at any moment loses no notification: a
//   restart sends what was queued, oldest first per target, at once.
// - The delivery contract is at-least-once with a stable id, not exactly-once: a kill -9 after a
//   checkpoint committed an entry and before the checkpoint that records its delivery (the 2xx
//   came back, or the request was in flight) sends the entry again after the restart, as the same
//   notification: the same webhook-id (Standard Webhooks), the same Alertmanager labels. A
//   receiver that deduplicates on the id sees it once. The window is short, since a delivery asks
//   for a checkpoint at once (Alerting's request), and SIGTERM closes it: delivery stops before
//   the agent's last checkpoint.
// - A failed write keeps what it would have written: the next checkpoint writes it again, with
//   whatever changed since (records and entries are written whole, by key). While the store
//   cannot be written at all, entries go out without it (Alerting::OnCheckpointFailed).
//
// Tables (owned here, nobody else touches them): alerts_signatures (signature, JSON record),
// alerts_fixes (id, JSON record), alerts_outbox (seq, target, state, attempts, times, last result,
// the notification's JSON as the first attempt rendered it), alerts_groups (key, target, due, JSON
// items). JSON rather than columns for records: they are read and written whole, never queried.
//
// Threading: Migrate, Load, Collect and Committed on the event loop (the store's contract); a
// Part's Write touches only its own copies. The Alerting must outlive this object. Rows that do
// not parse (written by a later schema we migrated from, or damaged) are skipped with a warning.
#ifndef FAULTLINE_ALERT_ALERT_STATES_H_
#define FAULTLINE_ALERT_ALERT_STATES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/alert/alerting.h"
#include "agent/alert/outbox.h"
#include "agent/alert/signature_record.h"
#include "agent/state/state_store.h"

namespace faultline {

class AlertStates : public StateParticipant {
 public:
  explicit AlertStates(Alerting& alerting) : alerting_(alerting) {}

  std::string_view component() const override { return "alerts"; }
  int schema_version() const override { return 1; }
  DbStatus Migrate(SqliteDb& db, int from) override;
  // Restores the tracker, the outbox and the groups of `alerting` (before Alerting::Start).
  DbStatus Load(SqliteDb& db) override;
  std::unique_ptr<CheckpointPart> Collect(bool full) override;

  // What Load found, for the agent's log line.
  std::size_t loaded_signatures() const { return loaded_signatures_; }
  std::size_t loaded_queued() const { return loaded_queued_; }

  // The JSON a record is stored as, and back (nullopt: not a record). Exposed for tests.
  static std::string SignatureToJson(const SignatureRecord& record);
  static std::optional<SignatureRecord> SignatureFromJson(std::string_view json);
  static std::string FixToJson(const FixRecord& fix);
  static std::optional<FixRecord> FixFromJson(std::string_view json);

 private:
  class Part;
  void OnPartCommitted(const Part& part);

  Alerting& alerting_;
  // Written by a checkpoint that has not committed yet, by key: written again until one does.
  // The value is the generation (Collect count) that last took it.
  uint64_t generation_ = 0;
  std::map<std::string, std::pair<uint64_t, SignatureRecord>> unconfirmed_records_;
  std::map<int64_t, std::pair<uint64_t, OutboxEntry>> unconfirmed_entries_;
  std::map<int64_t, uint64_t> unconfirmed_removed_;
  bool fixes_unconfirmed_ = false;
  uint64_t fixes_generation_ = 0;
  // The groups as the last committed checkpoint wrote them (serialised), to write only changes.
  std::string committed_groups_;
  std::size_t loaded_signatures_ = 0;
  std::size_t loaded_queued_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_ALERT_ALERT_STATES_H_
