#include "agent/match/pattern_set.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace faultline {
namespace {

using Hit = PatternSet::Hit;
using ::testing::ElementsAre;

std::vector<Hit> MatchLines(const PatternSet& set, const std::vector<std::string>& lines) {
  LineBatch batch;
  for (const auto& l : lines) batch.Append(l);
  MatchScratch scratch(set);
  std::vector<Hit> hits;
  set.Match(batch, scratch, hits);
  return hits;
}

std::unique_ptr<PatternSet> Compile(const std::vector<std::string>& patterns) {
  auto set = PatternSet::Compile(patterns);
  EXPECT_TRUE(set.ok()) << FormatErrors(set.errors());
  return std::move(set).value();
}

TEST(PatternSet, ReportsEachMatchingPatternOncePerLine) {
  auto set = Compile({"error", "out of memory", "LNK1181"});
  EXPECT_THAT(MatchLines(*set, {"ok", "error: error: out of memory", "fine", "LNK1181 error"}),
              ElementsAre(Hit{1, 0}, Hit{1, 1}, Hit{3, 0}, Hit{3, 2}));
}

TEST(PatternSet, AnchorsAreLineAnchors) {
  auto set = Compile({"^Killed$"});
  EXPECT_THAT(MatchLines(*set, {"Killed", "Process Killed", "Killed by x", "Killed"}),
              ElementsAre(Hit{0, 0}, Hit{3, 0}));
}

TEST(PatternSet, MatchesNeverSpanLines) {
  // \s and negated classes could cross a '\n' in the batch buffer; RE2 confirmation per line
  // rejects such candidates.
  auto set = Compile({R"(foo\s+bar)", "a[^z]+b"});
  EXPECT_THAT(MatchLines(*set, {"foo", "bar", "a", "b", "foo  bar"}), ElementsAre(Hit{4, 0}));
}

TEST(PatternSet, CaseInsensitiveFlag) {
  auto set = Compile({"(?i)cudnn_status_internal_error"});
  EXPECT_THAT(MatchLines(*set, {"RuntimeError: CUDNN_STATUS_INTERNAL_ERROR"}),
              ElementsAre(Hit{0, 0}));
}

TEST(PatternSet, NonAsciiLiteralsMatchAsBytes) {
  auto set = Compile({"已杀死", R"(LNK1181\b.*\baio\.lib\b)"});
  EXPECT_THAT(MatchLines(*set, {"bash: 已杀死", "LINK : fatal error LNK1181: “aio.lib”",
                                "\xff\xfe garbage LNK1181 x aio.lib"}),
              ElementsAre(Hit{0, 0}, Hit{1, 1}, Hit{2, 1}));
}

TEST(PatternSet, PatternsVectorscanRejectsFallBackToRe2) {
  // RE2's ungreedy flag (?U) is syntax Vectorscan rejects.
  auto set = Compile({"plain", R"((?U)x+y)", R"(id=A+)"});
  EXPECT_EQ(2u, set->prefiltered());
  EXPECT_THAT(MatchLines(*set, {"xxy", "plain", "id=AA", "nothing"}),
              ElementsAre(Hit{0, 1}, Hit{1, 0}, Hit{2, 2}));
}

TEST(PatternSet, InvalidPatternIsAnError) {
  auto set = PatternSet::Compile({"ok", "(unclosed"});
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.errors()[0].message, ::testing::HasSubstr("(unclosed"));
}

TEST(PatternSet, EmptyBatchHasNoHits) {
  auto set = Compile({"x"});
  EXPECT_TRUE(MatchLines(*set, {}).empty());
}

}  // namespace
}  // namespace faultline
