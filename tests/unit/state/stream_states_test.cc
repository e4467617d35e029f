// The two participants of the agent's own state, through a real store on a real file: what one
// checkpoint writes is what the next start loads.
#include "agent/state/stream_states.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "agent/state/counter_states.h"
#include "agent/state/state_store.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

SavedStream Stream(const std::string& path, uint64_t inode, uint64_t read) {
  SavedStream s;
  s.source_id = "logs";
  s.mark = FileMark{path, 64769, inode, 0xfedcba9876543210ULL, 1024, read, "the tail\n", read - 9};
  s.state.committed = FramerPosition{read - 9, false, true};
  s.state.committed_line = 41;
  s.state.read_offset = read;
  s.state.read_line = 42;
  s.state.pending_hits = {{"gpu.oom", 42}};
  return s;
}

class ParticipantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("faultline-participants-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // One agent run: opens the store with both participants over `streams` and `counters`.
  struct Run {
    StreamStates::Snapshot streams;
    std::vector<CounterValue> counters;
    StreamStates stream_states{[this] { return streams; }};
    CounterStates counter_states{[this] { return counters; }};
    std::unique_ptr<StateStore> store;
  };
  std::unique_ptr<Run> Start() {
    auto run = std::make_unique<Run>();
    auto store = StateStore::Open(dir_, {&run->stream_states, &run->counter_states});
    EXPECT_TRUE(store.ok());
    if (store.ok()) run->store = std::move(store).value();
    return run;
  }

  std::string dir_;
};

TEST_F(ParticipantsTest, StreamsAndCountersOfOneCheckpointAreLoadedAtTheNextStart) {
  {
    auto run = Start();
    ASSERT_NE(run->store, nullptr);
    EXPECT_FALSE(run->stream_states.has_history("logs"));
    run->streams.streams = {Stream("/var/log/a.log", 11, 4096), Stream("/var/log/b.log", 12, 100)};
    run->streams.sources = {"logs"};
    run->counters = {{"faultline_lines_total", {{"source", "logs"}}, 1234},
                     {"faultline_signature_matches_total",
                      {{"signature", "gpu.oom"}, {"severity", "error"}, {"gpu", "0"}},
                      7}};
    ASSERT_TRUE(run->store->Checkpoint().ok());
  }
  auto run = Start();
  ASSERT_NE(run->store, nullptr);
  EXPECT_TRUE(run->store->loaded());
  EXPECT_TRUE(run->stream_states.has_history("logs"));
  EXPECT_GT(run->stream_states.checkpoint_time_ns(), 0);
  const std::vector<SavedStream>& saved = run->stream_states.saved("logs");
  ASSERT_EQ(2u, saved.size());
  const SavedStream& a = saved[0].mark.inode == 11 ? saved[0] : saved[1];
  const SavedStream expected = Stream("/var/log/a.log", 11, 4096);
  EXPECT_EQ(expected.mark.path, a.mark.path);
  EXPECT_EQ(expected.mark.head_hash, a.mark.head_hash);  // all 64 bits, through a signed column
  EXPECT_EQ(expected.mark.tail, a.mark.tail);
  EXPECT_EQ(expected.mark.resume_offset, a.mark.resume_offset);
  EXPECT_EQ(expected.state.committed, a.state.committed);
  EXPECT_EQ(41u, a.state.committed_line);
  EXPECT_EQ(42u, a.state.read_line);
  EXPECT_EQ(4096u, a.state.read_offset);
  EXPECT_EQ(expected.state.pending_hits, a.state.pending_hits);
  ASSERT_EQ(2u, run->counter_states.saved().size());
  for (const CounterValue& v : run->counter_states.saved()) {
    if (v.family == "faultline_lines_total") {
      EXPECT_EQ(1234, v.value);
    } else {
      EXPECT_EQ("0", v.labels.at("gpu"));
    }
  }
}

TEST_F(ParticipantsTest, AnEndedStreamAndARemovedCounterAreDeletedAndAFrozenStreamIsKept) {
  {
    auto run = Start();
    run->streams.streams = {Stream("/l/a.log", 1, 100), Stream("/l/b.log", 2, 100)};
    run->streams.sources = {"logs"};
    run->counters = {{"faultline_lines_total", {{"source", "logs"}}, 5},
                     {"faultline_lines_total", {{"source", "gone"}}, 9}};
    ASSERT_TRUE(run->store->Checkpoint().ok());
    run->streams.streams.pop_back();  // b.log ended
    run->counters.pop_back();
    ASSERT_TRUE(run->store->Checkpoint().ok());
    run->stream_states.Freeze();
    run->streams.streams.clear();  // the streams end as the sources stop: rows must stay
    ASSERT_TRUE(run->store->Checkpoint().ok());
  }
  auto run = Start();
  ASSERT_EQ(1u, run->stream_states.saved("logs").size());
  EXPECT_EQ("/l/a.log", run->stream_states.saved("logs")[0].mark.path);
  ASSERT_EQ(1u, run->counter_states.saved().size());
  EXPECT_EQ("logs", run->counter_states.saved()[0].labels.at("source"));
}

TEST_F(ParticipantsTest, NothingChangedWritesNoTransaction) {
  auto run = Start();
  run->streams.streams = {Stream("/l/a.log", 1, 100)};
  run->streams.sources = {"logs"};
  ASSERT_TRUE(run->store->Checkpoint().ok());
  const StateStore::Batch batch = run->store->Collect();
  EXPECT_TRUE(batch.parts.empty());
}

}  // namespace
}  // namespace faultline
