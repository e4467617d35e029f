#include "agent/state/state_store.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <system_error>

namespace faultline {
namespace {

namespace fs = std::filesystem;

constexpr char kComponentsTable[] = "faultline_components";

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// "20261201T101500": when a corrupt file was moved aside, readable in a folder listing.
std::string TimeStamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y%m%dT%H%M%SZ", &tm);
  return buffer;
}

// Errors that say the file itself is bad (as opposed to busy, or not ours to write).
bool MeansCorrupt(const DbStatus& status) {
  switch (status.primary_code()) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_IOERR:
    case SQLITE_FORMAT:
    case SQLITE_RANGE:
      return true;
    default:
      return false;
  }
}

DbStatus CannotOpen(std::string message) { return DbStatus(SQLITE_CANTOPEN, std::move(message)); }

// "file:/path?immutable=1", with the characters a URI gives a meaning escaped.
std::string ImmutableUri(const std::string& path) {
  std::string uri = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      static constexpr char kHex[] = "0123456789ABCDEF";
      uri += '%';
      uri += kHex[(c >> 4) & 0xf];
      uri += kHex[c & 0xf];
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

Error Refusal(const std::string& path, const DbStatus& status) {
  return Error{.file = path, .line = 0, .rule_id = "", .key = "", .message = status.message()};
}

}  // namespace

StateStore::StateStore(std::string dir, std::vector<StateParticipant*> participants)
    : dir_(std::move(dir)),
      path_((fs::path(dir_) / kFileName).string()),
      participants_(std::move(participants)) {}

StateStore::~StateStore() {
  db_.Close();
  if (lock_fd_ >= 0) close(lock_fd_);  // releases the flock
}

Result<std::unique_ptr<StateStore>> StateStore::Open(const std::string& dir,
                                                     std::vector<StateParticipant*> participants) {
  std::unique_ptr<StateStore> store(new StateStore(dir, std::move(participants)));
  bool fatal = false;
  DbStatus status = store->OpenForWriting(/*load=*/true, &fatal);
  if (fatal) return Refusal(store->path_, status);
  if (status.ok()) return store;
  store->MarkUnavailable(status);
  // Not writable: the counts and offsets in it still hold, so read them if that works. As an
  // immutable file: on a read-only file system SQLite could not create the WAL index it needs
  // to read a WAL-mode file otherwise (a clean stop leaves no WAL behind to be missed).
  if (Exists(store->path_)) {
    SqliteDb reader;
    if (SqliteDb::Open(ImmutableUri(store->path_), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, &reader)
            .ok()) {
      status = store->CheckVersions(reader, &fatal);
      if (fatal) return Refusal(store->path_, status);
      int64_t version = 0;
      if (status.ok() && reader.QueryInt("PRAGMA user_version", &version).ok() && version > 0) {
        if (store->LoadAll(reader).ok()) {
          store->loaded_ = true;
          spdlog::warn("state: {} is read-only; loaded the saved state from it", store->path_);
        }
      }
    }
  }
  spdlog::warn("state: cannot write checkpoints: {}; counting goes on, retrying every checkpoint",
               store->unavailable_reason_);
  return store;
}

DbStatus StateStore::TakeLock(bool* fatal) {
  if (lock_fd_ >= 0) return DbStatus();
  const std::string lock_path = (fs::path(dir_) / kLockName).string();
  int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  const bool can_write = fd >= 0;
  if (fd < 0) fd = open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return CannotOpen("cannot create the lock file " + lock_path + ": " + std::strerror(errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char pid[32] = {};
    const ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
    close(fd);
    if (error != EWOULDBLOCK) {
      return CannotOpen("cannot lock " + lock_path + ": " + std::strerror(error));
    }
    *fatal = true;
    std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return CannotOpen("state.dir " + dir_ + " is in use by another faultline" +
                      (holder.empty() ? "" : " (pid " + holder + ")") +
                      "; two agents on one state.dir would count every line twice. Stop the "
                      "other agent, or give this one a state.dir of its own");
  }
  if (can_write) {
    const std::string pid = std::to_string(getpid()) + "\n";
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      spdlog::debug("state: cannot write the pid into {}: {}", lock_path, std::strerror(errno));
    }
  }
  lock_fd_ = fd;
  return DbStatus();
}

