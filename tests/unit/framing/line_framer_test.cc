#include "agent/framing/line_framer.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace faultline {
namespace {

std::vector<std::string> Lines(const LineBatch& batch) {
  std::vector<std::string> out;
  for (size_t i = 0; i < batch.size(); ++i) out.emplace_back(batch.line(i));
  return out;
}

std::vector<std::string> Frame(const std::vector<std::string>& chunks, size_t max = 1 << 20) {
  LineFramer framer(max);
  LineBatch batch;
  for (const auto& c : chunks) framer.Feed(c, batch);
  framer.Finish(batch);
  return Lines(batch);
}

using Strings = std::vector<std::string>;

TEST(LineFramer, SplitsAtNewline) {
  EXPECT_EQ((Strings{"a", "bc", ""}), Frame({"a\nbc\n\n"}));
}

TEST(LineFramer, CrLfIsOneTerminator) {
  EXPECT_EQ((Strings{"a", "b"}), Frame({"a\r\nb\r\n"}));
}

TEST(LineFramer, CrLfSplitAcrossReadsIsOneTerminator) {
  EXPECT_EQ((Strings{"a", "b"}), Frame({"a\r", "\nb\n"}));
}

TEST(LineFramer, EmptyReadBetweenCrAndLfKeepsThemOneTerminator) {
  EXPECT_EQ((Strings{"x", "y"}), Frame({"x\r", "", "\ny\n"}));
}

TEST(LineFramer, BareCrEndsAProgressBarRedraw) {
  EXPECT_EQ((Strings{" 10%|#  |", " 20%|## |", "RuntimeError: CUDA out of memory."}),
            Frame({" 10%|#  |\r 20%|## |\rRuntimeError: CUDA out of memory.\n"}));
}

TEST(LineFramer, PartialLineWaitsForItsTerminator) {
  LineFramer framer;
  LineBatch batch;
  framer.Feed("hello wo", batch);
  EXPECT_TRUE(batch.empty());
  EXPECT_TRUE(framer.has_partial());
  framer.Feed("rld\nnext", batch);
  EXPECT_EQ((Strings{"hello world"}), Lines(batch));
  framer.Finish(batch);
  EXPECT_EQ((Strings{"hello world", "next"}), Lines(batch));
}

TEST(LineFramer, StripsAnsiColour) {
  EXPECT_EQ((Strings{"error: failed"}), Frame({"\x1b[1;31merror\x1b[0m: failed\n"}));
}

TEST(LineFramer, StripsAnsiSplitAcrossReads) {
  EXPECT_EQ((Strings{"error: x"}), Frame({"\x1b[3", "1merror\x1b[0m: x\n"}));
}

TEST(LineFramer, LongLineIsCutAndTheRestSkipped) {
  LineFramer framer(8);
  LineBatch batch;
  framer.Feed("0123456789abcdef\nshort\n", batch);
  EXPECT_EQ((Strings{"01234567", "short"}), Lines(batch));
  EXPECT_EQ(1u, framer.truncated_lines());
}

TEST(LineFramer, LongLineAcrossManyReadsStaysBounded) {
  LineFramer framer(16);
  LineBatch batch;
  for (int i = 0; i < 1000; ++i) framer.Feed("xxxxxxxxxx", batch);
  framer.Feed("yy\nafter\n", batch);
  EXPECT_EQ((Strings{"xxxxxxxxxxxxxxxx", "after"}), Lines(batch));
  EXPECT_EQ(1u, framer.truncated_lines());
}

TEST(LineFramer, LineOfExactlyMaxBytesIsNotTruncated) {
  LineFramer framer(4);
  LineBatch batch;
  framer.Feed("ab", batch);
  framer.Feed("cd\n", batch);
  framer.Feed("efgh\n", batch);
  EXPECT_EQ((Strings{"abcd", "efgh"}), Lines(batch));
  EXPECT_EQ(0u, framer.truncated_lines());
}

TEST(LineFramer, InvalidUtf8PassesThroughAsBytes) {
  EXPECT_EQ((Strings{"bad \xff\xfe byte"}), Frame({"bad \xff\xfe byte\n"}));
}

TEST(LineFramer, NulBytesDoNotEndALine) {
  const std::string with_nul("a\0b\n", 4);
  EXPECT_EQ((Strings{std::string("a\0b", 3)}), Frame({with_nul}));
}

TEST(LineFramer, PlainLinesAroundSpecialBytesKeepTheirOrder) {
  EXPECT_EQ((Strings{"a", "b", "50%", "100%", "c", "red", "d", "0123456789ab", "e"}),
            Frame({"a\nb\n50%\r100%\nc\n\x1b[31mred\x1b[0m\nd\n0123456789abcdef\ne\n"}, 12));
}

TEST(LineFramer, FinishWithoutPartialAddsNothing) {
  EXPECT_EQ((Strings{"a"}), Frame({"a\n"}));
}

// However a stream is cut into reads, framing yields the same lines: terminators, escape
// sequences and over-long lines may all straddle a read boundary.
TEST(LineFramer, ReadBoundariesNeverChangeTheLines) {
  std::mt19937 random(20261130);
  const std::vector<std::string> pieces = {"plain line\n", "crlf\r\n", "bar 10%\r", "bar 20%\r",
                                           "\x1b[1;31mred\x1b[0m\n", std::string(40, 'L') + "\n",
                                           "\xff\xfe bytes\n", "\n", "tail without newline"};
  for (int round = 0; round < 200; ++round) {
    std::string stream;
    for (int i = 0; i < 30; ++i) stream += pieces[random() % pieces.size()];
    const auto whole = Frame({stream}, 16);
    std::vector<std::string> chunks;
    for (size_t at = 0; at < stream.size();) {
      const size_t n = 1 + random() % 23;
      chunks.push_back(stream.substr(at, n));
      at += n;
    }
    ASSERT_EQ(whole, Frame(chunks, 16)) << "round " << round;
  }
}

// A long line ends up in the batch in the buffer it was assembled in: held once, not copied.
TEST(LineBatch, AppendAdoptingTakesOverALongLinesBuffer) {
  LineBatch batch;
  batch.Append("first", 0);
  std::string line(LineBatch::kAdoptAtBytes, 'x');
  line.reserve(line.size() + 1024);
  const char* const buffer = line.data();
  batch.AppendAdopting(line, 6);
  EXPECT_TRUE(line.empty());
  ASSERT_EQ(2u, batch.size());
  EXPECT_EQ(buffer, batch.text().data());
  EXPECT_EQ("first", batch.line(0));
  EXPECT_EQ(std::string(LineBatch::kAdoptAtBytes, 'x'), batch.line(1));
  EXPECT_EQ(6u, batch.stream_begin(1));
  EXPECT_EQ('\n', batch.text().back());
}

TEST(LineBatch, AppendAdoptingCopiesWhenTheLineHasNoRoomForTheBatch) {
  LineBatch batch;
  batch.Append("first");
  std::string line(LineBatch::kAdoptAtBytes, 'y');
  line.shrink_to_fit();
  batch.AppendAdopting(line);
  EXPECT_TRUE(line.empty());
  EXPECT_EQ(std::string(LineBatch::kAdoptAtBytes, 'y'), batch.line(1));
}

TEST(LineBatch, ClearGivesBackTheBufferOfAnOverlongLine) {
  LineBatch batch;
  batch.Append(std::string(LineBatch::kRetainedBytes + 1, 'z'));
  batch.Clear();
  EXPECT_LE(batch.capacity_bytes(), LineBatch::kRetainedBytes);
  batch.Append(std::string(1000, 'z'));
  const size_t small = batch.capacity_bytes();
  batch.Clear();
  EXPECT_EQ(small, batch.capacity_bytes());  // an ordinary buffer is kept for the next lines
}

// A long line, its colour codes and terminator split across reads, framed on the path that hands
// its buffer to the batch: the same line as framing it in one piece.
TEST(LineFramer, LongLineAcrossReadsIsStrippedAndEmittedWhole) {
  const std::string body(LineBatch::kAdoptAtBytes * 2, 'b');
  const std::string stream = "short\n\x1b[31m" + body + "\x1b[0m end\r\nnext\n";
  std::vector<std::string> chunks;
  for (size_t at = 0; at < stream.size(); at += 4093) chunks.push_back(stream.substr(at, 4093));
  EXPECT_EQ((Strings{"short", body + " end", "next"}), Frame(chunks, 4 * LineBatch::kAdoptAtBytes));
  EXPECT_EQ((Strings{"short", body + " end", "next"}), Frame({stream}, 4 * LineBatch::kAdoptAtBytes));
}

TEST(LineFramer, LongUnterminatedLineIsEmittedAtFinish) {
  const std::string body(LineBatch::kAdoptAtBytes + 10, 'c');
  EXPECT_EQ((Strings{"a", body}), Frame({"a\n", body.substr(0, 100), body.substr(100)}));
}

TEST(LineFramer, LongLineCutAtMaxIsHeldOnceAndTheRestSkipped) {
  const size_t max = LineBatch::kAdoptAtBytes * 2;
  LineFramer framer(max);
  LineBatch batch;
  const std::string chunk(64 * 1024, 'd');
  for (int i = 0; i < 20; ++i) framer.Feed(chunk, batch);
  framer.Feed("\nafter\n", batch);
  ASSERT_EQ(2u, batch.size());
  EXPECT_EQ(std::string(max, 'd'), batch.line(0));
  EXPECT_EQ("after", batch.line(1));
  EXPECT_EQ(1u, framer.truncated_lines());
}

TEST(LineBatch, LineAtMapsOffsetsToLines) {
  LineBatch batch;
  batch.Append("ab");
  batch.Append("");
  batch.Append("cde");
  EXPECT_EQ(0u, batch.LineAt(0));
  EXPECT_EQ(0u, batch.LineAt(2));  // the terminator belongs to its line
  EXPECT_EQ(1u, batch.LineAt(3));
  EXPECT_EQ(2u, batch.LineAt(4));
  EXPECT_EQ(2u, batch.LineAt(7));
}

}  // namespace
}  // namespace faultline
