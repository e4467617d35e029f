// FileTailer with saved positions (file_resume.h): files resumed at their checkpoint under any
// name they have now, files changed while the tailer was away read from 0, and the copytruncate
// and deletion cases that must lose no line.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "agent/source/file_tailer.h"
#include "tests/support/wait.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing::RunUntil;

// What a checkpoint records as its time: the clock file times are stamped with.
int64_t NowNs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

// Saved marks in, and every stream the tailer starts recorded: where it began and which mark it
// continues.
class Resume : public FileResume {
 public:
  struct Stream {
    std::string path;
    uint64_t offset = 0;
    std::string resumed;  // path of the mark it continues, empty for a new stream
    std::string bytes;
    bool ended = false;
  };
  std::vector<FileMark> marks;
  bool history = false;
  int64_t time_ns = 0;
  std::vector<std::shared_ptr<Stream>> streams;
  std::vector<std::string> forgotten;

  std::vector<FileMark> Unclaimed() const override { return marks; }
  bool has_history() const override { return history; }
  int64_t checkpoint_time_ns() const override { return time_ns; }
  std::unique_ptr<StreamConsumer> Start(const std::string& path, uint64_t offset,
                                        const FileMark* resumed) override {
    auto stream = std::make_shared<Stream>();
    stream->path = path;
    stream->offset = offset;
    if (resumed != nullptr) stream->resumed = resumed->path;
    streams.push_back(stream);
    struct Consumer : StreamConsumer {
      std::shared_ptr<Stream> s;
      void OnBytes(std::string_view b) override { s->bytes.append(b); }
      void OnQuiet() override {}
      void OnEnd() override { s->ended = true; }
    };
    auto c = std::make_unique<Consumer>();
    c->s = stream;
    return c;
  }
  void Forget(const FileMark& mark) override { forgotten.push_back(mark.path); }

  const Stream* Of(const std::string& path) const {
    for (const auto& s : streams) {
      if (s->path == path) return s.get();
    }
    return nullptr;
  }
};

class FileTailerResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("faultline_resume_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  FileTailerOptions Options(Resume* resume, int rotate_wait_ms = 60000) const {
    FileTailerOptions options;
    options.patterns = {(dir_ / "*.log").string()};
    options.start_at_end = true;  // so that reading from 0 shows it was decided, not defaulted
    options.poll_interval = std::chrono::milliseconds(20);
    options.rotate_wait = std::chrono::milliseconds(rotate_wait_ms);
    options.resume = resume;
    return options;
  }
  std::unique_ptr<FileTailer> Tailer(Resume* resume, int rotate_wait_ms = 60000) {
    return std::make_unique<FileTailer>(io_, Options(resume, rotate_wait_ms),
                                        StreamConsumerFactory());
  }
  void Append(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::app | std::ios::binary) << text;
  }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  void RunFor(int ms) {
    io_.run_for(std::chrono::milliseconds(ms));
    io_.restart();
  }

  // A first run over app.log that reads `text` and saves its mark as a checkpoint would, with
  // `resume_at` bytes not yet fully matched (the resume offset).
  FileMark ReadAndSave(const std::string& text, uint64_t resume_back = 0) {
    Append("app.log", text);
    Resume first;
    first.history = true;
    FileMark saved;
    {
      auto tailer = std::make_unique<FileTailer>(
          io_,
          [&] {
            FileTailerOptions o = Options(&first);
            o.start_at_end = false;
            return o;
          }(),
          StreamConsumerFactory());
      tailer->Start();
      EXPECT_TRUE(RunUntil(io_, [&] {
        return first.Of(P("app.log")) != nullptr && first.Of(P("app.log"))->bytes == text;
      }));
      tailer->ForEachStream([&](const FileMark& mark, StreamConsumer&) { saved = mark; });
      tailer->Stop();
    }
    saved.resume_offset = saved.read_offset - resume_back;
    return saved;
  }

  fs::path dir_;
  asio::io_context io_;
};

TEST_F(FileTailerResumeTest, ASavedFileResumesAtItsResumeOffset) {
  const FileMark saved = ReadAndSave("one\ntwo\n", /*resume_back=*/4);  // "two\n" still open
  EXPECT_EQ(8u, saved.read_offset);
  EXPECT_EQ("one\ntwo\n", saved.tail);
  Append("app.log", "three\n");
  Resume resume;
  resume.marks = {saved};
  resume.history = true;
  auto tailer = Tailer(&resume);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] {
    return resume.Of(P("app.log")) != nullptr && resume.Of(P("app.log"))->bytes == "two\nthree\n";
  }));
  EXPECT_EQ(4u, resume.Of(P("app.log"))->offset);
  EXPECT_EQ(P("app.log"), resume.Of(P("app.log"))->resumed);
  EXPECT_TRUE(resume.forgotten.empty());
}

