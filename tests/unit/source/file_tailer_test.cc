#include "agent/source/file_tailer.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

namespace faultline {
namespace {

namespace fs = std::filesystem;

// Records what each stream received, in order, per path and stream generation.
struct Recorder {
  struct Stream {
    std::string path;
    std::string bytes;
    int quiet = 0;
    bool ended = false;
  };
  std::vector<std::shared_ptr<Stream>> streams;

  FileConsumerFactory Factory() {
    return [this](const std::string& path) {
      auto stream = std::make_shared<Stream>();
      stream->path = path;
      streams.push_back(stream);
      struct Consumer : FileStreamConsumer {
        std::shared_ptr<Stream> s;
        void OnBytes(std::string_view b) override { s->bytes.append(b); }
        void OnQuiet() override { ++s->quiet; }
        void OnEnd() override { s->ended = true; }
      };
      auto c = std::make_unique<Consumer>();
      c->s = stream;
      return c;
    };
  }
  std::string All() const {
    std::string out;
    for (const auto& s : streams) out += s->bytes;
    return out;
  }
};

class FileTailerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("faultline_tail_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<FileTailer> Tailer(bool start_at_end, int quiet_ms = 60000,
                                     int rotate_wait_ms = 60000,
                                     const std::string& glob = "*.log") {
    FileTailerOptions options;
    options.patterns = {(dir_ / glob).string()};
    options.start_at_end = start_at_end;
    options.poll_interval = std::chrono::milliseconds(20);
    options.quiet_after = std::chrono::milliseconds(quiet_ms);
    options.rotate_wait = std::chrono::milliseconds(rotate_wait_ms);
    return std::make_unique<FileTailer>(io_, options, recorder_.Factory());
  }
  void Append(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::app) << text;
  }
  // app.log ("one") is renamed to app.log.1 while its writer still holds it and appends "two";
  // a new app.log gets "three".
  void RotateWithALateWriteToTheOldFile() {
    std::ofstream old_writer(dir_ / "app.log", std::ios::app);
    fs::rename(dir_ / "app.log", dir_ / "app.log.1");
    old_writer << "two\n" << std::flush;
    Append("app.log", "three\n");
  }
  bool RotatedStreamsAreComplete() const {
    return recorder_.streams.size() == 2 && recorder_.streams[0]->bytes == "one\ntwo\n" &&
           recorder_.streams[1]->bytes == "three\n";
  }
  // Runs the loop until `done` holds (bounded, so a bug fails instead of hanging).
  template <typename Pred>
  bool RunUntil(Pred done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io_.run_for(std::chrono::milliseconds(10));
      io_.restart();
    }
    return true;
  }

  fs::path dir_;
  asio::io_context io_;
  Recorder recorder_;
};

TEST_F(FileTailerTest, StartAtEndSkipsExistingContentAndFollowsAppends) {
  Append("a.log", "old line\n");
  auto tailer = Tailer(/*start_at_end=*/true);
  tailer->Start();
  Append("a.log", "new line\n");
  ASSERT_TRUE(RunUntil([&] { return recorder_.All() == "new line\n"; })) << recorder_.All();
}

TEST_F(FileTailerTest, StartAtBeginningReadsExistingContent) {
  Append("a.log", "old line\n");
  auto tailer = Tailer(/*start_at_end=*/false);
  tailer->Start();
  ASSERT_TRUE(RunUntil([&] { return recorder_.All() == "old line\n"; }));
}

TEST_F(FileTailerTest, FileCreatedAfterStartIsReadFromTheBeginning) {
  auto tailer = Tailer(/*start_at_end=*/true);
  tailer->Start();
  Append("late.log", "first\nsecond\n");
  ASSERT_TRUE(RunUntil([&] { return recorder_.All() == "first\nsecond\n"; }));
}

TEST_F(FileTailerTest, TruncationStartsANewStreamFromZero) {
  Append("a.log", "before truncation\n");
  auto tailer = Tailer(/*start_at_end=*/false);
  tailer->Start();
  ASSERT_TRUE(RunUntil([&] { return recorder_.All() == "before truncation\n"; }));
  fs::resize_file(dir_ / "a.log", 0);
  Append("a.log", "after\n");
  ASSERT_TRUE(RunUntil([&] { return recorder_.streams.size() == 2 &&
                                    recorder_.streams[1]->bytes == "after\n"; }));
  EXPECT_TRUE(recorder_.streams[0]->ended);
  EXPECT_EQ(1u, tailer->truncations());
}

