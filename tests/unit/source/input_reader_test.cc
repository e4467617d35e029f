#include "agent/source/input_reader.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace faultline {
namespace {

namespace fs = std::filesystem;

class InputReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("faultline_input_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    // Small windows and pieces so a few pages exercise every boundary.
    options_.window_bytes = 4 * page_;
    options_.piece_bytes = page_;
  }
  void TearDown() override {
    for (int fd : fds_) close(fd);
    fs::remove_all(dir_);
  }
  // A file of `size` bytes of numbered lines; returns an fd open for reading.
  int MakeFile(size_t size, std::string* content) {
    std::string text;
    for (int i = 0; text.size() < size; ++i) text += "line " + std::to_string(i) + "\n";
    text.resize(size);
    std::ofstream(path(), std::ios::binary) << text;
    *content = text;
    const int fd = open(path().c_str(), O_RDONLY | O_CLOEXEC);
    fds_.push_back(fd);
    return fd;
  }
  std::string path() const { return (dir_ / "input.log").string(); }

  fs::path dir_;
  size_t page_ = 4096;
  InputReadOptions options_;
  std::vector<int> fds_;
};

TEST_F(InputReaderTest, RegularFileIsReadWholeThroughMappings) {
  std::string content;
  const int fd = MakeFile(13 * page_ + 123, &content);  // several windows, a partial last page
  std::string got;
  const InputReadResult r = ReadInput(fd, [&](std::string_view b) { got.append(b); }, options_);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(content, got);
  EXPECT_EQ(content.size(), r.bytes);
  EXPECT_EQ(content.size(), r.mapped_bytes);
  EXPECT_FALSE(r.shrank);
}

TEST_F(InputReaderTest, ReadingStartsAtTheCurrentOffsetEvenMidPage) {
  std::string content;
  const int fd = MakeFile(5 * page_, &content);
  ASSERT_EQ(777, lseek(fd, 777, SEEK_SET));
  std::string got;
  const InputReadResult r = ReadInput(fd, [&](std::string_view b) { got.append(b); }, options_);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(content.substr(777), got);
  EXPECT_EQ(content.size() - 777, r.mapped_bytes);
}

TEST_F(InputReaderTest, PipeIsReadWithRead) {
  int p[2];
  ASSERT_EQ(0, pipe(p));
  fds_.push_back(p[0]);
  const std::string text = "a\nb\nc";
  ASSERT_EQ(static_cast<ssize_t>(text.size()), write(p[1], text.data(), text.size()));
  close(p[1]);
  std::string got;
  const InputReadResult r = ReadInput(p[0], [&](std::string_view b) { got.append(b); }, options_);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(text, got);
  EXPECT_EQ(0u, r.mapped_bytes);
}

TEST_F(InputReaderTest, FileCutWhileMappedEndsAtItsNewSize) {
  std::string content;
  const int fd = MakeFile(4 * page_, &content);  // one window, mapped whole
  const size_t cut = 2 * page_ + 100;            // inside the third page
  std::string got;
  const InputReadResult r = ReadInput(
      fd,
      [&](std::string_view b) {
        if (got.empty()) {
          ASSERT_EQ(0, truncate(path().c_str(), cut));
        }
        got.append(b);
      },
      options_);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(r.shrank);
  EXPECT_EQ(content.substr(0, cut), got);  // nothing past the cut, not even the zero page tail
}

TEST_F(InputReaderTest, TouchingPagesCutUnderTheReaderDoesNotCrash) {
  // The cut lands while the callback holds a view of mapped pages: the worst case. The access
  // raises SIGBUS, which must be absorbed (the bytes read as zeros) and end the mapped reading.
  std::string content;
  const int fd = MakeFile(4 * page_, &content);
  std::string first;
  size_t calls = 0;
  const InputReadResult r = ReadInput(
      fd,
      [&](std::string_view b) {
        if (calls++ == 0) {
          ASSERT_EQ(0, truncate(path().c_str(), 0));
          first.assign(b.data(), b.size());  // touches every byte of the vanished page
        }
      },
      options_);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(r.shrank);
  EXPECT_EQ(1u, calls);
  EXPECT_EQ(std::string(page_, '\0'), first);
}

TEST_F(InputReaderTest, BytesAppendedWhileReadingAreReadToo) {
  std::string content;
  const int fd = MakeFile(6 * page_, &content);
  const std::string more = "appended while scanning\n";
  std::string got;
  const InputReadResult r = ReadInput(
      fd,
      [&](std::string_view b) {
        if (got.empty()) std::ofstream(path(), std::ios::binary | std::ios::app) << more;
        got.append(b);
      },
      options_);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(content + more, got);
  EXPECT_FALSE(r.shrank);
}

TEST_F(InputReaderTest, ReadOnlyPathGivesTheSameBytes) {
  std::string content;
  const int fd = MakeFile(3 * page_ + 5, &content);
  options_.map = false;
  std::string got;
  const InputReadResult r = ReadInput(fd, [&](std::string_view b) { got.append(b); }, options_);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(content, got);
  EXPECT_EQ(0u, r.mapped_bytes);
}

TEST_F(InputReaderTest, UnreadableInputIsAnErrorNotACrash) {
  const int fd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  fds_.push_back(fd);
  const InputReadResult r = ReadInput(fd, [](std::string_view) {}, options_);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(std::strerror(EISDIR), r.error);
}

// The handler absorbs faults on the window being read only: any other SIGBUS still kills (with
// the default action, or through a sanitizer's handler that was installed before).
TEST_F(InputReaderTest, SigbusOutsideTheReadWindowStillKillsTheProcess) {
  std::string content;
  const int fd = MakeFile(2 * page_, &content);
  EXPECT_DEATH(
      {
        ReadInput(fd, [](std::string_view) {}, options_);  // installs the handler
        void* m = mmap(nullptr, 2 * page_, PROT_READ, MAP_PRIVATE, fd, 0);
        // A failed setup exits 0, which fails the death test rather than passing it.
        if (m == MAP_FAILED || truncate(path().c_str(), 0) != 0) _exit(0);
        volatile char c = static_cast<const char*>(m)[page_];
        (void)c;
        _exit(0);
      },
      "");
}

}  // namespace
}  // namespace faultline
