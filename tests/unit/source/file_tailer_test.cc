#include "agent/source/file_tailer.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "tests/support/wait.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing::RunUntil;

// Records what each stream received, in order, per path and stream generation.
struct Recorder {
  struct Stream {
    std::string path;
    std::string bytes;
    int quiet = 0;
    bool ended = false;
  };
  std::vector<std::shared_ptr<Stream>> streams;

  StreamConsumerFactory Factory() {
    return [this](const std::string& path) {
      auto stream = std::make_shared<Stream>();
      stream->path = path;
      streams.push_back(stream);
      struct Consumer : StreamConsumer {
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
  // Everything read under `path`, in every stream of it.
  std::string Of(const std::string& path) const {
    std::string out;
    for (const auto& s : streams) {
      if (s->path == path) out += s->bytes;
    }
    return out;
  }
  size_t StreamsOf(const std::string& path) const {
    return std::count_if(streams.begin(), streams.end(),
                         [&](const auto& s) { return s->path == path; });
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

  FileTailerOptions Options(bool start_at_end, int quiet_ms = 60000, int rotate_wait_ms = 60000,
                            const std::string& glob = "*.log") const {
    FileTailerOptions options;
    options.patterns = {(dir_ / glob).string()};
    options.start_at_end = start_at_end;
    options.poll_interval = std::chrono::milliseconds(20);
    options.quiet_after = std::chrono::milliseconds(quiet_ms);
    options.rotate_wait = std::chrono::milliseconds(rotate_wait_ms);
    return options;
  }
  std::unique_ptr<FileTailer> Tailer(bool start_at_end, int quiet_ms = 60000,
                                     int rotate_wait_ms = 60000,
                                     const std::string& glob = "*.log") {
    return Tailer(Options(start_at_end, quiet_ms, rotate_wait_ms, glob));
  }
  std::unique_ptr<FileTailer> Tailer(FileTailerOptions options) {
    return std::make_unique<FileTailer>(io_, std::move(options), recorder_.Factory());
  }
  void Append(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::app) << text;
  }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  // Options under which only inotify can wake a read: the poll and the rescan never come.
  FileTailerOptions EventsOnly(const std::string& glob = "*.log") const {
    FileTailerOptions options = Options(/*start_at_end=*/false, 60000, 60000, glob);
    options.poll_interval = std::chrono::seconds(60);
    options.rescan_interval = std::chrono::seconds(60);
    return options;
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

  fs::path dir_;
  asio::io_context io_;
  Recorder recorder_;
};

TEST_F(FileTailerTest, StartAtEndSkipsExistingContentAndFollowsAppends) {
  Append("a.log", "old line\n");
  auto tailer = Tailer(/*start_at_end=*/true);
  tailer->Start();
  Append("a.log", "new line\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "new line\n"; })) << recorder_.All();
}

TEST_F(FileTailerTest, StartAtBeginningReadsExistingContent) {
  Append("a.log", "old line\n");
  auto tailer = Tailer(/*start_at_end=*/false);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "old line\n"; }));
}

TEST_F(FileTailerTest, FileCreatedAfterStartIsReadFromTheBeginning) {
  auto tailer = Tailer(/*start_at_end=*/true);
  tailer->Start();
  Append("late.log", "first\nsecond\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "first\nsecond\n"; }));
}

TEST_F(FileTailerTest, TruncationStartsANewStreamFromZero) {
  Append("a.log", "before truncation\n");
  auto tailer = Tailer(/*start_at_end=*/false);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "before truncation\n"; }));
  fs::resize_file(dir_ / "a.log", 0);
  Append("a.log", "after\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.streams.size() == 2 &&
                                    recorder_.streams[1]->bytes == "after\n"; }));
  EXPECT_TRUE(recorder_.streams[0]->ended);
  EXPECT_EQ(1u, tailer->truncations());
}

TEST_F(FileTailerTest, TruncateAndRewriteToTheSameSizeIsNoticed) {
  Append("a.log", "first version\n");
  auto tailer = Tailer(/*start_at_end=*/false);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "first version\n"; }));
  fs::resize_file(dir_ / "a.log", 0);
  Append("a.log", "other content\nand more\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.streams.size() == 2 &&
                                    recorder_.streams[1]->bytes == "other content\nand more\n"; }));
  EXPECT_EQ(1u, tailer->truncations());
}

