#include "agent/state/sqlite.h"

#include <utility>

namespace faultline {

std::string DbStatus::ToString() const {
  if (ok()) return "ok";
  const char* name = sqlite3_errstr(code_);
  std::string out = message_.empty() ? std::string(name) : message_;
  out += " (SQLite code " + std::to_string(code_) + ")";
  return out;
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), status_(std::move(other.status_)) {}

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    status_ = std::move(other.status_);
  }
  return *this;
}

void SqliteStatement::Bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

void SqliteStatement::Bind(int index, double value) { sqlite3_bind_double(stmt_, index, value); }

void SqliteStatement::Bind(int index, std::string_view text) {
  sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

void SqliteStatement::BindBlob(int index, std::string_view bytes) {
  sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
}

bool SqliteStatement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) {
    status_ = DbStatus();
  } else {
    status_ = DbStatus(rc, sqlite3_errmsg(sqlite3_db_handle(stmt_)));
  }
  return false;
}

DbStatus SqliteStatement::Run() {
  while (Step()) {
  }
  DbStatus result = status_;
  Reset();
  return result;
}

void SqliteStatement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t SqliteStatement::ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }

double SqliteStatement::ColumnDouble(int column) const {
  return sqlite3_column_double(stmt_, column);
}

std::string SqliteStatement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  const int n = sqlite3_column_bytes(stmt_, column);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text), n);
}

std::string SqliteStatement::ColumnBlob(int column) const {
  const void* blob = sqlite3_column_blob(stmt_, column);
  const int n = sqlite3_column_bytes(stmt_, column);
  return blob == nullptr ? std::string() : std::string(static_cast<const char*>(blob), n);
}

SqliteDb::~SqliteDb() { Close(); }

SqliteDb::SqliteDb(SqliteDb&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

SqliteDb& SqliteDb::operator=(SqliteDb&& other) noexcept {
  if (this != &other) {
    Close();
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

DbStatus SqliteDb::Open(const std::string& path, int flags, SqliteDb* out) {
  out->Close();
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    DbStatus status(rc, db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close_v2(db);
    return status;
  }
  sqlite3_extended_result_codes(db, 1);
  out->db_ = db;
  return DbStatus();
}

void SqliteDb::Close() {
  if (db_ == nullptr) return;
  // _v2: statements a caller still holds keep the connection alive until they are finalized.
  sqlite3_close_v2(db_);
  db_ = nullptr;
}

DbStatus SqliteDb::Exec(const char* sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return DbStatus();
  DbStatus status(rc, message != nullptr ? message : sqlite3_errmsg(db_));
  sqlite3_free(message);
  return status;
}

DbStatus SqliteDb::Prepare(std::string_view sql, SqliteStatement* out) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return LastError(rc);
  }
  *out = SqliteStatement();
  out->stmt_ = stmt;
  return DbStatus();
}

DbStatus SqliteDb::QueryInt(const char* sql, int64_t* out) {
  SqliteStatement stmt;
  if (DbStatus s = Prepare(sql, &stmt); !s.ok()) return s;
  *out = stmt.Step() ? stmt.ColumnInt(0) : 0;
  return stmt.status();
}

DbStatus SqliteDb::LastError(int code) const { return DbStatus(code, sqlite3_errmsg(db_)); }

}  // namespace faultline
