#include "agent/source/line_merger.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace faultline {
namespace {

struct Collected : StreamConsumer {
  std::string bytes;
  void OnBytes(std::string_view b) override { bytes.append(b); }
  void OnQuiet() override {}
  void OnEnd() override {}
};

TEST(LineMergerTest, ALineOfOneInputIsNeverCutByALineOfTheOther) {
  Collected out;
  LineMerger merger(2, &out, 1 << 20);
  merger.Feed(0, "compiling a");
  merger.Feed(1, "warning: x\n");
  merger.Feed(0, ".cc\nlinking\n");
  EXPECT_EQ("warning: x\ncompiling a.cc\nlinking\n", out.bytes);
}

TEST(LineMergerTest, CrLfSplitBetweenReadsStaysOneLineEnd) {
  Collected out;
  LineMerger merger(2, &out, 1 << 20);
  merger.Feed(0, "a\r");
  merger.Feed(1, "B\n");
  merger.Feed(0, "\nc\n");
  EXPECT_EQ("B\na\r\nc\n", out.bytes);
}

TEST(LineMergerTest, ProgressBarRedrawsAreLinesInTheirOrder) {
  Collected out;
  LineMerger merger(2, &out, 1 << 20);
  merger.Feed(0, "10%\r");
  EXPECT_EQ("", out.bytes);  // a trailing '\r' may yet be "\r\n"
  merger.Feed(0, "20%\r");
  EXPECT_EQ("10%\r", out.bytes);
  merger.Feed(1, "E\n");
  merger.Feed(0, "done\n");
  EXPECT_EQ("10%\rE\n20%\rdone\n", out.bytes);
}

TEST(LineMergerTest, EndedInputEndsItsLastLine) {
  Collected out;
  LineMerger merger(2, &out, 1 << 20);
  merger.Feed(0, "no newline at the end");
  merger.End(0);
  merger.Feed(1, "next\n");
  EXPECT_EQ("no newline at the end\nnext\n", out.bytes);
  merger.Feed(1, "ends with cr\r");
  merger.End(1);
  EXPECT_EQ("no newline at the end\nnext\nends with cr\r", out.bytes);
}

TEST(LineMergerTest, PartialLongerThanTheCapIsHandedOn) {
  Collected out;
  LineMerger merger(2, &out, 8);
  merger.Feed(0, "0123");
  EXPECT_EQ(0u, out.bytes.size());
  merger.Feed(0, "456789");
  EXPECT_EQ("0123456789", out.bytes);
  EXPECT_EQ(0u, merger.partial_bytes(0));
}

// Two inputs of tagged lines fed in random pieces, interleaved at random: every output line is
// one whole input line, and each input's lines come out complete and in order.
TEST(LineMergerTest, RandomPiecesKeepEveryLineWholeAndInOrder) {
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    std::string input[2];
    std::vector<std::string> lines[2];
    for (int which = 0; which < 2; ++which) {
      const int count = 1 + static_cast<int>(random() % 20);
      for (int i = 0; i < count; ++i) {
        std::string line = std::string(which == 0 ? "out" : "err") + std::to_string(i) +
                           std::string(random() % 12, 'x');
        lines[which].push_back(line);
        static const char* const kEnds[] = {"\n", "\r\n", "\r"};
        input[which] += line + kEnds[random() % 3];
      }
    }
    Collected out;
    LineMerger merger(2, &out, 1 << 20);
    size_t at[2] = {0, 0};
    while (at[0] < input[0].size() || at[1] < input[1].size()) {
      const size_t which = at[0] == input[0].size()   ? 1
                           : at[1] == input[1].size() ? 0
                                                      : random() % 2;
      const size_t n = std::min<size_t>(1 + random() % 9, input[which].size() - at[which]);
      merger.Feed(which, std::string_view(input[which]).substr(at[which], n));
      at[which] += n;
    }
    merger.End(0);
    merger.End(1);
    // Split the output at \n, \r\n and bare \r, as the framer does.
    std::vector<std::string> got[2];
    std::string line;
    for (size_t i = 0; i < out.bytes.size(); ++i) {
      const char c = out.bytes[i];
      if (c != '\n' && c != '\r') {
        line += c;
        continue;
      }
      if (c == '\r' && i + 1 < out.bytes.size() && out.bytes[i + 1] == '\n') ++i;
      ASSERT_FALSE(line.empty()) << "an empty line: a line end was split, round " << round;
      got[line.rfind("out", 0) == 0 ? 0 : 1].push_back(line);
      ASSERT_TRUE(line.rfind("out", 0) == 0 || line.rfind("err", 0) == 0) << line;
      line.clear();
    }
    EXPECT_TRUE(line.empty());
    EXPECT_EQ(lines[0], got[0]) << "round " << round;
    EXPECT_EQ(lines[1], got[1]) << "round " << round;
  }
}

}  // namespace
}  // namespace faultline
