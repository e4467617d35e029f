#include "agent/state/counter_states.h"

#include <nlohmann/json.hpp>

namespace faultline {
namespace {

std::string LabelsKey(const std::map<std::string, std::string>& labels) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [name, value] : labels) object[name] = value;
  // Label values are sanitised UTF-8 already; `replace` keeps a stray byte from failing a dump.
  return object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

class CounterStates::Part : public CheckpointPart {
 public:
  Part(CounterStates* owner, bool full) : owner_(owner), full_(full) {}

  DbStatus Write(SqliteDb& db) override {
    if (full_) {
      if (DbStatus s = db.Exec("DELETE FROM counters_values"); !s.ok()) return s;
    }
    SqliteStatement upsert;
    SqliteStatement remove;
    if (DbStatus s =
            db.Prepare("INSERT INTO counters_values (family, labels, value) VALUES (?1, ?2, ?3) "
                       "ON CONFLICT(family, labels) DO UPDATE SET value = excluded.value",
                       &upsert);
        !s.ok()) {
      return s;
    }
    if (DbStatus s =
            db.Prepare("DELETE FROM counters_values WHERE family = ?1 AND labels = ?2", &remove);
        !s.ok()) {
      return s;
    }
    for (const auto& [key, value] : changed) {
      upsert.Bind(1, key.first);
      upsert.Bind(2, key.second);
      upsert.Bind(3, value);
      if (DbStatus s = upsert.Run(); !s.ok()) return s;
    }
    for (const Key& key : removed) {
      remove.Bind(1, key.first);
      remove.Bind(2, key.second);
      if (DbStatus s = remove.Run(); !s.ok()) return s;
    }
    return DbStatus();
  }

  void Committed() override {
    for (const auto& [key, value] : changed) owner_->committed_[key] = value;
    for (const Key& key : removed) owner_->committed_.erase(key);
  }

  std::vector<std::pair<Key, double>> changed;
  std::vector<Key> removed;

 private:
  CounterStates* const owner_;
  const bool full_;
};

DbStatus CounterStates::Migrate(SqliteDb& db, int from) {
  if (from < 1) {
    return db.Exec(
        "CREATE TABLE counters_values (family TEXT NOT NULL, labels TEXT NOT NULL, "
        "value REAL NOT NULL, PRIMARY KEY (family, labels))");
  }
  return DbStatus();
}

DbStatus CounterStates::Load(SqliteDb& db) {
  SqliteStatement read;
  if (DbStatus s = db.Prepare("SELECT family, labels, value FROM counters_values", &read);
      !s.ok()) {
    return s;
  }
  saved_.clear();
  committed_.clear();
  while (read.Step()) {
    CounterValue value;
    value.family = read.ColumnText(0);
    const std::string labels = read.ColumnText(1);
    value.value = read.ColumnDouble(2);
    const nlohmann::json parsed =
        nlohmann::json::parse(labels, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object()) continue;  // not ours to guess at; the row is replaced or deleted
    for (const auto& [name, v] : parsed.items()) {
      if (v.is_string()) value.labels[name] = v.get<std::string>();
    }
    committed_[{value.family, labels}] = value.value;
    saved_.push_back(std::move(value));
  }
  return read.status();
}

std::unique_ptr<CheckpointPart> CounterStates::Collect(bool full) {
  auto part = std::make_unique<Part>(this, full);
  std::map<Key, double> now;
  for (CounterValue& value : snapshot_()) {
    now.emplace(Key{std::move(value.family), LabelsKey(value.labels)}, value.value);
  }
  for (const auto& [key, value] : now) {
    auto it = committed_.find(key);
    if (full || it == committed_.end() || it->second != value)
      part->changed.emplace_back(key, value);
  }
  if (!full) {
    for (const auto& [key, value] : committed_) {
      if (!now.contains(key)) part->removed.push_back(key);
    }
  }
  if (full) committed_.clear();
  if (part->changed.empty() && part->removed.empty() && !full) return nullptr;
  return part;
}

}  // namespace faultline