TEST_F(FileTailerResumeTest, AFileRewrittenInPlaceWhileAwayIsReadFromZero) {
  const FileMark saved = ReadAndSave("one\ntwo\n");
  fs::resize_file(dir_ / "app.log", 0);
  Append("app.log", "other\ncontent\nlonger\n");
  Resume resume;
  resume.marks = {saved};
  resume.history = true;
  auto tailer = Tailer(&resume);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] {
    return resume.Of(P("app.log")) != nullptr &&
           resume.Of(P("app.log"))->bytes == "other\ncontent\nlonger\n";
  }));
  EXPECT_EQ(0u, resume.Of(P("app.log"))->offset);
  EXPECT_TRUE(resume.Of(P("app.log"))->resumed.empty());
  EXPECT_EQ(std::vector<std::string>{P("app.log")}, resume.forgotten);
}

TEST_F(FileTailerResumeTest, AFileRenamedWhileAwayIsDrainedUnderItsNewNameAndTheNewOneReadWhole) {
  const FileMark saved = ReadAndSave("one\n");
  Append("app.log", "two\n");  // written after the checkpoint, before the rename
  fs::rename(dir_ / "app.log", dir_ / "app.log.1");  // excluded by default
  Append("app.log", "new\n");
  Resume resume;
  resume.marks = {saved};
  resume.history = true;
  resume.time_ns = NowNs();
  auto tailer = Tailer(&resume, /*rotate_wait_ms=*/100);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] {
    const Resume::Stream* old = resume.Of(P("app.log.1"));
    const Resume::Stream* fresh = resume.Of(P("app.log"));
    return old != nullptr && old->bytes == "two\n" && old->ended && fresh != nullptr &&
           fresh->bytes == "new\n";
  }));
  EXPECT_EQ(P("app.log"), resume.Of(P("app.log.1"))->resumed);
  EXPECT_EQ(2u, resume.streams.size());
}

TEST_F(FileTailerResumeTest, ACopytruncateWhileAwayIsReadOnInTheCopy) {
  const FileMark saved = ReadAndSave("one\n");
  Append("app.log", "two\n");
  fs::copy_file(dir_ / "app.log", dir_ / "app.log.1");
  fs::resize_file(dir_ / "app.log", 0);
  Append("app.log", "three\n");
  Resume resume;
  resume.marks = {saved};
  resume.history = true;
  auto tailer = Tailer(&resume);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] {
    const Resume::Stream* copy = resume.Of(P("app.log.1"));
    const Resume::Stream* live = resume.Of(P("app.log"));
    return copy != nullptr && copy->bytes == "two\n" && live != nullptr && live->bytes == "three\n";
  }));
  EXPECT_EQ(4u, resume.Of(P("app.log.1"))->offset);
  EXPECT_EQ(P("app.log"), resume.Of(P("app.log.1"))->resumed);
  EXPECT_TRUE(resume.Of(P("app.log"))->resumed.empty());
}

TEST_F(FileTailerResumeTest, ACopyTakenWhileAwayOfAFileNotYetTruncatedIsNotReadAgain) {
  // The agent is killed and restarted while logrotate copytruncate is between its copy and its
  // truncate: app.log still holds its saved position, and app.log.1 (changed after the
  // checkpoint, with no saved position) holds the same bytes. It is not a file written while
  // away: its lines are app.log's, read once there.
  const int64_t checkpoint = NowNs();
  const FileMark saved = ReadAndSave("one\n");
  Append("app.log", "two\n");
  fs::copy_file(dir_ / "app.log", dir_ / "app.log.1");
  Append("app.log.2", "");  // a copy logrotate has created and not filled yet
  Resume resume;
  resume.marks = {saved};
  resume.history = true;
  resume.time_ns = checkpoint;
  auto tailer = Tailer(&resume, /*rotate_wait_ms=*/100);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] {
    return resume.Of(P("app.log")) != nullptr && resume.Of(P("app.log"))->bytes == "two\n";
  }));
  RunFor(100);
  EXPECT_EQ(nullptr, resume.Of(P("app.log.1")));
  EXPECT_EQ(nullptr, resume.Of(P("app.log.2")));
  // Then the truncate, and new lines: the stream goes on in the copy (nothing left there to
  // read), the new lines are a new stream, and nothing was lost or read twice.
  fs::resize_file(dir_ / "app.log", 0);
  Append("app.log", "three\n");
  ASSERT_TRUE(RunUntil(io_, [&] {
    return resume.streams.size() == 2 && resume.streams[1]->bytes == "three\n";
  }));
  RunFor(200);
  EXPECT_EQ("two\n", resume.streams[0]->bytes);
  EXPECT_EQ(2u, resume.streams.size());
  EXPECT_EQ(0u, tailer->bytes_lost());
}

