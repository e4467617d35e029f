#include "agent/framing/utf8.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

TEST(SanitizeUtf8, KeepsValidText) {
  EXPECT_EQ("已杀死 “aio.lib” ok", SanitizeUtf8("已杀死 “aio.lib” ok"));
}

TEST(SanitizeUtf8, ReplacesInvalidBytes) {
  EXPECT_EQ("a\xEF\xBF\xBD" "b", SanitizeUtf8("a\xff" "b"));
}

TEST(SanitizeUtf8, ReplacesTruncatedSequenceAtEnd) {
  EXPECT_EQ("x\xEF\xBF\xBD", SanitizeUtf8("x\xE5"));
}

TEST(SanitizeUtf8, RejectsOverlongAndSurrogates) {
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\x94\xA5"));
  EXPECT_TRUE(IsValidUtf8(SanitizeUtf8("\xC0\xAF\xED\xA0\x80\xF8")));
}

TEST(SanitizeForDisplay, EscapesControlCharacters) {
  EXPECT_EQ("a\\x1b[31m\\x00b\tc", SanitizeForDisplay(std::string("a\x1b[31m\0b\tc", 10)));
}

TEST(SanitizeForDisplay, EscapesC1Controls) {
  // U+0085 (NEL) is a newline and U+009B (CSI) an escape sequence to some terminals.
  EXPECT_EQ("a\\u0080b\\u0085c\\u009b31md\\u009f",
            SanitizeForDisplay("a\xC2\x80" "b\xC2\x85" "c\xC2\x9B" "31md\xC2\x9F"));
}

// "Trojan Source": a right-to-left override makes `ok ... rorre` display as `ok ... error`.
TEST(SanitizeForDisplay, EscapesBidiControls) {
  EXPECT_EQ("ok \\u202erorre\\u202c", SanitizeForDisplay("ok \xE2\x80\xAE" "rorre" "\xE2\x80\xAC"));
  EXPECT_EQ("\\u202a\\u202b\\u202d", SanitizeForDisplay("\xE2\x80\xAA\xE2\x80\xAB\xE2\x80\xAD"));
  EXPECT_EQ("\\u2066\\u2067\\u2068\\u2069",
            SanitizeForDisplay("\xE2\x81\xA6\xE2\x81\xA7\xE2\x81\xA8\xE2\x81\xA9"));
  EXPECT_EQ("\\u200e\\u200f\\u061c", SanitizeForDisplay("\xE2\x80\x8E\xE2\x80\x8F\xD8\x9C"));
  EXPECT_EQ("a\\u2028b\\u2029", SanitizeForDisplay("a\xE2\x80\xA8" "b\xE2\x80\xA9"));
}

TEST(SanitizeForDisplay, KeepsPrintableTextAroundTheControls) {
  // Neighbours of the escaped ranges, and text in other scripts, pass unchanged.
  const std::string kept = "\xC2\xA0 \xE2\x80\x8D \xE2\x80\xAF \xE2\x81\xA5 \xE2\x81\xAA "
                           "\xC3\xA9 \xD7\x90 \xE4\xB8\xAD \xF0\x9F\x94\xA5";
  EXPECT_EQ(kept, SanitizeForDisplay(kept));
}

TEST(SanitizeUtf8, KeepsControlsThatAreValidUtf8) {
  // JSON and label values carry them escaped by their own encoders; only display escapes them.
  EXPECT_EQ("\xE2\x80\xAE\xC2\x85", SanitizeUtf8("\xE2\x80\xAE\xC2\x85"));
}

}  // namespace
}  // namespace faultline