TEST_F(FileTailerTest, RotationByRenameDrainsTheOldFileAndFollowsTheNew) {
  Append("app.log", "one\n");
  auto tailer = Tailer(/*start_at_end=*/false, /*quiet_ms=*/50, /*rotate_wait_ms=*/50);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "one\n"; }));
  RotateWithALateWriteToTheOldFile();
  ASSERT_TRUE(RunUntil(io_, [&] { return RotatedStreamsAreComplete() && recorder_.streams[0]->ended; }));
  EXPECT_EQ(1u, tailer->rotations());
}

TEST_F(FileTailerTest, RotatedFileRenamedToAMatchingNameIsNotReadTwice) {
  Append("app.log", "one\n");
  auto tailer = Tailer(/*start_at_end=*/false, 60000, 60000, /*glob=*/"app.log*");
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "one\n"; }));
  RotateWithALateWriteToTheOldFile();
  ASSERT_TRUE(RunUntil(io_, [&] { return RotatedStreamsAreComplete(); }));
  io_.run_for(std::chrono::milliseconds(200));  // several more polls
  EXPECT_EQ(2u, recorder_.streams.size());
  EXPECT_EQ("one\ntwo\nthree\n", recorder_.All());
}

TEST_F(FileTailerTest, RotatedFileKeepsBeingReadAfterAPauseWithinRotateWait) {
  Append("app.log", "one\n");
  auto tailer = Tailer(/*start_at_end=*/false, /*quiet_ms=*/20, /*rotate_wait_ms=*/60000);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "one\n"; }));
  std::ofstream old_writer(dir_ / "app.log", std::ios::app);
  fs::rename(dir_ / "app.log", dir_ / "app.log.1");
  // The old stream goes quiet (OnQuiet) but is not ended...
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.streams[0]->quiet >= 1; }));
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(recorder_.streams[0]->ended);
  // ...so a late write by a writer that never reopened is still read.
  old_writer << "late\n" << std::flush;
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.streams[0]->bytes == "one\nlate\n"; }));
}

TEST_F(FileTailerTest, StopEndsEveryStream) {
  Append("a.log", "partial line without newline");
  auto tailer = Tailer(/*start_at_end=*/false);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "partial line without newline"; }));
  tailer->Stop();
  EXPECT_TRUE(recorder_.streams[0]->ended);
}

TEST_F(FileTailerTest, DeletedFileIsDrainedAndEndedOnceQuietForRotateWait) {
  Append("a.log", "x\n");
  auto tailer = Tailer(/*start_at_end=*/false, /*quiet_ms=*/60000, /*rotate_wait_ms=*/50);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "x\n"; }));
  fs::remove(dir_ / "a.log");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.streams[0]->ended; }));
  EXPECT_EQ(0u, tailer->open_files());
}

TEST_F(FileTailerTest, QuietStreamIsToldOnce) {
  Append("a.log", "x\n");
  auto tailer = Tailer(/*start_at_end=*/false, /*quiet_ms=*/30);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.streams.size() == 1 &&
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
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All().size() == 10000u * 1000; }));
}

TEST_F(FileTailerTest, MoreFilesThanDescriptorsAreAllReadExactlyOnce) {
  constexpr int kFiles = 40;
  const auto name = [](int i) { return "f" + std::to_string(i) + ".log"; };
  for (int i = 0; i < kFiles; ++i) Append(name(i), "start\n");
  FileTailerOptions options = EventsOnly();
  options.descriptors = std::make_shared<DescriptorBudget>(4);
  auto tailer = Tailer(options);
  tailer->Start();
  std::string expected = "start\n";
  for (int round = 0; round < 3; ++round) {
    const std::string line = "round " + std::to_string(round) + "\n";
    for (int i = 0; i < kFiles; ++i) Append(name(i), line);
    expected += line;
    ASSERT_TRUE(RunUntil(io_, [&] {
      for (int i = 0; i < kFiles; ++i) {
        if (recorder_.Of(P(name(i))) != expected) return false;
      }
      return true;
    })) << "round " << round;
    EXPECT_LE(tailer->open_files(), 4u);
  }
  EXPECT_EQ(static_cast<size_t>(kFiles), recorder_.streams.size());  // none restarted
  EXPECT_GE(tailer->reopens(), static_cast<uint64_t>(kFiles));
}