bool StateStore::MoveAside(const std::string& why) {
  db_.Close();
  std::string aside = path_ + ".corrupt-" + TimeStamp();
  for (int n = 2; Exists(aside); ++n)
    aside = path_ + ".corrupt-" + TimeStamp() + "-" + std::to_string(n);
  if (rename(path_.c_str(), aside.c_str()) != 0) {
    spdlog::error("state: {} is unusable ({}) and cannot be moved aside: {}", path_, why,
                  std::strerror(errno));
    return false;
  }
  // The WAL goes with it (a stale WAL beside a new file would be replayed into it); sqlite3
  // opening the moved file finds it under its usual name.
  if (Exists(path_ + "-wal")) rename((path_ + "-wal").c_str(), (aside + "-wal").c_str());
  unlink((path_ + "-shm").c_str());
  moved_aside_ = aside;
  spdlog::warn("state: {} is unusable ({}); moved it aside to {} and starting with no saved state",
               path_, why, aside);
  return true;
}

DbStatus StateStore::CheckVersions(SqliteDb& db, bool* fatal) {
  int64_t store_version = 0;
  if (DbStatus s = db.QueryInt("PRAGMA user_version", &store_version); !s.ok()) return s;
  if (store_version > kStoreVersion) {
    *fatal = true;
    return CannotOpen("the state file has layout version " + std::to_string(store_version) +
                      ", written by a newer faultline; this one knows up to " +
                      std::to_string(kStoreVersion) +
                      " and will not touch it. Run the newer faultline, or move the file away to "
                      "start with no saved state");
  }
  if (store_version == 0) return DbStatus();
  SqliteStatement versions;
  if (DbStatus s =
          db.Prepare(std::string("SELECT component, version FROM ") + kComponentsTable, &versions);
      !s.ok()) {
    return s;
  }
  std::map<std::string, int64_t, std::less<>> saved;
  while (versions.Step()) saved[versions.ColumnText(0)] = versions.ColumnInt(1);
  if (!versions.status().ok()) return versions.status();
  for (const StateParticipant* p : participants_) {
    auto it = saved.find(p->component());
    if (it != saved.end() && it->second > p->schema_version()) {
      *fatal = true;
      return CannotOpen(
          "the state file's '" + std::string(p->component()) + "' tables are at version " +
          std::to_string(it->second) + ", written by a newer faultline; this one knows up to " +
          std::to_string(p->schema_version()) +
          " and will not touch them. Run the newer faultline, or move the file away to "
          "start with no saved state");
    }
  }
  return DbStatus();
}

DbStatus StateStore::OpenForWriting(bool load, bool* fatal) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return CannotOpen("cannot create state.dir " + dir_ + ": " + ec.message());
  if (DbStatus s = TakeLock(fatal); !s.ok()) return s;

  struct stat st {};
  if (stat(path_.c_str(), &st) == 0 && st.st_size == 0 && !MoveAside("the file is empty")) {
    return CannotOpen(path_ + " is empty and cannot be moved aside");
  }
  for (int attempt = 0;; ++attempt) {
    if (DbStatus s = SqliteDb::Open(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &db_);
        !s.ok()) {
      return CannotOpen("cannot open " + path_ + ": " + s.ToString());
    }
    // quick_check reads every page (not the index cross-checks of integrity_check): a truncated
    // or overwritten file fails it, or fails to be read at all.
    SqliteStatement check;
    std::string verdict;
    DbStatus s = db_.Prepare("PRAGMA quick_check", &check);
    if (s.ok()) {
      if (check.Step()) verdict = check.ColumnText(0);
      s = check.status();
    }
    check = SqliteStatement();
    if (s.ok() && verdict == "ok") break;
    if (!s.ok() && !MeansCorrupt(s)) {
      db_.Close();
      return CannotOpen("cannot read " + path_ + ": " + s.ToString());
    }
    const std::string why = s.ok() ? "integrity check: " + verdict : s.ToString();
    if (attempt > 0 || !MoveAside(why)) {
      db_.Close();
      return CannotOpen(path_ + " is unusable: " + why);
    }
  }
  if (DbStatus s = CheckVersions(db_, fatal); !s.ok()) {
    db_.Close();
    return s;
  }
  int64_t store_version = 0;
  if (DbStatus s = db_.QueryInt("PRAGMA user_version", &store_version); !s.ok()) return s;
  SqliteStatement mode;
  std::string journal;
  if (DbStatus s = db_.Prepare("PRAGMA journal_mode=WAL", &mode); s.ok() && mode.Step()) {
    journal = mode.ColumnText(0);
  }
  mode = SqliteStatement();
  if (journal != "wal") {
    db_.Close();
    return CannotOpen("cannot put " + path_ + " in WAL mode (journal mode '" + journal + "')");
  }
  if (DbStatus s = db_.Exec("PRAGMA synchronous=NORMAL"); !s.ok()) return s;
  if (DbStatus s = Migrate(); !s.ok()) {
    db_.Close();
    return s;
  }
  if (load && store_version > 0) {
    if (DbStatus s = LoadAll(db_); !s.ok()) {
      db_.Close();
      return s;
    }
    loaded_ = true;
  }
  writable_ = true;
  full_next_ = !load;
  unavailable_reason_.clear();
  return DbStatus();
}

