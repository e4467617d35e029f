#include "agent/match/pattern_set.h"

#include <filesystem>
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

TEST(PatternSet, TextAnchorsMeanTheLineOnEveryLineOfTheBatch) {
  // Vectorscan would read \A and \z as the ends of the whole batch; such patterns fall back to RE2.
  auto set = Compile({R"(\AFATAL)", R"(BOOM\z)", R"((?i-m)^panic)", "python -m torch"});
  EXPECT_EQ(1u, set->prefiltered());
  EXPECT_THAT(MatchLines(*set, {"FATAL a", "x FATAL", "FATAL b", "big BOOM", "PANIC now",
                                "python -m torch.distributed.run"}),
              ElementsAre(Hit{0, 0}, Hit{2, 0}, Hit{3, 1}, Hit{4, 2}, Hit{5, 3}));
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

class PatternSetCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("faultline_hs_cache_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<PatternSet> CompileCached(const std::vector<std::string>& patterns) {
    auto set = PatternSet::Compile(patterns, dir_.string());
    EXPECT_TRUE(set.ok());
    return std::move(set).value();
  }
  std::filesystem::path dir_;
};

TEST_F(PatternSetCacheTest, SecondCompileOfTheSamePatternsLoadsTheCachedDatabase) {
  const std::vector<std::string> patterns = {"out of memory", R"((?U)x+y)", "LNK1181"};
  auto first = CompileCached(patterns);
  EXPECT_FALSE(first->from_cache());
  auto second = CompileCached(patterns);
  EXPECT_TRUE(second->from_cache());
  EXPECT_EQ(first->prefiltered(), second->prefiltered());
  const std::vector<std::string> lines = {"CUDA out of memory", "xxy", "LNK1181 x", "fine"};
  EXPECT_EQ(MatchLines(*first, lines), MatchLines(*second, lines));
  EXPECT_THAT(MatchLines(*second, lines), ElementsAre(Hit{0, 0}, Hit{1, 1}, Hit{2, 2}));
}

TEST_F(PatternSetCacheTest, OtherPatternsDoNotHitTheCache) {
  CompileCached({"alpha"});
  EXPECT_FALSE(CompileCached({"beta"})->from_cache());
}

TEST_F(PatternSetCacheTest, CorruptEntryIsRecompiledNotTrusted) {
  CompileCached({"alpha", "beta"});
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    std::filesystem::resize_file(entry.path(), 30);
  }
  auto set = CompileCached({"alpha", "beta"});
  EXPECT_FALSE(set->from_cache());
  EXPECT_THAT(MatchLines(*set, {"beta alpha"}), ElementsAre(Hit{0, 0}, Hit{0, 1}));
  EXPECT_TRUE(CompileCached({"alpha", "beta"})->from_cache());
}

TEST_F(PatternSetCacheTest, EntryOfOtherPatternsUnderThisKeyIsNotTrusted) {
  // Simulates a hash collision or a copied file: the database of other patterns stored under the
  // name of this pattern set.
  CompileCached({"one", "two", "three", "four"});
  const auto other = std::filesystem::directory_iterator(dir_)->path();
  CompileCached({"alpha", "beta"});
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    if (entry.path() != other) std::filesystem::copy_file(other, entry.path(),
                                                          std::filesystem::copy_options::overwrite_existing);
  }
  auto set = CompileCached({"alpha", "beta"});
  EXPECT_FALSE(set->from_cache());
  EXPECT_THAT(MatchLines(*set, {"beta", "four"}), ElementsAre(Hit{0, 1}));
}

TEST_F(PatternSetCacheTest, UnwritableCacheFolderOnlyCostsTime) {
  auto set = PatternSet::Compile({"alpha"}, "/proc/no/such/cache");
  ASSERT_TRUE(set.ok());
  EXPECT_THAT(MatchLines(*set.value(), {"alpha"}), ElementsAre(Hit{0, 0}));
}

TEST(PatternSet, EmptyBatchHasNoHits) {
  auto set = Compile({"x"});
  EXPECT_TRUE(MatchLines(*set, {}).empty());
}

}  // namespace
}  // namespace faultline