TEST_F(FileTailerTest, TruncateAndRewriteToTheSameSizeIsNoticed) {
  Append("a.log", "first version\n");
  auto tailer = Tailer(/*start_at_end=*/false);
  tailer->Start();
  ASSERT_TRUE(RunUntil([&] { return recorder_.All() == "first version\n"; }));
  fs::resize_file(dir_ / "a.log", 0);
  Append("a.log", "other content\nand more\n");
  ASSERT_TRUE(RunUntil([&] { return recorder_.streams.size() == 2 &&
                                    recorder_.streams[1]->bytes == "other content\nand more\n"; }));
  EXPECT_EQ(1u, tailer->truncations());
}

TEST_F(FileTailerTest, RotationByRenameDrainsTheOldFileAndFollowsTheNew) {
  Append("app.log", "one\n");
  auto tailer = Tailer(/*start_at_end=*/false, /*quiet_ms=*/50, /*rotate_wait_ms=*/50);
  tailer->Start();
  ASSERT_TRUE(RunUntil([&] { return recorder_.All() == "one\n"; }));
  RotateWithALateWriteToTheOldFile();
  ASSERT_TRUE(RunUntil([&] { return RotatedStreamsAreComplete() && recorder_.streams[0]->ended; }));
  EXPECT_EQ(1u, tailer->rotations());
}

TEST_F(FileTailerTest, RotatedFileRenamedToAMatchingNameIsNotReadTwice) {
  Append("app.log", "one\n");
  auto tailer = Tailer(/*start_at_end=*/false, 60000, 60000, /*glob=*/"app.log*");
  tailer->Start();
  ASSERT_TRUE(RunUntil([&] { return recorder_.All() == "one\n"; }));
  RotateWithALateWriteToTheOldFile();
  ASSERT_TRUE(RunUntil([&] { return RotatedStreamsAreComplete(); }));
  io_.run_for(std::chrono::milliseconds(200));  // several more polls
  EXPECT_EQ(2u, recorder_.streams.size());
  EXPECT_EQ("one\ntwo\nthree\n", recorder_.All());
}

TEST_F(FileTailerTest, RotatedFileKeepsBeingReadAfterAPauseWithinRotateWait) {
  Append("app.log", "one\n");
  auto tailer = Tailer(/*start_at_end=*/false, /*quiet_ms=*/20, /*rotate_wait_ms=*/60000);
  tailer->Start();
  ASSERT_TRUE(RunUntil([&] { return recorder_.All() == "one\n"; }));
  std::ofstream old_writer(dir_ / "app.log", std::ios::app);
  fs::rename(dir_ / "app.log", dir_ / "app.log.1");
  // The old stream goes quiet (OnQuiet) but is not ended...
  ASSERT_TRUE(RunUntil([&] { return recorder_.streams[0]->quiet >= 1; }));
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(recorder_.streams[0]->ended);
  // ...so a late write by a writer that never reopened is still read.
  old_writer << "late\n" << std::flush;
  ASSERT_TRUE(RunUntil([&] { return recorder_.streams[0]->bytes == "one\nlate\n"; }));
}

TEST_F(FileTailerTest, StopEndsEveryStream) {
  Append("a.log", "partial line without newline");
  auto tailer = Tailer(/*start_at_end=*/false);
  tailer->Start();
  ASSERT_TRUE(RunUntil([&] { return recorder_.All() == "partial line without newline"; }));
  tailer->Stop();
  EXPECT_TRUE(recorder_.streams[0]->ended);
}

TEST_F(FileTailerTest, DeletedFileIsDrainedAndEnded) {
  Append("a.log", "x\n");
  auto tailer = Tailer(/*start_at_end=*/false);
  tailer->Start();
  ASSERT_TRUE(RunUntil([&] { return recorder_.All() == "x\n"; }));
  fs::remove(dir_ / "a.log");
  ASSERT_TRUE(RunUntil([&] { return recorder_.streams[0]->ended; }));
  EXPECT_EQ(0u, tailer->open_files());
}

TEST_F(FileTailerTest, QuietStreamIsToldOnce) {
  Append("a.log", "x\n");
  auto tailer = Tailer(/*start_at_end=*/false, /*quiet_ms=*/30);
  tailer->Start();
  ASSERT_TRUE(RunUntil([&] { return recorder_.streams.size() == 1 &&
                                    recorder_.streams[0]->quiet == 1; }));
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(1, recorder_.streams[0]->quiet);
}

TEST_F(FileTailerTest, LargeFileIsReadCompletelyInBudgetedSlices) {
  const std::string line(999, 'x');
  {
    std::ofstream out(dir_ / "big.log");
    for (int i = 0; i < 10000; ++i) out << line << "\n";
  }
  auto tailer = Tailer(/*start_at_end=*/false);
  tailer->Start();
  ASSERT_TRUE(RunUntil([&] { return recorder_.All().size() == 10000u * 1000; }));
}

}  // namespace
}  // namespace faultline