TEST_F(FileTailerTest, FileRewrittenWhileClosedIsReadAgainFromTheStart) {
  Append("a.log", "first version\n");
  Append("b.log", "b\n");
  FileTailerOptions options = EventsOnly();
  options.descriptors = std::make_shared<DescriptorBudget>(1);
  auto tailer = Tailer(options);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All().size() == 16u; }));
  Append("b.log", "b2\n");  // b takes the one descriptor; a is followed by stat
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.Of(P("b.log")) == "b\nb2\n"; }));
  std::ofstream(dir_ / "a.log", std::ios::trunc) << "other version\n";  // same size
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.StreamsOf(P("a.log")) == 2u; }));
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.streams.back()->bytes == "other version\n"; }));
  EXPECT_EQ(1u, tailer->truncations());
}

TEST_F(FileTailerTest, ClosedFileRenamedRightAfterAWriteIsReadUnderItsNewName) {
  Append("a.log", "one\n");
  Append("b.log", "b\n");
  FileTailerOptions options = EventsOnly();
  options.descriptors = std::make_shared<DescriptorBudget>(1);
  auto tailer = Tailer(options);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All().size() == 6u; }));
  Append("b.log", "b2\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.Of(P("b.log")) == "b\nb2\n"; }));
  // a.log has no descriptor now; it is written and rotated before the tailer looks again.
  Append("a.log", "two\n");
  fs::rename(dir_ / "a.log", dir_ / "a.log.1");
  Append("a.log", "three\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.Of(P("a.log")) == "one\ntwo\nthree\n"; }))
      << recorder_.Of(P("a.log"));
  EXPECT_EQ(1u, tailer->rotations());
}

TEST_F(FileTailerTest, IdleTicksDoNotWalkTheGlobsAndNewFilesAreFoundByTheirEvents) {
  fs::create_directories(dir_ / "a" / "b");
  Append("a/b/old.log", "x\n");
  FileTailerOptions options = Options(/*start_at_end=*/false, 60000, 60000, "**/*.log");
  options.rescan_interval = std::chrono::seconds(60);
  auto tailer = Tailer(options);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "x\n"; }));
  io_.run_for(std::chrono::milliseconds(200));  // ten poll ticks
  EXPECT_EQ(1u, tailer->rescans());
  fs::create_directories(dir_ / "c" / "d");
  Append("c/d/new.log", "y\n");
  Append("a/new.log", "z\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All().size() == 6u; }));
  EXPECT_EQ("y\n", recorder_.Of(P("c/d/new.log")));
  EXPECT_EQ(1u, tailer->rescans());
}

TEST_F(FileTailerTest, HardLinkedNamesAreReadOnceAndTheSecondTakesOverWhenTheFirstGoes) {
  Append("a.log", "one\n");
  fs::create_hard_link(dir_ / "a.log", dir_ / "b.log");
  FileTailerOptions options = Options(/*start_at_end=*/false);
  options.rescan_interval = std::chrono::milliseconds(50);
  auto tailer = Tailer(options);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "one\n"; }));
  fs::remove(dir_ / "a.log");
  Append("b.log", "two\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "one\ntwo\n"; })) << recorder_.All();
  io_.run_for(std::chrono::milliseconds(200));  // several rescans
  EXPECT_EQ("one\ntwo\n", recorder_.All());
  EXPECT_EQ(1u, recorder_.streams.size());
}

TEST_F(FileTailerTest, RescanIntervalWalksTheGlobsAgain) {
  FileTailerOptions options = Options(/*start_at_end=*/false);
  options.rescan_interval = std::chrono::milliseconds(30);
  auto tailer = Tailer(options);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return tailer->rescans() >= 3u; }));
}

