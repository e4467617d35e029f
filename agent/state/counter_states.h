// CounterStates: the state store's participant for counter values (component "counters"), so
// that Prometheus sees counters that continue across restarts instead of starting at 0.
//
// A counter is a metric family name plus its labels, and a value. Every checkpoint asks
// `snapshot` for the values of every persisted counter (on the event loop, at the same instant
// the stream positions are taken) and writes those that changed since the last committed
// checkpoint; a counter that disappeared (a rule removed) is deleted. At Open the saved values are
// loaded into saved(), for the agent to restore before it reads a line.
//
// Table counters_values(family TEXT, labels TEXT, value REAL): `labels` is the label set as a JSON
// object with sorted keys, so one series has one key and the table reads well in sqlite3.
// Values are doubles, exact for counts below 2^53.
//
// Threading: Load, Collect and Committed on the event loop; the part it returns is owned and may
// be written on the checkpoint thread. Never throws.
#ifndef FAULTLINE_STATE_COUNTER_STATES_H_
#define FAULTLINE_STATE_COUNTER_STATES_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/core/counter_value.h"
#include "agent/state/state_store.h"

namespace faultline {

class CounterStates : public StateParticipant {
 public:
  using Snapshot = std::function<std::vector<CounterValue>()>;
  explicit CounterStates(Snapshot snapshot) : snapshot_(std::move(snapshot)) {}

  // The values loaded at Open; empty before it or when nothing was saved.
  const std::vector<CounterValue>& saved() const { return saved_; }

  std::string_view component() const override { return "counters"; }
  int schema_version() const override { return 1; }
  DbStatus Migrate(SqliteDb& db, int from) override;
  DbStatus Load(SqliteDb& db) override;
  std::unique_ptr<CheckpointPart> Collect(bool full) override;

 private:
  using Key = std::pair<std::string, std::string>;  // family, labels as JSON
  class Part;

  const Snapshot snapshot_;
  std::vector<CounterValue> saved_;
  std::map<Key, double> committed_;  // what the file holds, as far as this process knows
};

}  // namespace faultline

#endif  // FAULTLINE_STATE_COUNTER_STATES_H_
