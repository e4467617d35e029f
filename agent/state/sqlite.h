// Sqlite: a small RAII wrapper over the SQLite C API, used only by agent/state/.
//
// SqliteDb owns one connection (sqlite3*), SqliteStatement one prepared statement; both close on
// destruction and are movable, not copyable. Every call returns a DbStatus (SQLite's extended
// result code and message) instead of throwing.
//
// Why our own wrapper and not SQLiteCpp (libsqlitecpp-dev): SQLiteCpp reports every failure by
// throwing SQLite::Exception, and a checkpoint runs long after load time, on the event loop or the
// checkpoint thread, where the project allows no exceptions (a full disk is an ordinary outcome
// there, not an exceptional one). What the store needs of the C API is a dozen calls; wrapping
// them with status values costs less than catching around every SQLiteCpp call, and is one
// package fewer to install.
//
// Threading: a connection is used by one thread at a time (SQLite's default serialized mode makes
// misuse safe, not fast). Statements must be destroyed before their connection.
#ifndef FAULTLINE_STATE_SQLITE_H_
#define FAULTLINE_STATE_SQLITE_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace faultline {

// The outcome of a SQLite call: ok, or SQLite's (extended) result code and message.
class [[nodiscard]] DbStatus {
 public:
  DbStatus() = default;
  DbStatus(int code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == SQLITE_OK; }
  int code() const { return code_; }
  // The primary result code (SQLITE_FULL for SQLITE_FULL, SQLITE_IOERR for SQLITE_IOERR_WRITE).
  int primary_code() const { return code_ & 0xff; }
  const std::string& message() const { return message_; }
  // "database or disk is full (SQLITE_FULL)", for logs and /readyz.
  std::string ToString() const;

 private:
  int code_ = SQLITE_OK;
  std::string message_;
};

class SqliteStatement {
 public:
  SqliteStatement() = default;
  ~SqliteStatement();
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&& other) noexcept;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  // Parameters are numbered from 1, as in SQLite. Text is copied (SQLITE_TRANSIENT).
  void Bind(int index, int64_t value);
  void Bind(int index, double value);
  void Bind(int index, std::string_view text);
  void BindBlob(int index, std::string_view bytes);

  // One step: true when a row is ready (read it with the Column* calls), false when done or on an
  // error, which status() then holds.
  bool Step();
  // Runs a statement that returns no rows to completion; then Reset for the next use.
  DbStatus Run();
  // Ready for new bindings and another run.
  void Reset();
  DbStatus status() const { return status_; }

  int64_t ColumnInt(int column) const;
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;
  std::string ColumnBlob(int column) const;

 private:
  friend class SqliteDb;
  sqlite3_stmt* stmt_ = nullptr;
  DbStatus status_;
};

class SqliteDb {
 public:
  SqliteDb() = default;
  ~SqliteDb();
  SqliteDb(SqliteDb&& other) noexcept;
  SqliteDb& operator=(SqliteDb&& other) noexcept;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // sqlite3_open_v2 with `flags` (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, or
  // SQLITE_OPEN_READONLY). Extended result codes are on.
  static DbStatus Open(const std::string& path, int flags, SqliteDb* out);

  bool is_open() const { return db_ != nullptr; }
  void Close();

  // Runs one or more statements that return no rows.
  DbStatus Exec(const char* sql);
  DbStatus Prepare(std::string_view sql, SqliteStatement* out);
  // The first column of the first row of `sql` as an integer (PRAGMA user_version).
  DbStatus QueryInt(const char* sql, int64_t* out);

  // The last error on this connection, as a DbStatus with `code`.
  DbStatus LastError(int code) const;

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace faultline

#endif  // FAULTLINE_STATE_SQLITE_H_
