#include "agent/alert/alert_states.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <utility>

namespace faultline {
namespace {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json PairsToJson(const std::vector<std::pair<std::string, std::string>>& pairs) {
  json out = json::array();
  for (const auto& [name, value] : pairs) out.push_back(json::array({name, value}));
  return out;
}

std::vector<std::pair<std::string, std::string>> PairsFromJson(const json& j) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& pair : j)
    out.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
  return out;
}

json MuteToJson(const MuteRecord& m) {
  return json{{"set_at_ms", m.set_at_ms},
              {"until_ms", m.until_ms},
              {"reason", m.reason},
              {"by", m.by},
              {"occurrences", m.occurrences},
              {"runs", m.runs},
              {"runs_overflow", m.runs_overflow},
              {"regressed", m.regressed}};
}

MuteRecord MuteFromJson(const json& j) {
  MuteRecord m;
  m.set_at_ms = j.at("set_at_ms").get<int64_t>();
  m.until_ms = j.at("until_ms").get<int64_t>();
  m.reason = j.at("reason").get<std::string>();
  m.by = j.at("by").get<std::string>();
  m.occurrences = j.at("occurrences").get<uint64_t>();
  m.runs = j.at("runs").get<std::set<std::string>>();
  m.runs_overflow = j.at("runs_overflow").get<uint64_t>();
  m.regressed = j.at("regressed").get<bool>();
  return m;
}

std::string GroupsToJson(const std::vector<Alerting::PendingGroup>& groups) {
  json out = json::array();
  for (const Alerting::PendingGroup& g : groups) {
    out.push_back(json{{"key", g.key},
                       {"target", g.target},
                       {"due_ms", g.due_ms},
                       {"items", json::parse(NotificationToJson(g.items))}});
  }
  return Dump(out);
}

DbStatus ExecAll(SqliteDb& db, std::initializer_list<const char*> statements) {
  for (const char* sql : statements) {
    if (DbStatus s = db.Exec(sql); !s.ok()) return s;
  }
  return DbStatus();
}

}  // namespace

std::string AlertStates::SignatureToJson(const SignatureRecord& r) {
  json j{{"signature", r.signature},
         {"rule_id", r.rule_id},
         {"labels", PairsToJson(r.labels)},
         {"first_seen_ms", r.first_seen_ms},
         {"last_seen_ms", r.last_seen_ms},
         {"count", r.count},
         {"last_failure_ms", r.last_failure_ms},
         {"announced", r.announced},
         {"resolved", r.resolved},
         {"versions_seen", r.versions_seen},
         {"pre_fix_version", r.pre_fix_version},
         {"pre_fix_time", r.pre_fix_time},
         {"version_unknown", r.version_unknown},
         {"last_notified_ms", r.last_notified_ms},
         {"since_notified", r.since_notified},
         {"notified_by_receiver", r.notified_by_receiver},
         {"failed_in_job", r.failed_in_job},
         {"clean_runs", r.clean_runs},
         {"resolved_at_ms", r.resolved_at_ms},
         {"flapping", r.flapping},
         {"flap_notified_ms", r.flap_notified_ms},
         {"last_recurrence_ms", r.last_recurrence_ms},
         {"recurrence_backoff_ms", r.recurrence_backoff_ms},
         {"last_source", r.last_source},
         {"last_file", r.last_file},
         {"last_line", r.last_line},
         {"last_hit", r.last_hit}};
  if (r.mute) j["mute"] = MuteToJson(*r.mute);
  if (r.flap_held) j["flap_held"] = AlertKindName(*r.flap_held);
  return Dump(j);
}

