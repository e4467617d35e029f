#include "agent/source/file_identity.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace faultline {
namespace {

namespace fs = std::filesystem;

// Files on disk opened for reading, closed at the end of the test.
class FileIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("faultline_identity_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    for (const int fd : fds_) close(fd);
    fs::remove_all(dir_);
  }
  // Writes `bytes` to `name` (replacing it) and returns it open for reading.
  int Open(const std::string& name, const std::string& bytes) {
    Write(name, bytes);
    const int fd = open((dir_ / name).c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    fds_.push_back(fd);
    return fd;
  }
  // Rewrites `name` in place (same inode, the descriptors stay valid).
  void Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary | std::ios::trunc) << bytes;
  }

  static std::string Lines(int from, int to) {
    std::string out;
    for (int i = from; i < to; ++i) out += "2026-01-01 step " + std::to_string(i) + " loss 0.1\n";
    return out;
  }

  fs::path dir_;
  std::vector<int> fds_;
};

TEST_F(FileIdentityTest, MarkAtHashesTheFirstBytesAndKeepsTheLastOnes) {
  const std::string log = Lines(0, 200);  // well over kHeadBytes
  const int fd = Open("app.log", log);
  const ReadMark mark = MarkAt(fd, 3000);
  EXPECT_EQ(mark.offset, 3000u);
  EXPECT_EQ(mark.head_len, kHeadBytes);
  EXPECT_EQ(mark.head_hash, Fnv(kFnvBasis, log.substr(0, kHeadBytes)));
  EXPECT_EQ(mark.tail, log.substr(3000 - kTailBytes, kTailBytes));
}

TEST_F(FileIdentityTest, MarkAtBeyondTheEndIsNothingRead) {
  const int fd = Open("app.log", "short\n");
  const ReadMark mark = MarkAt(fd, 100);
  EXPECT_EQ(mark.offset, 0u);
  EXPECT_EQ(mark.head_len, 0u);
  EXPECT_EQ(mark.head_hash, kFnvBasis);
  EXPECT_TRUE(mark.tail.empty());
}

TEST_F(FileIdentityTest, AddReadInPiecesEqualsMarkAtTheSameOffset) {
  const std::string log = Lines(0, 100);
  const int fd = Open("app.log", log);
  ReadMark mark;
  for (size_t at = 0; at < log.size(); at += 7) AddRead(mark, log.substr(at, 7));
  const ReadMark whole = MarkAt(fd, log.size());
  EXPECT_EQ(mark.offset, whole.offset);
  EXPECT_EQ(mark.head_len, whole.head_len);
  EXPECT_EQ(mark.head_hash, whole.head_hash);
  EXPECT_EQ(mark.tail, whole.tail);
}

TEST_F(FileIdentityTest, SameHeadTellsTheFileFromOneRewrittenAtItsStart) {
  const std::string log = Lines(0, 50);
  const int fd = Open("app.log", log);
  const ReadMark mark = MarkAt(fd, log.size());
  EXPECT_TRUE(SameHead(fd, mark));
  EXPECT_TRUE(SameHead(fd, ReadMark{}));  // nothing read: nothing to differ from
  Write("app.log", "X" + log.substr(1));
  EXPECT_FALSE(SameHead(fd, mark));
}

TEST_F(FileIdentityTest, RewrittenWhenShrunkOrTheBytesBeforeTheOffsetChanged) {
  const std::string log = Lines(0, 50);
  const int fd = Open("app.log", log);
  const ReadMark mark = MarkAt(fd, log.size());
  EXPECT_FALSE(Rewritten(fd, log.size(), /*changed=*/true, mark));
  EXPECT_FALSE(Rewritten(fd, log.size() + 10, /*changed=*/true, mark));  // appended
  EXPECT_TRUE(Rewritten(fd, log.size() - 1, /*changed=*/false, mark));   // shrunk
  // Truncated and regrown past the old offset with other lines (copytruncate, then writes).
  const std::string regrown = Lines(1000, 1060);
  ASSERT_GT(regrown.size(), log.size());
  Write("app.log", regrown);
  EXPECT_TRUE(Rewritten(fd, regrown.size(), /*changed=*/true, mark));
  // Unchanged since last looked at: not read again.
  EXPECT_FALSE(Rewritten(fd, regrown.size(), /*changed=*/false, mark));
}

