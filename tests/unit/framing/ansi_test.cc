#include "agent/framing/ansi.h"

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

}  // namespace
}  // namespace faultline
