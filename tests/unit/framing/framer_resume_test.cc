// A framer that stops anywhere and a new one resumed at its resume_point() frame exactly the lines
// of one framer over the whole stream: none lost, none twice, none started mid-line.
#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/framing/line_framer.h"

namespace faultline {
namespace {

std::vector<std::string> BatchLines(const LineBatch& batch) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < batch.size(); ++i) lines.emplace_back(batch.line(i));
  return lines;
}

// Feeds `bytes` in pieces of random size.
void FeedInPieces(LineFramer& framer, std::string_view bytes, LineBatch& batch, std::mt19937& rng) {
  while (!bytes.empty()) {
    const size_t n = std::uniform_int_distribution<size_t>(0, 9)(rng);
    framer.Feed(bytes.substr(0, n), batch);
    bytes.remove_prefix(std::min(n, bytes.size()));
  }
}

TEST(FramerResume, StoppingAnywhereAndResumingFramesEveryLineOnce) {
  std::mt19937 rng(20261201);
  const std::vector<std::string> pieces = {"a", "bc", "\n", "\r", "\r\n", "\x1b[31m", "x\x1b]0;t\x07",
                                           "longlonglonglong", "\xff"};
  constexpr size_t kMaxLine = 12;
  for (int round = 0; round < 2000; ++round) {
    std::string stream;
    const int n = std::uniform_int_distribution<int>(0, 30)(rng);
    for (int i = 0; i < n; ++i) {
      stream += pieces[std::uniform_int_distribution<size_t>(0, pieces.size() - 1)(rng)];
    }
    LineFramer whole(kMaxLine);
    LineBatch expected;
    whole.Feed(stream, expected);
    whole.Finish(expected);

    const size_t stop = std::uniform_int_distribution<size_t>(0, stream.size())(rng);
    LineFramer first(kMaxLine);
    LineBatch got;
    FeedInPieces(first, std::string_view(stream).substr(0, stop), got, rng);
    const FramerPosition at = first.resume_point();
    ASSERT_LE(at.offset, stop);
    // Every line the first framer emitted begins before where the second one starts.
    for (size_t i = 0; i < got.size(); ++i) ASSERT_LT(got.stream_begin(i), at.offset + 1);
    LineFramer second(kMaxLine);
    second.Resume(at);
    FeedInPieces(second, std::string_view(stream).substr(at.offset), got, rng);
    second.Finish(got);
    ASSERT_EQ(BatchLines(expected), BatchLines(got)) << "round " << round << " stop " << stop;
  }
}

TEST(FramerResume, LinesKnowWhereTheyBeganInTheStream) {
  LineFramer framer(8);
  LineBatch batch;
  framer.Feed("ab\r\ncd\rTOO-LONG-LINE\n\x1b[1mef\n", batch);
  framer.Finish(batch);
  ASSERT_EQ(4u, batch.size());
  EXPECT_EQ(0u, batch.stream_begin(0));   // "ab"
  EXPECT_EQ(4u, batch.stream_begin(1));   // "cd"
  EXPECT_EQ(7u, batch.stream_begin(2));   // the cut line
  EXPECT_EQ(21u, batch.stream_begin(3));  // "ef" begins at its escape sequence
}

TEST(FramerResume, AFlushedPartialLineIsALineOnceAndItsRestIsSkippedEvenAfterAResume) {
  LineFramer framer;
  LineBatch batch;
  framer.Feed("one\nCUDA out of mem", batch);
  framer.FlushPartial(batch);
  EXPECT_THAT(BatchLines(batch), ::testing::ElementsAre("one", "CUDA out of mem"));
  // Stopped here: a resumed framer knows it is inside a line already taken.
  const FramerPosition stopped = framer.resume_point();
  EXPECT_EQ((FramerPosition{19, true, false}), stopped);
  LineFramer resumed;
  resumed.Resume(stopped);
  LineBatch rest;
  resumed.Feed("ory\ntwo\n", rest);
  EXPECT_THAT(BatchLines(rest), ::testing::ElementsAre("two"));
  EXPECT_EQ(0u, resumed.truncated_lines());  // a flush is not a cut
}

}  // namespace
}  // namespace faultline
