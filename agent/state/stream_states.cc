#include "agent/state/stream_states.h"

#include <time.h>

#include <bit>
#include <nlohmann/json.hpp>

namespace faultline {
namespace {

// SQLite integers are signed 64-bit; hashes and offsets are stored bit for bit.
int64_t ToDb(uint64_t v) { return std::bit_cast<int64_t>(v); }
uint64_t FromDb(int64_t v) { return std::bit_cast<uint64_t>(v); }

std::string PendingJson(const std::vector<PendingHitState>& hits) {
  nlohmann::json array = nlohmann::json::array();
  for (const PendingHitState& hit : hits) array.push_back({hit.rule_id, hit.line_number});
  return array.dump();
}

std::vector<PendingHitState> ParsePending(const std::string& text) {
  std::vector<PendingHitState> hits;
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array()) return hits;
  for (const nlohmann::json& item : parsed) {
    if (item.is_array() && item.size() == 2 && item[0].is_string() &&
        item[1].is_number_unsigned()) {
      hits.push_back({item[0].get<std::string>(), item[1].get<uint64_t>()});
    }
  }
  return hits;
}

}  // namespace

class StreamStates::Part : public CheckpointPart {
 public:
  Part(StreamStates* owner, bool full) : owner_(owner), full_(full) {}

  DbStatus Write(SqliteDb& db) override {
    if (full_) {
      if (DbStatus s = db.Exec("DELETE FROM streams_files; DELETE FROM streams_sources;");
          !s.ok()) {
        return s;
      }
    }
    SqliteStatement upsert;
    if (DbStatus s = db.Prepare(
            "INSERT OR REPLACE INTO streams_files (source, device, inode, path, head_hash, "
            "head_len, read_offset, tail, resume_offset, in_cut_line, after_cr, committed_line, "
            "read_line, counted_offset, pending) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            &upsert);
        !s.ok()) {
      return s;
    }
    for (const auto& [key, row] : changed) {
      upsert.Bind(1, std::get<0>(key));
      upsert.Bind(2, ToDb(std::get<1>(key)));
      upsert.Bind(3, ToDb(std::get<2>(key)));
      upsert.Bind(4, row.path);
      upsert.Bind(5, ToDb(row.head_hash));
      upsert.Bind(6, ToDb(row.head_len));
      upsert.Bind(7, ToDb(row.read_offset));
      upsert.BindBlob(8, row.tail);
      upsert.Bind(9, ToDb(row.resume_offset));
      upsert.Bind(10, int64_t{row.in_cut_line});
      upsert.Bind(11, int64_t{row.after_cr});
      upsert.Bind(12, ToDb(row.committed_line));
      upsert.Bind(13, ToDb(row.read_line));
      upsert.Bind(14, ToDb(row.counted_offset));
      upsert.Bind(15, row.pending);
      if (DbStatus s = upsert.Run(); !s.ok()) return s;
    }
    SqliteStatement remove;
    if (DbStatus s = db.Prepare(
            "DELETE FROM streams_files WHERE source = ?1 AND device = ?2 AND inode = ?3", &remove);
        !s.ok()) {
      return s;
    }
    for (const Key& key : removed) {
      remove.Bind(1, std::get<0>(key));
      remove.Bind(2, ToDb(std::get<1>(key)));
      remove.Bind(3, ToDb(std::get<2>(key)));
      if (DbStatus s = remove.Run(); !s.ok()) return s;
    }
    SqliteStatement source;
    if (DbStatus s =
            db.Prepare("INSERT OR IGNORE INTO streams_sources (source) VALUES (?1)", &source);
        !s.ok()) {
      return s;
    }
    for (const std::string& id : new_sources) {
      source.Bind(1, id);
      if (DbStatus s = source.Run(); !s.ok()) return s;
    }
    SqliteStatement time;
    if (DbStatus s = db.Prepare(
            "INSERT OR REPLACE INTO streams_checkpoint (id, at_ns) VALUES (1, ?1)", &time);
        !s.ok()) {
      return s;
    }
    // The clock the kernel stamps file times with, so that a file written after this moment
    // never has an older mtime than it (the precise clock runs up to a tick ahead).
    timespec now{};
    clock_gettime(CLOCK_REALTIME_COARSE, &now);
    time.Bind(1, int64_t{now.tv_sec} * 1000000000 + now.tv_nsec);
    return time.Run();
  }

  void Committed() override {
    if (full_) owner_->committed_.clear();
    for (auto& [key, row] : changed) owner_->committed_[key] = std::move(row);
    for (const Key& key : removed) owner_->committed_.erase(key);
    owner_->committed_sources_.insert(new_sources.begin(), new_sources.end());
  }

  std::vector<std::pair<Key, Row>> changed;
  std::vector<Key> removed;
  std::vector<std::string> new_sources;

 private:
  StreamStates* const owner_;
  const bool full_;
};

const std::vector<SavedStream>& StreamStates::saved(const std::string& source_id) const {
  static const std::vector<SavedStream> kNone;
  auto it = saved_.find(source_id);
  return it == saved_.end() ? kNone : it->second;
}

int64_t StreamStates::saved_at_ns(const std::string& source_id) const {
  auto it = handed_over_ns_.find(source_id);
  return it == handed_over_ns_.end() ? checkpoint_time_ns_ : it->second;
}

void StreamStates::HandOver(const std::string& source_id, std::vector<SavedStream> streams) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME_COARSE, &now);  // the clock of file times, as at a checkpoint
  handed_over_ns_[source_id] = int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
  saved_[source_id] = std::move(streams);
  saved_sources_.insert(source_id);
}

