#include "agent/framing/ansi.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace faultline {
namespace {

TEST(StripAnsi, RemovesSgrColour) {
  EXPECT_EQ("red plain", StripAnsi("\x1b[31mred\x1b[0m plain"));
}

TEST(StripAnsi, RemovesCursorMovementAndEraseLine) {
  EXPECT_EQ("progress", StripAnsi("\x1b[2K\x1b[1Gprogress"));
}

TEST(StripAnsi, RemovesOscHyperlinks) {
  EXPECT_EQ("link", StripAnsi("\x1b]8;;http://x\x07link\x1b]8;;\x1b\\"));
}

TEST(StripAnsi, RemovesTwoByteEscapes) { EXPECT_EQ("ab", StripAnsi("a\x1b(b")); }

TEST(StripAnsi, SequenceCutAtEndOfLineIsDropped) { EXPECT_EQ("text", StripAnsi("text\x1b[3")); }

TEST(StripAnsi, LeavesPlainTextAlone) {
  EXPECT_EQ("no [brackets] harmed", StripAnsi("no [brackets] harmed"));
}

// The in-place form removes exactly what StripAnsi removes, whatever mix of sequences and text.
TEST(StripAnsiInPlace, RemovesWhatStripAnsiRemoves) {
  std::mt19937 random(20261201);
  const std::vector<std::string> pieces = {"text", "\x1b[1;31m", "\x1b[0m", "\x1b]8;;u\x07",
                                           "\x1b]0;t\x1b\\", "\x1b(", "\x1b", "\x1b[3", "[x]",
                                           "\xff", std::string(1, '\0')};
  for (int round = 0; round < 500; ++round) {
    std::string line;
    for (int i = 0; i < 12; ++i) line += pieces[random() % pieces.size()];
    const std::string expected = StripAnsi(line);
    StripAnsiInPlace(line);
    ASSERT_EQ(expected, line) << "round " << round;
  }
}

}  // namespace
}  // namespace faultline
