#include "agent/state/state_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace faultline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A component keeping a map of name -> number in a table of its own. Version 1 has only the
// table `notes_v(name, value)`; version 2 adds a column `unit` (default 'x').
class Notes : public StateParticipant {
 public:
  explicit Notes(int version = 2, std::string component = "notes")
      : version_(version), component_(std::move(component)) {}

  std::string_view component() const override { return component_; }
  int schema_version() const override { return version_; }
  DbStatus Migrate(SqliteDb& db, int from) override {
    migrated_from.push_back(from);
    if (from < 1) {
      if (DbStatus s = db.Exec(
              ("CREATE TABLE " + table() + " (name TEXT PRIMARY KEY, value INTEGER)").c_str());
          !s.ok()) {
        return s;
      }
    }
    if (from < 2 && version_ >= 2) {
      return db.Exec(
          ("ALTER TABLE " + table() + " ADD COLUMN unit TEXT NOT NULL DEFAULT 'x'").c_str());
    }
    return DbStatus();
  }
  DbStatus Load(SqliteDb& db) override {
    ++loads;
    SqliteStatement read;
    const std::string columns = version_ >= 2 ? "name, value, unit" : "name, value, 'x'";
    if (DbStatus s = db.Prepare("SELECT " + columns + " FROM " + table(), &read); !s.ok()) return s;
    while (read.Step()) {
      loaded[read.ColumnText(0)] = read.ColumnInt(1);
      units[read.ColumnText(0)] = read.ColumnText(2);
    }
    return read.status();
  }
  std::unique_ptr<CheckpointPart> Collect(bool full) override {
    last_full = full;
    if (pending.empty() && !fail_write) return nullptr;
    auto part = std::make_unique<Part>();
    part->owner = this;
    part->rows = pending;  // kept until committed, so a failed checkpoint loses nothing
    return part;
  }

  std::map<std::string, int64_t> pending;  // written at the next checkpoint
  std::map<std::string, int64_t> loaded;
  std::map<std::string, std::string> units;
  std::vector<int> migrated_from;
  int loads = 0;
  int committed = 0;
  bool last_full = false;
  bool fail_write = false;

 private:
  struct Part : CheckpointPart {
    Notes* owner;
    std::map<std::string, int64_t> rows;
    DbStatus Write(SqliteDb& db) override {
      if (owner->fail_write) return DbStatus(SQLITE_ERROR, "refused by the test");
      SqliteStatement upsert;
      if (DbStatus s = db.Prepare(
              "INSERT OR REPLACE INTO " + owner->table() + " (name, value) VALUES (?1, ?2)",
              &upsert);
          !s.ok()) {
        return s;
      }
      for (const auto& [name, value] : rows) {
        upsert.Bind(1, name);
        upsert.Bind(2, value);
        if (DbStatus s = upsert.Run(); !s.ok()) return s;
      }
      return DbStatus();
    }
    void Committed() override {
      ++owner->committed;
      for (const auto& [name, value] : rows) owner->pending.erase(name);
    }
  };
  std::string table() const { return component_ + "_v"; }

  const int version_;
  const std::string component_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("faultline-state-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string db_path() const { return dir_ + "/faultline.db"; }

  std::unique_ptr<StateStore> OpenOrFail(std::vector<StateParticipant*> participants) {
    Result<std::unique_ptr<StateStore>> store = StateStore::Open(dir_, std::move(participants));
    if (!store.ok()) {
      ADD_FAILURE() << FormatErrors(store.errors());
      return nullptr;
    }
    return std::move(store).value();
  }
  // Runs `sql` on the file with a connection of the test's own.
  void Sql(const std::string& sql) {
    SqliteDb db;
    ASSERT_TRUE(SqliteDb::Open(db_path(), SQLITE_OPEN_READWRITE, &db).ok());
    DbStatus s = db.Exec(sql.c_str());
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // A saved store holding one row a=1 for `notes`.
  void SaveOneRow(Notes& notes) {
    auto store = OpenOrFail({&notes});
    ASSERT_NE(store, nullptr);
    notes.pending["a"] = 1;
    ASSERT_TRUE(store->Checkpoint().ok());
  }

  std::string dir_;
};

TEST_F(StateStoreTest, AFirstOpenCreatesTheFolderAndAWalFileAndMigratesFromNothing) {
  Notes notes;
  auto store = OpenOrFail({&notes});
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->writable());
  EXPECT_FALSE(store->loaded());
  EXPECT_EQ(std::vector<int>{0}, notes.migrated_from);
  EXPECT_EQ(0, notes.loads);  // nothing saved yet
  SqliteDb db;
  ASSERT_TRUE(SqliteDb::Open(db_path(), SQLITE_OPEN_READONLY, &db).ok());
  SqliteStatement mode;
  ASSERT_TRUE(db.Prepare("PRAGMA journal_mode", &mode).ok());
  ASSERT_TRUE(mode.Step());
  EXPECT_EQ("wal", mode.ColumnText(0));
  int64_t version = 0;
  ASSERT_TRUE(db.QueryInt("PRAGMA user_version", &version).ok());
  EXPECT_EQ(StateStore::kStoreVersion, version);
}

TEST_F(StateStoreTest, WhatACheckpointCommittedIsLoadedAtTheNextOpen) {
  {
    Notes notes;
    SaveOneRow(notes);
    EXPECT_EQ(1, notes.committed);
  }
  Notes again;
  auto store = OpenOrFail({&again});
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->loaded());
  EXPECT_EQ((std::map<std::string, int64_t>{{"a", 1}}), again.loaded);
  EXPECT_TRUE(again.migrated_from.empty());  // already at its version
}