TEST_F(FileTailerResumeTest, AFileRotatedAwayAndDeletedWhileAwayLosesOnlyItsUnreadTail) {
  // Undecidable by construction: the lines written after the checkpoint went with the file. Its
  // saved position is forgotten, a compressed rotation of it is never read as lines, and the new
  // file is read whole.
  const int64_t checkpoint = NowNs();
  const FileMark saved = ReadAndSave("one\n");
  Append("app.log", "two, never read\n");
  fs::rename(dir_ / "app.log", dir_ / "app.log.1");
  Append("app.log.1.gz", "\x1f\x8b compressed bytes\n");
  fs::remove(dir_ / "app.log.1");
  Append("app.log", "three\n");
  Resume resume;
  resume.marks = {saved};
  resume.history = true;
  resume.time_ns = checkpoint;
  auto tailer = Tailer(&resume);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] {
    return resume.Of(P("app.log")) != nullptr && resume.Of(P("app.log"))->bytes == "three\n";
  }));
  RunFor(100);
  EXPECT_EQ(1u, resume.streams.size());
  EXPECT_TRUE(resume.Of(P("app.log"))->resumed.empty());
  EXPECT_EQ(std::vector<std::string>{P("app.log")}, resume.forgotten);
}

TEST_F(FileTailerResumeTest, ASavedFileWithNothingReadIsNotFoundInAnUnrelatedRotatedFile) {
  Append("app.log", "");
  Resume first;
  first.history = true;
  FileMark saved;
  {
    auto tailer = Tailer(&first);
    tailer->Start();
    RunFor(50);
    tailer->ForEachStream([&](const FileMark& mark, StreamConsumer&) { saved = mark; });
    tailer->Stop();
  }
  ASSERT_EQ(0u, saved.read_offset);
  // While away: the empty file is deleted, and an old rotated file (read long ago) sits there.
  Append("app.log.3", "counted long ago\n");
  fs::remove(dir_ / "app.log");
  Append("app.log", "new\n");
  Resume resume;
  resume.marks = {saved};
  resume.history = true;
  auto tailer = Tailer(&resume);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return resume.Of(P("app.log")) != nullptr &&
                                    resume.Of(P("app.log"))->bytes == "new\n"; }));
  RunFor(100);
  // Whether the new app.log got the deleted one's inode (resumed at 0) or not (forgotten), the
  // old rotated file is not read again.
  EXPECT_EQ(nullptr, resume.Of(P("app.log.3")));
}

TEST_F(FileTailerResumeTest, AFileRotatedTwiceWhileAwayIsReadOnceEachGeneration) {
  const FileMark saved = ReadAndSave("gen1 a\n");
  const int64_t checkpoint = NowNs();
  Append("app.log", "gen1 b\n");
  fs::rename(dir_ / "app.log", dir_ / "app.log.1");
  Append("app.log", "gen2\n");
  fs::rename(dir_ / "app.log.1", dir_ / "app.log.2");
  fs::rename(dir_ / "app.log", dir_ / "app.log.1");
  Append("app.log", "gen3\n");
  Resume resume;
  resume.marks = {saved};
  resume.history = true;
  resume.time_ns = checkpoint;
  auto tailer = Tailer(&resume);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] {
    const Resume::Stream* g1 = resume.Of(P("app.log.2"));
    const Resume::Stream* g2 = resume.Of(P("app.log.1"));
    const Resume::Stream* g3 = resume.Of(P("app.log"));
    return g1 != nullptr && g1->bytes == "gen1 b\n" && g2 != nullptr && g2->bytes == "gen2\n" &&
           g3 != nullptr && g3->bytes == "gen3\n";
  }));
  RunFor(100);
  EXPECT_EQ(3u, resume.streams.size());
}

