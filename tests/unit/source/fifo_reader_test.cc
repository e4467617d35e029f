// DescriptorReader on real pipes and files, and FifoReader on a real named pipe with writers that
// come and go.
#include "agent/source/fifo_reader.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "agent/source/descriptor_reader.h"
#include "tests/support/wait.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::RunUntil;

class ReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("faultline_fifo_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  asio::io_context io_;
  fs::path dir_;
};

struct Read {
  std::string bytes;
  bool ended = false;
  std::string error;
  int writers_gone = 0;
};

std::unique_ptr<DescriptorReader> ReaderOf(asio::io_context& io, int fd, Read& read,
                                           DescriptorReader::Options options = {}) {
  return std::make_unique<DescriptorReader>(
      io, fd, options, [&read](std::string_view b) { read.bytes.append(b); },
      [&read](const std::string& error) {
        read.ended = true;
        read.error = error;
      });
}

TEST_F(ReaderTest, PipeIsReadToItsEndAndItsFlagsRestored) {
  int fds[2];
  ASSERT_EQ(0, pipe(fds));
  const int shared = dup(fds[0]);  // another holder of the same open file description
  Read read;
  auto reader = ReaderOf(io_, fds[0], read);
  reader->Start();
  EXPECT_TRUE(reader->pollable());
  EXPECT_NE(0, fcntl(shared, F_GETFL) & O_NONBLOCK);
  ASSERT_EQ(6, write(fds[1], "one\ntw", 6));
  ASSERT_TRUE(RunUntil(io_, [&] { return read.bytes == "one\ntw"; }));
  EXPECT_FALSE(read.ended);
  ASSERT_EQ(2, write(fds[1], "o\n", 2));
  close(fds[1]);
  ASSERT_TRUE(RunUntil(io_, [&] { return read.ended; }));
  EXPECT_EQ("one\ntwo\n", read.bytes);
  EXPECT_EQ("", read.error);
  EXPECT_EQ(0, fcntl(shared, F_GETFL) & O_NONBLOCK);  // as it was before the reader
  close(shared);
}

TEST_F(ReaderTest, RegularFileIsReadAsAFileInPiecesToItsEnd) {
  const fs::path path = dir_ / "big.log";
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "line " + std::to_string(i) + "\n";
  std::ofstream(path, std::ios::binary) << text;
  Read read;
  DescriptorReader::Options options;
  options.read_budget = 64 << 10;  // several turns of the loop
  auto reader = ReaderOf(io_, open(path.c_str(), O_RDONLY), read, options);
  reader->Start();
  EXPECT_FALSE(reader->pollable());
  int turns = 0;
  while (!read.ended && turns < 10000) {
    io_.restart();
    io_.run_one();
    ++turns;
  }
  EXPECT_GT(turns, 2);  // other work could run between the pieces
  EXPECT_TRUE(read.ended);
  EXPECT_EQ(text, read.bytes);
}

TEST_F(ReaderTest, DevNullIsAnEmptyStream) {
  Read read;
  auto reader = ReaderOf(io_, open("/dev/null", O_RDONLY), read);
  reader->Start();
  ASSERT_TRUE(RunUntil(io_, [&] { return read.ended; }));
  EXPECT_EQ("", read.bytes);
}

TEST_F(ReaderTest, CallbackMayDestroyTheReader) {
  int fds[2];
  ASSERT_EQ(0, pipe(fds));
  Read read;
  std::unique_ptr<DescriptorReader> reader;
  reader = std::make_unique<DescriptorReader>(
      io_, fds[0], DescriptorReader::Options{},
      [&](std::string_view b) {
        read.bytes.append(b);
        reader.reset();
      },
      [&](const std::string&) { read.ended = true; });
  reader->Start();
  ASSERT_EQ(2, write(fds[1], "x\n", 2));
  ASSERT_TRUE(RunUntil(io_, [&] { return reader == nullptr; }));
  close(fds[1]);
  io_.restart();
  io_.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ("x\n", read.bytes);
  EXPECT_FALSE(read.ended);
}

