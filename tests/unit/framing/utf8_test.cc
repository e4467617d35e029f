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

}  // namespace
}  // namespace faultline