size_t StreamStates::saved_count() const {
  size_t n = 0;
  for (const auto& [source, streams] : saved_) n += streams.size();
  return n;
}

DbStatus StreamStates::Migrate(SqliteDb& db, int from) {
  if (from < 1) {
    return db.Exec(
        "CREATE TABLE streams_files ("
        "  source TEXT NOT NULL, device INTEGER NOT NULL, inode INTEGER NOT NULL,"
        "  path TEXT NOT NULL,"
        "  head_hash INTEGER NOT NULL, head_len INTEGER NOT NULL,"
        "  read_offset INTEGER NOT NULL, tail BLOB NOT NULL,"
        "  resume_offset INTEGER NOT NULL, in_cut_line INTEGER NOT NULL, after_cr INTEGER NOT NULL,"
        "  committed_line INTEGER NOT NULL, read_line INTEGER NOT NULL,"
        "  counted_offset INTEGER NOT NULL,"
        "  pending TEXT NOT NULL,"
        "  PRIMARY KEY (source, device, inode));"
        "CREATE TABLE streams_sources (source TEXT PRIMARY KEY);"
        "CREATE TABLE streams_checkpoint (id INTEGER PRIMARY KEY CHECK (id = 1),"
        "  at_ns INTEGER NOT NULL)");
  }
  return DbStatus();
}

DbStatus StreamStates::Load(SqliteDb& db) {
  saved_.clear();
  committed_.clear();
  SqliteStatement read;
  if (DbStatus s = db.Prepare(
          "SELECT source, device, inode, path, head_hash, head_len, read_offset, tail, "
          "resume_offset, in_cut_line, after_cr, committed_line, read_line, counted_offset, "
          "pending FROM streams_files",
          &read);
      !s.ok()) {
    return s;
  }
  while (read.Step()) {
    SavedStream stream;
    stream.source_id = read.ColumnText(0);
    FileMark& mark = stream.mark;
    mark.device = FromDb(read.ColumnInt(1));
    mark.inode = FromDb(read.ColumnInt(2));
    mark.path = read.ColumnText(3);
    mark.head_hash = FromDb(read.ColumnInt(4));
    mark.head_len = FromDb(read.ColumnInt(5));
    mark.read_offset = FromDb(read.ColumnInt(6));
    mark.tail = read.ColumnBlob(7);
    mark.resume_offset = FromDb(read.ColumnInt(8));
    StreamState& state = stream.state;
    state.source_id = stream.source_id;
    state.stream_name = mark.path;
    state.identity = {mark.device, mark.inode, mark.head_hash, mark.head_len};
    state.committed = {mark.resume_offset, read.ColumnInt(9) != 0, read.ColumnInt(10) != 0};
    state.committed_line = FromDb(read.ColumnInt(11));
    state.read_line = FromDb(read.ColumnInt(12));
    state.read_offset = FromDb(read.ColumnInt(13));
    state.pending_hits = ParsePending(read.ColumnText(14));
    committed_[{stream.source_id, mark.device, mark.inode}] = ToRow(stream);
    saved_[stream.source_id].push_back(std::move(stream));
  }
  if (!read.status().ok()) return read.status();
  SqliteStatement sources;
  if (DbStatus s = db.Prepare("SELECT source FROM streams_sources", &sources); !s.ok()) return s;
  while (sources.Step()) saved_sources_.insert(sources.ColumnText(0));
  if (!sources.status().ok()) return sources.status();
  committed_sources_ = saved_sources_;
  return db.QueryInt("SELECT coalesce(max(at_ns), 0) FROM streams_checkpoint",
                     &checkpoint_time_ns_);
}

StreamStates::Row StreamStates::ToRow(const SavedStream& stream) {
  const FileMark& m = stream.mark;
  const StreamState& s = stream.state;
  return Row{m.path,
             m.head_hash,
             m.head_len,
             m.read_offset,
             m.tail,
             m.resume_offset,
             s.committed.in_cut_line,
             s.committed.after_cr,
             s.committed_line,
             s.read_line,
             s.read_offset,
             PendingJson(s.pending_hits)};
}

std::unique_ptr<CheckpointPart> StreamStates::Collect(bool full) {
  if (frozen_) return nullptr;
  Snapshot now = snapshot_();
  auto part = std::make_unique<Part>(this, full);
  std::set<Key> live;
  for (const SavedStream& stream : now.streams) {
    Key key{stream.source_id, stream.mark.device, stream.mark.inode};
    Row row = ToRow(stream);
    live.insert(key);
    auto it = committed_.find(key);
    if (full || it == committed_.end() || !(it->second == row)) {
      part->changed.emplace_back(std::move(key), std::move(row));
    }
  }
  if (!full) {
    for (const auto& [key, row] : committed_) {
      if (!live.contains(key)) part->removed.push_back(key);
    }
  }
  for (const std::string& id : now.sources) {
    if (full || !committed_sources_.contains(id)) part->new_sources.push_back(id);
  }
  if (!full && part->changed.empty() && part->removed.empty() && part->new_sources.empty()) {
    return nullptr;
  }
  return part;
}

}  // namespace faultline
