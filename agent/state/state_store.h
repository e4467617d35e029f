// StateStore: the agent's durable state, one SQLite database (state.dir/faultline.db, WAL mode)
// that several components share, each through tables of its own.
//
// The seam for every component that persists something (docs/design.md section 1):
// - A component implements StateParticipant: a stable name, the version of its tables, its
//   migrations, how it reads its tables back at start, and what it writes at each checkpoint.
//   The stream positions and the counters are participants (state/stream_states.h,
//   state/counter_states.h); the alert lifecycle and outbox are too.
// - All participants are given to Open, which migrates and loads them before the agent reads a
//   line. A participant owns its tables outright: nobody else reads or writes them, and its
//   migrations are its own. Name tables after the component (`alerts_outbox`, not `outbox`).
// - A checkpoint is ONE transaction holding what every participant wrote, collected at one instant
//   on the event loop: stream offsets, the counter values of the lines before them, and the alert
//   records of the same lines commit together or not at all. So `kill -9` at any moment restarts
//   from a state in which every line was either fully counted and recorded, or not at all.
//
// Checkpointing runs in three steps so that the write can leave the event loop when it is slow:
//   Collect() on the event loop: each participant returns an owned CheckpointPart (what changed);
//   Write() on any one thread at a time: the parts are written in one transaction and committed;
//   Committed() back on the event loop: the parts learn that what they wrote is durable.
// Checkpoint() does all three on the calling thread.
//
// Versions: `PRAGMA user_version` is the version of the store's own layout (the table of
// component versions); each component's version is a row of that table. A file whose store
// version or any component version is newer than this build knows is refused at Open, with an
// error, and is never written. An older one is migrated, component by component, inside one
// transaction: a failed migration leaves the file as it was.
//
// Faults:
// - Another agent on the same state.dir: Open fails (an exclusive flock on
// state.dir/faultline.lock,
//   released by the kernel when the holder dies, even by kill -9).
// - A corrupt, truncated or unreadable file (PRAGMA quick_check at open): moved aside as
//   `faultline.db.corrupt-<time>` (its WAL beside it), reported once in the log and by
//   moved_aside(), and the store starts empty.
// - A state.dir that cannot be created or written, a full disk: the store is not writable();
//   unavailable_reason() says why, a checkpoint fails with that reason and the next one tries to
//   open the store again. Ingestion never waits for the store. A file that can be read but not
//   written is still loaded, so counts continue from it.
//
// Durability: synchronous=NORMAL. In WAL mode a commit survives the agent being killed; after a
// power loss the last commits may be rolled back, to an earlier checkpoint that is still
// consistent (offsets and counts together), so lines are read again, never counted twice.
//
// Threading: not thread-safe. Open, Collect and Committed on the event loop; Write on the event
// loop or on one checkpoint thread, never two at once, never overlapping Collect's callers'
// writes to the same participant state. Nothing here throws.
#ifndef FAULTLINE_STATE_STATE_STORE_H_
#define FAULTLINE_STATE_STATE_STORE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/result.h"
#include "agent/state/sqlite.h"

namespace faultline {

// What one participant writes in one checkpoint: an owned value, safe to hand to another thread.
class CheckpointPart {
 public:
  virtual ~CheckpointPart() = default;
  // Writes into the open checkpoint transaction. Touches only the part's own data and the
  // participant's own tables; may run on the checkpoint thread.
  virtual DbStatus Write(SqliteDb& db) = 0;
  // On the event loop, after the transaction holding this part committed.
  virtual void Committed() {}
};

// One component with tables in the store.
class StateParticipant {
 public:
  virtual ~StateParticipant() = default;
  // The component's stable name, the key of its version ("streams", "counters", "alerts").
  virtual std::string_view component() const = 0;
  // The version of the tables this build reads and writes; 1 for the first, raised by one for
  // every change, each with its step in Migrate.
  virtual int schema_version() const = 0;
  // Brings the component's tables from version `from` (0: the component has no tables yet) to
  // schema_version(), inside Open's migration transaction.
  virtual DbStatus Migrate(SqliteDb& db, int from) = 0;
  // Reads the component's saved state, once, after migrating (the agent's state at its last
  // checkpoint). Not called when the file could not be read at all.
  virtual DbStatus Load(SqliteDb& db) = 0;
  // On the event loop: what this checkpoint writes, or null when nothing changed since the last
  // committed checkpoint. `full`: the file may not hold what was loaded (it was opened again
  // after being unavailable), so write the whole state, replacing what the tables hold.
  virtual std::unique_ptr<CheckpointPart> Collect(bool full) = 0;
};

class StateStore {
 public:
  static constexpr char kFileName[] = "faultline.db";
  static constexpr char kLockName[] = "faultline.lock";
  // The store's own layout (PRAGMA user_version): 1 = the component version table.
  static constexpr int kStoreVersion = 1;

  // Opens state `dir`/faultline.db, creating the folder and the file when missing, then migrates
  // and loads every participant (which must outlive the store). Fails, and the agent must not
  // start, only when another agent holds the folder's lock or when the file (or one component's
  // tables) was written by a newer faultline. Every other problem gives a store that is not
  // writable() and says why.
  static Result<std::unique_ptr<StateStore>> Open(const std::string& dir,
                                                  std::vector<StateParticipant*> participants);
  ~StateStore();
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  const std::string& path() const { return path_; }
  bool writable() const { return writable_; }
  // Why checkpoints cannot be written now (empty when writable).
  const std::string& unavailable_reason() const { return unavailable_reason_; }
  // Where a corrupt file found at Open was moved (empty when none was).
  const std::string& moved_aside() const { return moved_aside_; }
  // Whether saved state was loaded at Open (false: a first start, or nothing could be read).
  bool loaded() const { return loaded_; }

  // The three steps of a checkpoint (see the top of this file).
  struct Batch {
    std::vector<std::unique_ptr<CheckpointPart>> parts;
  };
  // Tries to open the store again first when it is not writable.
  Batch Collect();
  DbStatus Write(Batch& batch);
  void Committed(Batch& batch);
  // Collect, Write and (on success) Committed, on the calling thread.
  DbStatus Checkpoint();

 private:
  StateStore(std::string dir, std::vector<StateParticipant*> participants);
  // Opens the file for writing; `fatal` is set for the errors that must stop the agent.
  DbStatus OpenForWriting(bool load, bool* fatal);
  DbStatus TakeLock(bool* fatal);
  // Moves a corrupt file and its WAL aside; false when they could not be moved.
  bool MoveAside(const std::string& why);
  DbStatus CheckVersions(SqliteDb& db, bool* fatal);
  DbStatus Migrate();
  DbStatus LoadAll(SqliteDb& db);
  void MarkUnavailable(const DbStatus& status);

  const std::string dir_;
  const std::string path_;
  const std::vector<StateParticipant*> participants_;

  SqliteDb db_;
  int lock_fd_ = -1;
  bool writable_ = false;
  bool loaded_ = false;
  bool full_next_ = false;  // the next checkpoint rewrites every table
  std::string unavailable_reason_;
  std::string moved_aside_;
};

}  // namespace faultline

#endif  // FAULTLINE_STATE_STATE_STORE_H_