TEST_F(FileIdentityTest, HoldsWhatTheSavedMarkSaysWasRead) {
  const std::string log = Lines(0, 80);
  const int fd = Open("app.log", log);
  const FileMark saved = ToFileMark("app.log", 1, 2, MarkAt(fd, 2000), 1900);
  EXPECT_EQ(saved.read_offset, 2000u);
  EXPECT_EQ(saved.resume_offset, 1900u);
  EXPECT_TRUE(Holds(fd, saved));
  FileMark resume_past_read = saved;
  resume_past_read.resume_offset = 2001;
  EXPECT_FALSE(Holds(fd, resume_past_read));
  Write("app.log", log.substr(0, 1999));  // shorter than what was read
  EXPECT_FALSE(Holds(fd, saved));
  std::string changed = log;
  changed[1990] = '#';  // the same length, other bytes just before the read offset
  Write("app.log", changed);
  EXPECT_FALSE(Holds(fd, saved));
  Write("app.log", log + Lines(80, 90));  // appended since: still the file
  EXPECT_TRUE(Holds(fd, saved));
}

// logrotate copytruncate: app.log.1 is a copy of app.log, which was then truncated.
TEST_F(FileIdentityTest, ACopyIsFollowedFromWhereTheOriginalWasRead) {
  const std::string log = Lines(0, 200);
  const int original = Open("app.log", log);
  const ReadMark read = MarkAt(original, 3000);
  ASSERT_EQ(read.offset, 3000u);
  const std::string copied = log + Lines(200, 210);  // written after the last read, then copied
  const int copy = Open("app.log.1", copied);
  const CopyCandidate candidate(copy, copied.size());
  EXPECT_EQ(candidate.CopiedUpTo(read, /*original_fd=*/-1), std::optional<uint64_t>(3000));
}

TEST_F(FileIdentityTest, AFileWithOtherFirstBytesIsNotACopy) {
  const std::string log = Lines(0, 200);
  const ReadMark read = MarkAt(Open("app.log", log), 3000);
  ASSERT_EQ(read.offset, 3000u);
  const std::string other = "another run\n" + log;
  const CopyCandidate candidate(Open("app.log.1", other), other.size());
  EXPECT_EQ(candidate.CopiedUpTo(read, -1), std::nullopt);
}

TEST_F(FileIdentityTest, AFileWithOtherBytesWhereReadingStoppedIsNotACopy) {
  const std::string log = Lines(0, 200);
  const ReadMark read = MarkAt(Open("app.log", log), 3000);
  ASSERT_EQ(read.offset, 3000u);
  std::string other = log;
  other[2990] = '#';
  const CopyCandidate candidate(Open("app.log.1", other), other.size());
  EXPECT_EQ(candidate.CopiedUpTo(read, -1), std::nullopt);
}

TEST_F(FileIdentityTest, ACopyShorterThanWhatWasReadNeedsTheOriginalOpen) {
  const std::string log = Lines(0, 100);
  const int original = Open("app.log", log);
  const ReadMark read = MarkAt(original, log.size());
  const std::string copied = log.substr(0, 2500);  // taken before the original grew further
  const CopyCandidate candidate(Open("app.log.1", copied), copied.size());
  EXPECT_EQ(candidate.CopiedUpTo(read, original), std::optional<uint64_t>(2500));
  EXPECT_EQ(candidate.CopiedUpTo(read, -1), std::nullopt);
}

TEST_F(FileIdentityTest, AnEmptyFileOrNothingReadIsNeverACopy) {
  const std::string log = Lines(0, 200);
  const int original = Open("app.log", log);
  const CopyCandidate empty(Open("app.log.1", ""), 0);
  EXPECT_EQ(empty.CopiedUpTo(MarkAt(original, 3000), original), std::nullopt);
  const CopyCandidate full(Open("app.log.2", log), log.size());
  EXPECT_EQ(full.CopiedUpTo(ReadMark{}, original), std::nullopt);
}

TEST_F(FileIdentityTest, StartsWithRecognisesACopyInProgress) {
  const std::string log = Lines(0, 100);
  const int original = Open("app.log", log);
  const std::string partial = log.substr(0, 1500);  // logrotate is still copying
  FileEnds ends;
  ASSERT_TRUE(ReadEnds(Open("app.log.1", partial), partial.size(), &ends));
  EXPECT_TRUE(StartsWith(original, ends));
  EXPECT_FALSE(StartsWith(-1, ends));
  std::string differs = partial;
  differs[partial.size() - 2] = '#';  // same start, other last bytes
  ASSERT_TRUE(ReadEnds(Open("app.log.2", differs), differs.size(), &ends));
  EXPECT_FALSE(StartsWith(original, ends));
  const std::string longer = log + "more\n";  // longer than the original: not a copy of it
  ASSERT_TRUE(ReadEnds(Open("app.log.3", longer), longer.size(), &ends));
  EXPECT_FALSE(StartsWith(original, ends));
  EXPECT_FALSE(ReadEnds(Open("app.log.4", "abc"), 10, &ends));  // shorter than said
}

}  // namespace
}  // namespace faultline
