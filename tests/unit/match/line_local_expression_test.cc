#include "agent/match/line_local_expression.h"

#include <gtest/gtest.h>
#include <hs/hs.h>
#include <re2/re2.h>

#include <string>

namespace faultline {
namespace {

TEST(LineLocalExpression, PiecesThatMatchANewlineNoLongerDo) {
  EXPECT_EQ(LineLocalExpression(R"(command\s+'[^']+')"), R"(command[\t\f\r \x0b]+'[^'\n]+')");
  EXPECT_EQ(LineLocalExpression(R"(a\Wb\Dc)"), R"(a[^\w\n]b[^\d\n]c)");
  EXPECT_EQ(LineLocalExpression(R"([\s,]+x)"), R"([\t\f\r \x0b,]+x)");
  EXPECT_EQ(LineLocalExpression(R"([^\s'"]*)"), R"([^\s'"\n]*)");
  EXPECT_EQ(LineLocalExpression(R"([^\]x]y)"), R"([^\]x\n]y)");
}

TEST(LineLocalExpression, WhatItCannotRewriteSafelyIsLeftAsItIs) {
  for (const char* kept : {R"(no classes at all \d+ \w+ \S+ word)", R"([^]x])", R"([^-x])",
                           R"([^x-])", R"([^[:alpha:]])", R"(\Q\s [^a]\E)"}) {
    EXPECT_EQ(LineLocalExpression(kept), kept);
  }
  // An escaped backslash, then a letter or a class.
  EXPECT_EQ(LineLocalExpression(R"(\\s)"), R"(\\s)");
  EXPECT_EQ(LineLocalExpression(R"(\\[^a]+)"), R"(\\[^a\n]+)");
}

// RE2 confirms every candidate, so the word boundaries are left to it.
TEST(LineLocalExpression, WordBoundariesAreLeftToRe2) {
  EXPECT_EQ(LineLocalExpression(R"(\bLNK1181\b.*\baio\.lib\b)"), R"(LNK1181.*aio\.lib)");
  EXPECT_EQ(LineLocalExpression(R"(a\Bb)"), R"(ab)");
  EXPECT_EQ(LineLocalExpression(R"(\\b)"), R"(\\b)");  // a backslash, then the letter b
  EXPECT_EQ(LineLocalExpression(R"(\Q\bx\E)"), R"(\Q\bx\E)");
}

// The rewrite keeps every match that lies within one line: RE2 and Vectorscan both accept the
// result, and it matches every single line the original matches (and, without the word
// boundaries, a few more, which RE2's confirmation then drops).
TEST(LineLocalExpression, RewrittenPatternsMatchTheSameLines) {
  const char* patterns[] = {R"(\berror: command\s+'[^']+'\s+failed with exit (?:code|status) \d+)",
                            R"(Killed\W+signal\D+9)", R"(x[^a-c\s]+y)", R"([\s:]+=)"};
  const char* lines[] = {
      "error: command 'C:\\\\Program Files\\\\CUDA\\\\bin\\\\nvcc.exe' failed with exit code 1",
      "error: command  'gcc'\tfailed with exit status 2",
      "error: command 'gcc' failed",
      "Killed -- signal #9",
      "Killed signal 9",
      "xdefy",
      "xd efy",
      " :=",
      "=",
      "x\x0b\ty",
      "preerror: command 'gcc' failed with exit code 1"};
  EXPECT_FALSE(RE2::PartialMatch(lines[10], patterns[0]));
  EXPECT_TRUE(RE2::PartialMatch(lines[10], LineLocalExpression(patterns[0])));
  for (const char* pattern : patterns) {
    const RE2 original(pattern);
    const RE2 rewritten(LineLocalExpression(pattern));
    ASSERT_TRUE(rewritten.ok()) << LineLocalExpression(pattern);
    for (const char* line : lines) {
      if (RE2::PartialMatch(line, original)) {
        EXPECT_TRUE(RE2::PartialMatch(line, rewritten)) << pattern << " on " << line;
      }
    }
    hs_database_t* database = nullptr;
    hs_compile_error_t* error = nullptr;
    EXPECT_EQ(hs_compile(LineLocalExpression(pattern).c_str(), HS_FLAG_MULTILINE, HS_MODE_BLOCK,
                         nullptr, &database, &error),
              HS_SUCCESS)
        << LineLocalExpression(pattern);
    hs_free_compile_error(error);
    hs_free_database(database);
  }
}

}  // namespace
}  // namespace faultline