std::optional<SignatureRecord> AlertStates::SignatureFromJson(std::string_view text) {
  try {
    const json j = json::parse(text);
    SignatureRecord r;
    r.signature = j.at("signature").get<std::string>();
    r.rule_id = j.at("rule_id").get<std::string>();
    r.labels = PairsFromJson(j.at("labels"));
    r.first_seen_ms = j.at("first_seen_ms").get<int64_t>();
    r.last_seen_ms = j.at("last_seen_ms").get<int64_t>();
    r.count = j.at("count").get<uint64_t>();
    r.last_failure_ms = j.at("last_failure_ms").get<int64_t>();
    r.announced = j.at("announced").get<bool>();
    r.resolved = j.at("resolved").get<bool>();
    r.versions_seen = j.at("versions_seen").get<std::vector<std::string>>();
    r.pre_fix_version = j.at("pre_fix_version").get<uint64_t>();
    r.pre_fix_time = j.at("pre_fix_time").get<uint64_t>();
    r.version_unknown = j.at("version_unknown").get<uint64_t>();
    r.last_notified_ms = j.at("last_notified_ms").get<int64_t>();
    r.since_notified = j.at("since_notified").get<uint64_t>();
    r.notified_by_receiver = j.at("notified_by_receiver").get<std::map<std::string, int64_t>>();
    // Resolution by runs and flapping came later: a record written before has neither.
    r.failed_in_job = j.value("failed_in_job", std::string());
    r.clean_runs = j.value("clean_runs", uint64_t{0});
    r.resolved_at_ms = j.value("resolved_at_ms", std::vector<int64_t>());
    r.flapping = j.value("flapping", false);
    r.flap_notified_ms = j.value("flap_notified_ms", int64_t{0});
    if (j.contains("flap_held")) r.flap_held = ParseAlertKind(j.at("flap_held").get<std::string>());
    r.last_recurrence_ms = j.at("last_recurrence_ms").get<int64_t>();
    r.recurrence_backoff_ms = j.at("recurrence_backoff_ms").get<int64_t>();
    r.last_source = j.at("last_source").get<std::string>();
    r.last_file = j.at("last_file").get<std::string>();
    r.last_line = j.at("last_line").get<uint64_t>();
    r.last_hit = j.at("last_hit").get<std::string>();
    if (j.contains("mute")) r.mute = MuteFromJson(j.at("mute"));
    return r;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::string AlertStates::FixToJson(const FixRecord& f) {
  return Dump(json{{"id", f.id},
                   {"selector", f.selector},
                   {"fixed_in", f.fixed_in},
                   {"after_version", f.after_version},
                   {"fixed_at_ms", f.fixed_at_ms},
                   {"by", f.by},
                   {"note", f.note},
                   {"origin", FixOriginName(f.origin)},
                   {"regressed_signatures", f.regressed_signatures}});
}

std::optional<FixRecord> AlertStates::FixFromJson(std::string_view text) {
  try {
    const json j = json::parse(text);
    FixRecord f;
    f.id = j.at("id").get<int64_t>();
    f.selector = j.at("selector").get<std::string>();
    f.fixed_in = j.at("fixed_in").get<std::string>();
    f.after_version = j.at("after_version").get<std::string>();
    f.fixed_at_ms = j.at("fixed_at_ms").get<int64_t>();
    f.by = j.at("by").get<std::string>();
    f.note = j.at("note").get<std::string>();
    const std::optional<FixOrigin> origin = ParseFixOrigin(j.at("origin").get<std::string>());
    if (!origin) return std::nullopt;
    f.origin = *origin;
    f.regressed_signatures = j.at("regressed_signatures").get<std::set<std::string>>();
    return f;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

// One checkpoint's alert rows: copies, so Write may run on another thread.
class AlertStates::Part : public CheckpointPart {
 public:
  Part(AlertStates* owner, uint64_t generation, bool full)
      : owner_(owner), generation_(generation), full_(full) {}

  DbStatus Write(SqliteDb& db) override {
    if (full_) {
      if (DbStatus s = ExecAll(db, {"DELETE FROM alerts_signatures", "DELETE FROM alerts_fixes",
                                    "DELETE FROM alerts_outbox", "DELETE FROM alerts_groups"});
          !s.ok()) {
        return s;
      }
    }
    SqliteStatement upsert;
    if (DbStatus s = db.Prepare("INSERT INTO alerts_signatures (signature, record) VALUES (?1, ?2) "
                                "ON CONFLICT(signature) DO UPDATE SET record = excluded.record",
                                &upsert);
        !s.ok()) {
      return s;
    }
    for (const auto& [signature, json] : records) {
      upsert.Bind(1, signature);
      upsert.Bind(2, json);
      if (DbStatus s = upsert.Run(); !s.ok()) return s;
    }
    if (fixes) {
      if (DbStatus s = db.Exec("DELETE FROM alerts_fixes"); !s.ok()) return s;
      SqliteStatement insert;
      if (DbStatus s = db.Prepare("INSERT INTO alerts_fixes (id, record) VALUES (?1, ?2)", &insert);
          !s.ok()) {
        return s;
      }
      for (const auto& [id, json] : *fixes) {
        insert.Bind(1, id);
        insert.Bind(2, json);
        if (DbStatus s = insert.Run(); !s.ok()) return s;
      }
    }
    SqliteStatement entry;
    if (DbStatus s = db.Prepare(
            "INSERT INTO alerts_outbox (seq, target, state, attempts, created_ms, "
            "first_attempt_ms, next_attempt_ms, done_ms, last_result, notification) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT(seq) DO UPDATE SET "
            "state = excluded.state, attempts = excluded.attempts, "
            "first_attempt_ms = excluded.first_attempt_ms, "
            "next_attempt_ms = excluded.next_attempt_ms, done_ms = excluded.done_ms, "
            "last_result = excluded.last_result",
            &entry);
        !s.ok()) {
      return s;
    }
    for (const Entry& e : entries) {
      entry.Bind(1, e.seq);
      entry.Bind(2, e.target);
      entry.Bind(3, e.state);
      entry.Bind(4, e.attempts);
      entry.Bind(5, e.created_ms);
      entry.Bind(6, e.first_attempt_ms);
      entry.Bind(7, e.next_attempt_ms);
      entry.Bind(8, e.done_ms);
      entry.Bind(9, e.last_result);
      entry.Bind(10, e.notification);
      if (DbStatus s = entry.Run(); !s.ok()) return s;
    }
    SqliteStatement remove;
    if (DbStatus s = db.Prepare("DELETE FROM alerts_outbox WHERE seq = ?1", &remove); !s.ok()) {
      return s;
    }
    for (int64_t seq : removed) {
      remove.Bind(1, seq);
      if (DbStatus s = remove.Run(); !s.ok()) return s;
    }
    if (groups) {
      if (DbStatus s = db.Exec("DELETE FROM alerts_groups"); !s.ok()) return s;
      SqliteStatement insert;
      if (DbStatus s = db.Prepare("INSERT INTO alerts_groups (id, groups) VALUES (1, ?1)", &insert);
          !s.ok()) {
        return s;
      }
      insert.Bind(1, *groups);
      if (DbStatus s = insert.Run(); !s.ok()) return s;
    }
    return DbStatus();
  }

  void Committed() override { owner_->OnPartCommitted(*this); }

  struct Entry {
    int64_t seq;
    std::string target;
    std::string state;
    int64_t attempts, created_ms, first_attempt_ms, next_attempt_ms, done_ms;
    std::string last_result;
    std::string notification;
  };
  std::vector<std::pair<std::string, std::string>> records;           // signature, JSON
  std::optional<std::vector<std::pair<int64_t, std::string>>> fixes;  // all of them, when changed
  std::vector<Entry> entries;
  std::vector<int64_t> removed;
  std::optional<std::string> groups;  // all of them (JSON), when changed
  std::vector<int64_t> queued;        // entries that may go out once this commits

  AlertStates* const owner_;
  const uint64_t generation_;
  const bool full_;
};

DbStatus AlertStates::Migrate(SqliteDb& db, int from) {
  if (from < 1) {
    return ExecAll(
        db, {"CREATE TABLE alerts_signatures (signature TEXT PRIMARY KEY, record TEXT NOT NULL)",
             "CREATE TABLE alerts_fixes (id INTEGER PRIMARY KEY, record TEXT NOT NULL)",
             "CREATE TABLE alerts_outbox (seq INTEGER PRIMARY KEY, target TEXT NOT NULL, "
             "state TEXT NOT NULL, attempts INTEGER NOT NULL, created_ms INTEGER NOT NULL, "
             "first_attempt_ms INTEGER NOT NULL, next_attempt_ms INTEGER NOT NULL, "
             "done_ms INTEGER NOT NULL, last_result TEXT NOT NULL, notification TEXT NOT NULL)",
             "CREATE TABLE alerts_groups (id INTEGER PRIMARY KEY CHECK (id = 1), "
             "groups TEXT NOT NULL)"});
  }
  return DbStatus();
}

DbStatus AlertStates::Load(SqliteDb& db) {
  std::vector<SignatureRecord> records;
  std::vector<FixRecord> fixes;
  std::vector<OutboxEntry> entries;
  std::vector<Alerting::PendingGroup> groups;
  size_t skipped = 0;

  SqliteStatement read;
  if (DbStatus s = db.Prepare("SELECT record FROM alerts_signatures", &read); !s.ok()) return s;
  while (read.Step()) {
    if (std::optional<SignatureRecord> r = SignatureFromJson(read.ColumnText(0))) {
      records.push_back(std::move(*r));
    } else {
      ++skipped;
    }
  }
  if (!read.status().ok()) return read.status();

  if (DbStatus s = db.Prepare("SELECT record FROM alerts_fixes ORDER BY id", &read); !s.ok()) {
    return s;
  }
  while (read.Step()) {
    if (std::optional<FixRecord> f = FixFromJson(read.ColumnText(0))) {
      fixes.push_back(std::move(*f));
    } else {
      ++skipped;
    }
  }
  if (!read.status().ok()) return read.status();

  if (DbStatus s = db.Prepare(
          "SELECT seq, target, state, attempts, created_ms, first_attempt_ms, next_attempt_ms, "
          "done_ms, last_result, notification FROM alerts_outbox ORDER BY seq",
          &read);
      !s.ok()) {
    return s;
  }
  while (read.Step()) {
    OutboxEntry e;
    e.seq = read.ColumnInt(0);
    e.target = read.ColumnText(1);
    const std::optional<OutboxEntry::State> state = ParseOutboxState(read.ColumnText(2));
    std::optional<Notification> n = NotificationFromJson(read.ColumnText(9));
    if (!state || !n) {
      ++skipped;
      continue;
    }
    e.state = *state;
    e.attempts = static_cast<int>(read.ColumnInt(3));
    e.created_ms = read.ColumnInt(4);
    e.first_attempt_ms = read.ColumnInt(5);
    e.next_attempt_ms = read.ColumnInt(6);
    e.done_ms = read.ColumnInt(7);
    e.last_result = read.ColumnText(8);
    e.notification = std::move(*n);
    if (e.state == OutboxEntry::State::kQueued) ++loaded_queued_;
    entries.push_back(std::move(e));
  }
  if (!read.status().ok()) return read.status();

  if (DbStatus s = db.Prepare("SELECT groups FROM alerts_groups", &read); !s.ok()) return s;
  while (read.Step()) {
    committed_groups_ = read.ColumnText(0);
    try {
      for (const json& g : json::parse(committed_groups_)) {
        std::optional<Notification> items = NotificationFromJson(Dump(g.at("items")));
        if (!items) {
          ++skipped;
          continue;
        }
        groups.push_back(Alerting::PendingGroup{.key = g.at("key").get<std::string>(),
                                                .target = g.at("target").get<std::string>(),
                                                .due_ms = g.at("due_ms").get<int64_t>(),
                                                .items = std::move(*items)});
      }
    } catch (const json::exception&) {
      ++skipped;
    }
  }
  if (!read.status().ok()) return read.status();

  if (skipped > 0) spdlog::warn("state: {} alert rows could not be read and were skipped", skipped);
  loaded_signatures_ = records.size();
  alerting_.tracker().Restore(std::move(records), std::move(fixes));
  alerting_.outbox().Restore(std::move(entries));
  alerting_.RestoreGroups(std::move(groups));
  return DbStatus();
}

std::unique_ptr<CheckpointPart> AlertStates::Collect(bool full) {
  const uint64_t generation = ++generation_;
  if (full) {
    alerting_.tracker().MarkAllDirty();
    alerting_.outbox().MarkAllDirty();
    unconfirmed_records_.clear();
    unconfirmed_entries_.clear();
    unconfirmed_removed_.clear();
  }
  SignatureTracker::Dirty records = alerting_.tracker().TakeDirty();
  Outbox::Dirty entries = alerting_.outbox().TakeDirty();
  for (SignatureRecord& r : records.records) {
    std::string key = r.signature;
    unconfirmed_records_[std::move(key)] = {generation, std::move(r)};
  }
  if (records.fixes_changed || full) {
    fixes_unconfirmed_ = true;
    fixes_generation_ = generation;
  }
  for (int64_t seq : entries.removed) {
    unconfirmed_entries_.erase(seq);
    unconfirmed_removed_[seq] = generation;
  }
  for (OutboxEntry& e : entries.changed) {
    const int64_t seq = e.seq;
    unconfirmed_removed_.erase(seq);
    unconfirmed_entries_[seq] = {generation, std::move(e)};
  }
  const std::string groups = GroupsToJson(alerting_.PendingGroups());
  const bool groups_changed = full || groups != committed_groups_;

  if (unconfirmed_records_.empty() && !fixes_unconfirmed_ && unconfirmed_entries_.empty() &&
      unconfirmed_removed_.empty() && !groups_changed) {
    return nullptr;
  }
  auto part = std::make_unique<Part>(this, generation, full);
  for (const auto& [signature, value] : unconfirmed_records_) {
    part->records.emplace_back(signature, SignatureToJson(value.second));
  }
  if (fixes_unconfirmed_) {
    part->fixes.emplace();
    for (const FixRecord& f : alerting_.tracker().fixes())
      part->fixes->emplace_back(f.id, FixToJson(f));
  }
  for (const auto& [seq, value] : unconfirmed_entries_) {
    const OutboxEntry& e = value.second;
    part->entries.push_back(Part::Entry{.seq = e.seq,
                                        .target = e.target,
                                        .state = std::string(OutboxStateName(e.state)),
                                        .attempts = e.attempts,
                                        .created_ms = e.created_ms,
                                        .first_attempt_ms = e.first_attempt_ms,
                                        .next_attempt_ms = e.next_attempt_ms,
                                        .done_ms = e.done_ms,
                                        .last_result = e.last_result,
                                        .notification = NotificationToJson(e.notification)});
    if (e.state == OutboxEntry::State::kQueued) part->queued.push_back(e.seq);
  }
  for (const auto& [seq, generation_taken] : unconfirmed_removed_) part->removed.push_back(seq);
  if (groups_changed) part->groups = groups;
  return part;
}

void AlertStates::OnPartCommitted(const Part& part) {
  // What a later Collect took again stays unconfirmed until its own part commits.
  std::erase_if(unconfirmed_records_,
                [&](const auto& kv) { return kv.second.first <= part.generation_; });
  std::erase_if(unconfirmed_entries_,
                [&](const auto& kv) { return kv.second.first <= part.generation_; });
  std::erase_if(unconfirmed_removed_,
                [&](const auto& kv) { return kv.second <= part.generation_; });
  if (fixes_unconfirmed_ && fixes_generation_ <= part.generation_) fixes_unconfirmed_ = false;
  if (part.groups) committed_groups_ = *part.groups;
  alerting_.OnCommitted(part.queued);
}

}  // namespace faultline