TEST_F(StateStoreTest, ACheckpointIsOneTransactionAcrossParticipants) {
  Notes first(2, "first");
  Notes second(2, "second");
  {
    auto store = OpenOrFail({&first, &second});
    ASSERT_NE(store, nullptr);
    first.pending["a"] = 1;
    second.fail_write = true;
    const DbStatus s = store->Checkpoint();
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr("refused by the test"));
    EXPECT_EQ(0, first.committed);  // told nothing: its write was rolled back
  }
  Notes first_again(2, "first");
  Notes second_again(2, "second");
  auto store = OpenOrFail({&first_again, &second_again});
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(first_again.loaded.empty()) << "the failed checkpoint left part of itself behind";
}

TEST_F(StateStoreTest, AFileOfThePreviousVersionIsMigratedKeepingItsRows) {
  {
    Notes v1(1);
    SaveOneRow(v1);
  }
  Notes v2(2);
  auto store = OpenOrFail({&v2});
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(std::vector<int>{1}, v2.migrated_from);
  EXPECT_EQ(1, v2.loaded["a"]);
  EXPECT_EQ("x", v2.units["a"]);  // the new column, at its default
  v2.pending["b"] = 2;
  EXPECT_TRUE(store->Checkpoint().ok());
}

TEST_F(StateStoreTest, AFileWithANewerStoreLayoutIsRefusedAndLeftAsItWas) {
  {
    Notes notes;
    SaveOneRow(notes);
  }
  Sql("PRAGMA user_version = 99");
  const std::string before = ReadAll(db_path());
  Notes notes;
  Result<std::unique_ptr<StateStore>> store = StateStore::Open(dir_, {&notes});
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.errors()[0].message, HasSubstr("newer faultline"));
  EXPECT_THAT(store.errors()[0].message, HasSubstr("version 99"));
  EXPECT_EQ(before, ReadAll(db_path()));
  EXPECT_EQ(0, notes.loads);
}

TEST_F(StateStoreTest, AComponentWhoseTablesAreNewerIsRefusedAndTheFileLeftAsItWas) {
  {
    Notes notes;
    SaveOneRow(notes);
  }
  Sql("UPDATE faultline_components SET version = 7 WHERE component = 'notes'");
  const std::string before = ReadAll(db_path());
  Notes notes;
  Result<std::unique_ptr<StateStore>> store = StateStore::Open(dir_, {&notes});
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.errors()[0].message, HasSubstr("'notes' tables are at version 7"));
  EXPECT_EQ(before, ReadAll(db_path()));
  EXPECT_TRUE(notes.migrated_from.empty());
}

TEST_F(StateStoreTest, AFileOfGarbageIsMovedAsideAndTheStoreStartsEmpty) {
  fs::create_directories(dir_);
  const std::string garbage(8192, 'z');
  std::ofstream(db_path(), std::ios::binary) << garbage;
  Notes notes;
  auto store = OpenOrFail({&notes});
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->writable());
  EXPECT_FALSE(store->loaded());
  EXPECT_THAT(store->moved_aside(), StartsWith(db_path() + ".corrupt-"));
  EXPECT_EQ(garbage, ReadAll(store->moved_aside()));
  notes.pending["a"] = 1;
  EXPECT_TRUE(store->Checkpoint().ok());
}

TEST_F(StateStoreTest, ATruncatedFileIsMovedAside) {
  {
    Notes notes;
    auto store = OpenOrFail({&notes});
    ASSERT_NE(store, nullptr);
    // Enough rows for many pages, so that cutting the file loses pages its tree points to.
    for (int i = 0; i < 20000; ++i) notes.pending["row" + std::to_string(i)] = i;
    ASSERT_TRUE(store->Checkpoint().ok());
  }
  // Fold the WAL into the file, then cut the file in half.
  Sql("PRAGMA wal_checkpoint(TRUNCATE)");
  const auto size = fs::file_size(db_path());
  ASSERT_GT(size, 64u * 1024);
  fs::resize_file(db_path(), size / 2);
  Notes notes;
  auto store = OpenOrFail({&notes});
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->moved_aside().empty());
  EXPECT_FALSE(store->loaded());
  EXPECT_TRUE(notes.loaded.empty());
}