// The kubelet layout: containers/x.log -> pods/uid/c/0.log, which the runtime rotates to
// 0.log.<timestamp> and recreates.
class LinkedLogTest : public FileTailerTest {
 protected:
  void SetUp() override {
    FileTailerTest::SetUp();
    fs::create_directories(dir_ / "containers");
    fs::create_directories(dir_ / "pods" / "uid" / "c");
    Append("pods/uid/c/0.log", "");
    fs::create_symlink(dir_ / "pods" / "uid" / "c" / "0.log", dir_ / "containers" / "x.log");
  }
  // Writes `lines` lines to the current 0.log, then rotates it.
  std::string WriteAndRotate(int generation, int lines) {
    std::string written;
    for (int i = 0; i < lines; ++i) {
      written += "gen " + std::to_string(generation) + " line " + std::to_string(i) + "\n";
    }
    Append("pods/uid/c/0.log", written);
    fs::rename(dir_ / "pods/uid/c/0.log",
               dir_ / ("pods/uid/c/0.log.2024013112000" + std::to_string(generation)));
    Append("pods/uid/c/0.log", "");
    return written;
  }
  static size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }
};

TEST_F(LinkedLogTest, RotationsBehindTheLinkAreReadAtInotifyLatency) {
  auto tailer = Tailer(EventsOnly("containers/*.log"));
  tailer->Start();
  size_t expected = 0;
  for (int generation = 0; generation < 10; ++generation) {
    expected += Lines(WriteAndRotate(generation, 100));
    io_.run_for(std::chrono::milliseconds(50));
    io_.restart();
  }
  ASSERT_TRUE(RunUntil(io_, [&] { return Lines(recorder_.All()) == expected; }))
      << Lines(recorder_.All()) << " of " << expected;
  EXPECT_EQ(10u, tailer->rotations());
}

TEST_F(LinkedLogTest, GenerationsRotatedBeforeTheTailerLooksAreStillRead) {
  auto tailer = Tailer(EventsOnly("containers/*.log"));
  tailer->Start();
  std::string expected;
  for (int generation = 0; generation < 10; ++generation) {
    expected += WriteAndRotate(generation, 100);
  }
  ASSERT_TRUE(RunUntil(io_, [&] { return Lines(recorder_.All()) == Lines(expected); }))
      << Lines(recorder_.All()) << " of " << Lines(expected);
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(Lines(expected), Lines(recorder_.All()));
}