struct Recorder {
  struct Stream {
    std::string name;
    std::string bytes;
    int quiet = 0;
    bool ended = false;
  };
  std::vector<std::shared_ptr<Stream>> streams;
  StreamConsumerFactory Factory() {
    return [this](const std::string& name) {
      auto stream = std::make_shared<Stream>();
      stream->name = name;
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
};

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// Opens the pipe for writing as a separate writer would (blocking until a reader has it).
void WriteSession(const fs::path& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK);  // ENXIO if no reader: a failure
  ASSERT_GE(fd, 0) << "the pipe has no reader: " << std::strerror(errno);
  ASSERT_EQ(static_cast<ssize_t>(text.size()), write(fd, text.data(), text.size()));
  close(fd);
}

TEST_F(ReaderTest, FifoIsCreatedAndFollowedAcrossWritersAsOneStream) {
  const fs::path path = dir_ / "train.fifo";
  Recorder recorder;
  FifoReader fifo(io_, path.string(), std::chrono::seconds(60), recorder.Factory());
  ASSERT_EQ("", JoinErrors(fifo.Start().errors()));
  EXPECT_TRUE(fifo.created());
  struct stat st {};
  ASSERT_EQ(0, stat(path.c_str(), &st));
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(0600u, st.st_mode & 0777);

  // An idle pipe with no writer yet: nothing happens, and nothing spins.
  const double cpu_before = CpuSeconds();
  io_.run_for(std::chrono::milliseconds(200));
  EXPECT_LT(CpuSeconds() - cpu_before, 0.05);
  EXPECT_EQ(0u, fifo.writer_ends());

  std::string expected;
  for (int session = 0; session < 4; ++session) {
    const std::string text = "writer " + std::to_string(session) + " line 1\nline 2\n";
    WriteSession(path, text);
    expected += text;
    ASSERT_TRUE(RunUntil(io_, [&] { return fifo.writer_ends() == static_cast<uint64_t>(session + 1); }))
        << "session " << session;
  }
  // A writer that stops mid-line: its last line ends with it, not glued to the next writer's.
  WriteSession(path, "no newline");
  ASSERT_TRUE(RunUntil(io_, [&] { return fifo.writer_ends() == 5; }));
  WriteSession(path, "next writer\n");
  expected += "no newline\nnext writer\n";
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder.streams[0]->bytes == expected; }))
      << recorder.streams[0]->bytes;
  ASSERT_EQ(1u, recorder.streams.size());
  EXPECT_EQ(path.string(), recorder.streams[0]->name);
  EXPECT_FALSE(recorder.streams[0]->ended);
  fifo.Stop();
  EXPECT_TRUE(recorder.streams[0]->ended);
}

TEST_F(ReaderTest, FifoWriterThatWasThereFirstEndsItsLineWhenQuiet) {
  const fs::path path = dir_ / "early.fifo";
  ASSERT_EQ(0, mkfifo(path.c_str(), 0644));
  // The writer opens before the reader exists (O_RDWR here only so the open does not block).
  const int writer = open(path.c_str(), O_RDWR);
  ASSERT_GE(writer, 0);
  Recorder recorder;
  FifoReader fifo(io_, path.string(), std::chrono::milliseconds(50), recorder.Factory());
  ASSERT_EQ("", JoinErrors(fifo.Start().errors()));
  EXPECT_FALSE(fifo.created());
  ASSERT_EQ(7, write(writer, "partial", 7));
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder.streams[0]->bytes == "partial"; }));
  close(writer);
  ASSERT_TRUE(RunUntil(io_, [&] { return recorder.streams[0]->bytes == "partial\n"; }))
      << recorder.streams[0]->bytes;
}

TEST_F(ReaderTest, PathThatIsNotAFifoIsRefusedAndKept) {
  const fs::path path = dir_ / "regular.log";
  std::ofstream(path) << "keep me\n";
  Recorder recorder;
  FifoReader fifo(io_, path.string(), std::chrono::seconds(60), recorder.Factory());
  EXPECT_EQ(path.string() + " is not a named pipe; remove it, or let the agent create the pipe",
            JoinErrors(fifo.Start().errors()));
  std::ifstream in(path);
  std::string kept;
  std::getline(in, kept);
  EXPECT_EQ("keep me", kept);
}

TEST_F(ReaderTest, FifoInAMissingFolderIsReported) {
  Recorder recorder;
  FifoReader fifo(io_, (dir_ / "no" / "such.fifo").string(), std::chrono::seconds(60),
                  recorder.Factory());
  const std::string error = JoinErrors(fifo.Start().errors());
  EXPECT_THAT(error, HasSubstr("cannot create the named pipe"));
  EXPECT_THAT(error, HasSubstr("No such file or directory"));
}

}  // namespace
}  // namespace faultline