DbStatus StateStore::Migrate() {
  if (DbStatus s = db_.Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  const auto fail = [this](DbStatus s) {
    (void)db_.Exec("ROLLBACK");
    return s;
  };
  if (DbStatus s = db_.Exec((std::string("CREATE TABLE IF NOT EXISTS ") + kComponentsTable +
                             " (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
                                .c_str());
      !s.ok()) {
    return fail(s);
  }
  SqliteStatement read;
  SqliteStatement write;
  if (DbStatus s = db_.Prepare(
          std::string("SELECT version FROM ") + kComponentsTable + " WHERE component = ?1", &read);
      !s.ok()) {
    return fail(s);
  }
  if (DbStatus s = db_.Prepare(std::string("INSERT INTO ") + kComponentsTable +
                                   " (component, version) VALUES (?1, ?2) ON CONFLICT(component) "
                                   "DO UPDATE SET version = excluded.version",
                               &write);
      !s.ok()) {
    return fail(s);
  }
  for (StateParticipant* p : participants_) {
    read.Bind(1, p->component());
    const int from = read.Step() ? static_cast<int>(read.ColumnInt(0)) : 0;
    DbStatus s = read.status();
    read.Reset();
    if (!s.ok()) return fail(s);
    if (from == p->schema_version()) continue;
    if (s = p->Migrate(db_, from); !s.ok()) {
      return fail(DbStatus(s.code(), "migrating '" + std::string(p->component()) +
                                         "' from version " + std::to_string(from) + ": " +
                                         s.message()));
    }
    write.Bind(1, p->component());
    write.Bind(2, static_cast<int64_t>(p->schema_version()));
    if (s = write.Run(); !s.ok()) return fail(s);
    if (from == 0) {
      spdlog::debug("state: '{}' tables created at version {}", p->component(),
                    p->schema_version());
    } else {
      spdlog::info("state: '{}' tables migrated from version {} to {}", p->component(), from,
                   p->schema_version());
    }
  }
  if (DbStatus s = db_.Exec(("PRAGMA user_version = " + std::to_string(kStoreVersion)).c_str());
      !s.ok()) {
    return fail(s);
  }
  read = SqliteStatement();
  write = SqliteStatement();
  if (DbStatus s = db_.Exec("COMMIT"); !s.ok()) return fail(s);
  return DbStatus();
}

DbStatus StateStore::LoadAll(SqliteDb& db) {
  for (StateParticipant* p : participants_) {
    if (DbStatus s = p->Load(db); !s.ok()) {
      return DbStatus(s.code(), "loading '" + std::string(p->component()) + "': " + s.message());
    }
  }
  return DbStatus();
}

void StateStore::MarkUnavailable(const DbStatus& status) {
  writable_ = false;
  unavailable_reason_ = status.message().empty() ? status.ToString() : status.message();
}

StateStore::Batch StateStore::Collect() {
  Batch batch;
  if (!writable_) {
    bool fatal = false;
    if (DbStatus s = OpenForWriting(/*load=*/false, &fatal); !s.ok()) {
      MarkUnavailable(s);
      return batch;
    }
    spdlog::info("state: {} is writable again; checkpoints resume", path_);
  }
  for (StateParticipant* p : participants_) {
    if (std::unique_ptr<CheckpointPart> part = p->Collect(full_next_)) {
      batch.parts.push_back(std::move(part));
    }
  }
  return batch;
}

DbStatus StateStore::Write(Batch& batch) {
  if (!writable_) return CannotOpen(unavailable_reason_);
  if (batch.parts.empty()) return DbStatus();
  if (DbStatus s = db_.Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  for (const std::unique_ptr<CheckpointPart>& part : batch.parts) {
    if (DbStatus s = part->Write(db_); !s.ok()) {
      (void)db_.Exec("ROLLBACK");
      return s;
    }
  }
  if (DbStatus s = db_.Exec("COMMIT"); !s.ok()) {
    (void)db_.Exec("ROLLBACK");
    return s;
  }
  return DbStatus();
}

void StateStore::Committed(Batch& batch) {
  for (const std::unique_ptr<CheckpointPart>& part : batch.parts) part->Committed();
  full_next_ = false;
}

DbStatus StateStore::Checkpoint() {
  Batch batch = Collect();
  if (!writable_) return CannotOpen(unavailable_reason_);
  DbStatus status = Write(batch);
  if (status.ok()) Committed(batch);
  return status;
}

}  // namespace faultline