TEST_F(LinkedLogTest, TargetRecreatedAfterTheTailerSawItGoIsFollowed) {
  auto tailer = Tailer(EventsOnly("containers/*.log"));
  tailer->Start();
  Append("pods/uid/c/0.log", "before\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "before\n"; }));
  fs::rename(dir_ / "pods/uid/c/0.log", dir_ / "pods/uid/c/0.log.20240131-120000");
  io_.run_for(std::chrono::milliseconds(50));  // the link dangles for a while
  io_.restart();
  Append("pods/uid/c/0.log", "after\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "before\nafter\n"; }))
      << recorder_.All();
}

TEST_F(LinkedLogTest, ALinkPointedElsewhereIsFollowedToItsNewTarget) {
  auto tailer = Tailer(EventsOnly("containers/*.log"));
  tailer->Start();
  Append("pods/uid/c/0.log", "old target\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "old target\n"; }));
  fs::create_directories(dir_ / "pods" / "uid2" / "c");
  Append("pods/uid2/c/0.log", "");
  fs::create_symlink(dir_ / "pods" / "uid2" / "c" / "0.log", dir_ / "containers" / "tmp");
  fs::rename(dir_ / "containers" / "tmp", dir_ / "containers" / "x.log");
  io_.run_for(std::chrono::milliseconds(50));
  Append("pods/uid2/c/0.log", "new target\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "old target\nnew target\n"; }))
      << recorder_.All();
}

TEST_F(LinkedLogTest, ALinkWhoseTargetAppearsLaterIsFollowedWhenItDoes) {
  fs::create_directories(dir_ / "pods" / "uid3" / "c");
  fs::create_symlink(dir_ / "pods" / "uid3" / "c" / "0.log", dir_ / "containers" / "y.log");
  auto tailer = Tailer(EventsOnly("containers/*.log"));
  tailer->Start();
  Append("pods/uid3/c/0.log", "first line\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.Of(P("containers/y.log")) == "first line\n"; }));
}

TEST_F(FileTailerTest, FifoInPlaceOfALogIsRefusedAndNeverBlocksTheLoop) {
  Append("a.log", "a\n");
  ASSERT_EQ(0, mkfifo(P("pipe.log").c_str(), 0600));
  auto tailer = Tailer(EventsOnly());
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == "a\n"; }));
  // The followed path is swapped for a FIFO with no writer; a plain open would wait forever.
  fs::rename(dir_ / "a.log", dir_ / "a.old");
  ASSERT_EQ(0, mkfifo(P("a.log").c_str(), 0600));
  ASSERT_EQ(0, mkfifo(P("late.log").c_str(), 0600));
  Append("b.log", "b\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.Of(P("b.log")) == "b\n"; }));
  EXPECT_EQ(0u, recorder_.StreamsOf(P("pipe.log")));
  EXPECT_EQ(0u, recorder_.StreamsOf(P("late.log")));
  EXPECT_EQ(1u, recorder_.StreamsOf(P("a.log")));
}

TEST_F(FileTailerTest, ExcludedNamesAreNotFollowedButLiteralPathsAre) {
  Append("app.log", "live\n");
  Append("app.log.1", "rotated\n");
  Append("app.log.2.gz", "compressed\n");
  FileTailerOptions options = EventsOnly("app.log*");
  options.exclude = {"*.[0-9]", "*.gz"};
  options.patterns.push_back(P("app.log.1"));
  auto tailer = Tailer(options);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All().size() == 13u; }));
  Append("app.log.3", "new rotated\n");
  Append("app.log", "more\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.Of(P("app.log")) == "live\nmore\n"; }));
  EXPECT_EQ("rotated\n", recorder_.Of(P("app.log.1")));
  EXPECT_EQ(0u, recorder_.StreamsOf(P("app.log.2.gz")));
  EXPECT_EQ(0u, recorder_.StreamsOf(P("app.log.3")));
}

std::string ManyLines(const std::string& tag, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += tag + " line " + std::to_string(i) + " of the log\n";
  return out;
}

TEST_F(FileTailerTest, CopytruncateCopyMatchedByTheGlobIsNotReadAgain) {
  const std::string before = ManyLines("before", 100);  // more than the 1 KiB identity
  Append("app.log", before);
  auto tailer = Tailer(Options(/*start_at_end=*/false, 60000, 60000, "app.log*"));
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == before; }));
  // logrotate copytruncate: copy, truncate the original, and the writer goes on.
  fs::copy_file(dir_ / "app.log", dir_ / "app.log.1");
  fs::resize_file(dir_ / "app.log", 0);
  Append("app.log", "after\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return tailer->copies_recognised() == 1u; }));
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(before + "after\n", recorder_.All());
  EXPECT_EQ("", recorder_.Of(P("app.log.1")));
}

TEST_F(FileTailerTest, CopyStillBeingWrittenWhenFoundIsNotReadAgain) {
  const std::string before = ManyLines("before", 200);
  Append("app.log", before);
  // A copy counts as written once it has not changed for a poll interval.
  FileTailerOptions options = Options(/*start_at_end=*/false, 60000, 60000, "app.log*");
  options.poll_interval = std::chrono::milliseconds(200);
  auto tailer = Tailer(options);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.All() == before; }));
  {
    std::ofstream copy(dir_ / "app.log.1");
    copy << before.substr(0, 100) << std::flush;
    io_.run_for(std::chrono::milliseconds(50));  // the tailer sees the copy half written
    io_.restart();
    copy << before.substr(100) << std::flush;
  }
  fs::resize_file(dir_ / "app.log", 0);
  ASSERT_TRUE(RunUntil(io_, [&] { return tailer->copies_recognised() == 1u; }));
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(before, recorder_.All());
}

TEST_F(FileTailerTest, NewFileNamedLikeACopyButWithOtherContentIsReadWhole) {
  Append("app.log", ManyLines("live", 100));
  auto tailer = Tailer(Options(/*start_at_end=*/false, 60000, 60000, "app*.log*"));
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return !recorder_.All().empty(); }));
  const std::string other = ManyLines("live", 30) + ManyLines("other", 50);  // same first KiB
  Append("app-worker.log", other);
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder_.Of(P("app-worker.log")) == other; }));
  EXPECT_EQ(0u, tailer->copies_recognised());
}

}  // namespace
}  // namespace faultline