TEST_F(FileTailerResumeTest, StartAtEndAppliesOnlyOnASourcesFirstStart) {
  Append("app.log", "written while away\n");
  Resume resume;
  resume.history = true;  // the source ran before, and app.log has no saved position
  auto tailer = Tailer(&resume);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] {
    return resume.Of(P("app.log")) != nullptr &&
           resume.Of(P("app.log"))->bytes == "written while away\n";
  }));
}

TEST_F(FileTailerResumeTest, ACopytruncateWhileRunningGoesOnInTheCopyWithoutEndingTheStream) {
  Resume resume;
  auto tailer = std::make_unique<FileTailer>(
      io_,
      [&] {
        FileTailerOptions o = Options(&resume);
        o.start_at_end = false;
        return o;
      }(),
      StreamConsumerFactory());
  Append("app.log", "one\n");
  tailer->Start();
  ASSERT_TRUE(
      RunUntil(io_, [&] { return resume.streams.size() == 1 && resume.streams[0]->bytes == "one\n"; }));
  // logrotate copytruncate between two reads: the copy holds "two", which was never read here.
  Append("app.log", "two\n");
  fs::copy_file(dir_ / "app.log", dir_ / "app.log.1");
  fs::resize_file(dir_ / "app.log", 0);
  Append("app.log", "three\n");
  ASSERT_TRUE(RunUntil(io_, [&] {
    return resume.streams.size() == 2 && resume.streams[0]->bytes == "one\ntwo\n" &&
           resume.streams[1]->bytes == "three\n";
  })) << resume.streams[0]->bytes;
  EXPECT_FALSE(resume.streams[0]->ended);  // drained, then ended after rotate_wait
  EXPECT_EQ(0u, tailer->bytes_lost());
  EXPECT_EQ(1u, tailer->truncations());
}

TEST_F(FileTailerResumeTest, AnEmptyCopyFilledAfterAPollIsStillRecognisedAsACopy) {
  // A glob that matches the copies and no exclude: app.log.1 is held back until it settles. The
  // copy is created empty and filled only after the tailer has looked at it more than once (a
  // loaded machine delays logrotate between its create and its copy): it must not settle empty
  // and then be read whole.
  Resume resume;
  auto tailer = std::make_unique<FileTailer>(
      io_,
      [&] {
        FileTailerOptions o = Options(&resume);
        o.patterns = {(dir_ / "app.log*").string()};
        o.exclude = {};
        o.start_at_end = false;
        return o;
      }(),
      StreamConsumerFactory());
  std::string text;
  for (int i = 0; i < 60; ++i) text += "line " + std::to_string(i) + " of the first generation\n";
  Append("app.log", text);
  tailer->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return resume.Of(P("app.log")) != nullptr &&
                                    resume.Of(P("app.log"))->bytes == text; }));
  Append("app.log.1", "");
  RunFor(100);  // five poll intervals with the copy empty
  fs::copy_file(dir_ / "app.log", dir_ / "app.log.1", fs::copy_options::overwrite_existing);
  fs::resize_file(dir_ / "app.log", 0);
  Append("app.log", "second generation\n");
  ASSERT_TRUE(RunUntil(io_, [&] { return tailer->copies_recognised() == 1; }));
  RunFor(100);
  std::string read;
  for (const auto& stream : resume.streams) read += stream->bytes;
  EXPECT_EQ(text + "second generation\n", read);
}

TEST_F(FileTailerResumeTest, ADeletedFileStillWrittenIsReadUntilQuietForRotateWait) {
  Resume resume;
  auto tailer = std::make_unique<FileTailer>(
      io_,
      [&] {
        FileTailerOptions o = Options(&resume, /*rotate_wait_ms=*/300);
        o.start_at_end = false;
        return o;
      }(),
      StreamConsumerFactory());
  Append("app.log", "before\n");
  tailer->Start();
  ASSERT_TRUE(RunUntil(
      io_, [&] { return resume.streams.size() == 1 && resume.streams[0]->bytes == "before\n"; }));
  std::ofstream writer(dir_ / "app.log", std::ios::app);
  fs::remove(dir_ / "app.log");
  RunFor(100);
  writer << "after deletion\n" << std::flush;
  ASSERT_TRUE(RunUntil(io_, [&] { return resume.streams[0]->bytes == "before\nafter deletion\n"; }));
  EXPECT_FALSE(resume.streams[0]->ended);
  writer.close();
  ASSERT_TRUE(RunUntil(io_, [&] { return resume.streams[0]->ended; }));
  EXPECT_EQ(0u, tailer->open_files());
}

}  // namespace
}  // namespace faultline