TEST_F(StateStoreTest, AnEmptyFileIsMovedAside) {
  fs::create_directories(dir_);
  std::ofstream(db_path(), std::ios::binary).flush();
  Notes notes;
  auto store = OpenOrFail({&notes});
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->moved_aside().empty());
  EXPECT_TRUE(store->writable());
}

TEST_F(StateStoreTest, ASecondStoreOnTheSameFolderIsRefusedNamingTheHolder) {
  Notes notes;
  auto first = OpenOrFail({&notes});
  ASSERT_NE(first, nullptr);
  Notes other;
  Result<std::unique_ptr<StateStore>> second = StateStore::Open(dir_, {&other});
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.errors()[0].message, HasSubstr("in use by another faultline"));
  EXPECT_THAT(second.errors()[0].message, HasSubstr("pid " + std::to_string(getpid())));
  first.reset();  // the lock goes with the store
  EXPECT_NE(OpenOrFail({&other}), nullptr);
}

TEST_F(StateStoreTest, AFolderThatCannotBeCreatedGivesAStoreThatRetriesUntilItCan) {
  // A regular file where state.dir's parent should be: no folder can be made there.
  const std::string parent = dir_ + "-parent";
  std::ofstream(parent) << "not a folder";
  dir_ = parent + "/state";
  Notes notes;
  auto store = OpenOrFail({&notes});
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->writable());
  EXPECT_THAT(store->unavailable_reason(), HasSubstr("cannot create state.dir"));
  notes.pending["a"] = 1;
  EXPECT_FALSE(store->Checkpoint().ok());
  fs::remove(parent);  // the fault goes away: the next checkpoint opens the store
  EXPECT_TRUE(store->Checkpoint().ok());
  EXPECT_TRUE(store->writable());
  EXPECT_TRUE(notes.last_full);  // opened late: the whole state is written
  EXPECT_TRUE(store->unavailable_reason().empty());
  fs::remove_all(parent);
}

// Sets the store connection's max_page_count at each checkpoint, before the others write: a file
// that may not grow is what a full disk is to SQLite (SQLITE_FULL).
struct PageLimit : StateParticipant {
  int64_t pages = 1 << 30;
  std::string_view component() const override { return "page_limit"; }
  int schema_version() const override { return 1; }
  DbStatus Migrate(SqliteDb&, int) override { return DbStatus(); }
  DbStatus Load(SqliteDb&) override { return DbStatus(); }
  std::unique_ptr<CheckpointPart> Collect(bool) override {
    struct Limit : CheckpointPart {
      int64_t pages;
      DbStatus Write(SqliteDb& db) override {
        return db.Exec(("PRAGMA max_page_count = " + std::to_string(pages)).c_str());
      }
    };
    auto part = std::make_unique<Limit>();
    part->pages = pages;
    return part;
  }
};

TEST_F(StateStoreTest, AFullFileFailsTheCheckpointAndALaterOneWritesEverythingOnceThereIsRoom) {
  PageLimit limit;
  Notes notes;
  auto store = OpenOrFail({&limit, &notes});
  ASSERT_NE(store, nullptr);
  notes.pending["small"] = 1;
  ASSERT_TRUE(store->Checkpoint().ok());
  int64_t pages = 0;
  {
    SqliteDb db;
    ASSERT_TRUE(SqliteDb::Open(db_path(), SQLITE_OPEN_READONLY, &db).ok());
    ASSERT_TRUE(db.QueryInt("PRAGMA page_count", &pages).ok());
  }
  limit.pages = pages;
  const std::string big(4096, 'b');
  for (int i = 0; i < 200; ++i) notes.pending[big + std::to_string(i)] = i;
  const DbStatus full = store->Checkpoint();
  EXPECT_EQ(SQLITE_FULL, full.primary_code()) << full.ToString();
  EXPECT_EQ(1, notes.committed);
  EXPECT_TRUE(store->writable());  // a full disk is retried, not given up on
  limit.pages = 1 << 30;
  EXPECT_TRUE(store->Checkpoint().ok());
  EXPECT_EQ(2, notes.committed);
  store.reset();
  PageLimit limit_again;
  Notes again;
  auto reopened = OpenOrFail({&limit_again, &again});
  EXPECT_EQ(201u, again.loaded.size());
}

}  // namespace
}  // namespace faultline
