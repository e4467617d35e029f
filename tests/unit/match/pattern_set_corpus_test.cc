// The primary pass over real logs: PatternSet::Match must report exactly the (line, pattern)
// pairs that RE2 finds matching each line on its own, wherever the batch's buffer lies in memory.
// Vectorscan 5.4.9 once reported `\berror: command\s+'[^']+'\s+failed ...` on a line or not
// depending on the buffer's address (line_local_expression.h); this walks the whole rule pack
// over the corpus repeated into 40 batches the size the pipeline makes, each batch moved to every
// offset from a 64-byte boundary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "agent/framing/line_framer.h"
#include "agent/match/rule_set.h"
#include "agent/match/stream_pipeline.h"
#include "agent/rules/pattern_syntax.h"
#include "agent/rules/rule_loader.h"
#include "tests/support/prerequisite.h"
#include "tests/unit/match/corpus_logs.h"

namespace faultline {
namespace {

// Every pattern RE2 finds on each line alone, as PatternSet::Hit, sorted.
std::vector<PatternSet::Hit> Re2LineByLine(const LineBatch& batch, const RE2::Set& set) {
  std::vector<PatternSet::Hit> hits;
  std::vector<int> matched;
  for (size_t line = 0; line < batch.size(); ++line) {
    matched.clear();
    RE2::Set::ErrorInfo error{RE2::Set::kNoError};
    if (!set.Match(batch.line(line), &matched, &error)) {
      EXPECT_EQ(error.kind, RE2::Set::kNoError);
      continue;
    }
    for (int id : matched) hits.push_back({static_cast<uint32_t>(line), static_cast<uint32_t>(id)});
  }
  std::sort(hits.begin(), hits.end());
  return hits;
}

TEST(PatternSetOnTheCorpus, EveryBatchAtEveryAlignmentFindsWhatRe2FindsLineByLine) {
  FAULTLINE_REQUIRE(std::filesystem::is_directory(CorpusDir()), "no corpus at " << CorpusDir());
  auto loaded = LoadRules({BundledRulesDir().string()});
  ASSERT_TRUE(loaded.ok()) << FormatErrors(loaded.errors());
  // Context patterns matched on every line too, so Match covers every pattern of the pack.
  auto compiled = RuleSet::Compile(std::move(loaded).value(), "", {}, /*window_context=*/false);
  ASSERT_TRUE(compiled.ok()) << FormatErrors(compiled.errors());
  const PatternSet& patterns = compiled.value()->patterns();

  RE2::Options options = RulePatternOptions();
  options.set_max_mem(int64_t{512} << 20);
  RE2::Set set(options, RE2::UNANCHORED);
  for (size_t i = 0; i < patterns.size(); ++i) {
    ASSERT_EQ(set.Add(patterns.regex(static_cast<uint32_t>(i)).pattern(), nullptr),
              static_cast<int>(i));
  }
  ASSERT_TRUE(set.Compile());

  std::string corpus_text;
  for (const auto& path : CorpusLogPaths()) corpus_text += ReadWholeFile(path);
  // The corpus over and over, so each of its lines also falls at many places in a batch.
  std::string all;
  while (all.size() < 40 * StreamPipeline::kBatchBytes) all += corpus_text;

  MatchScratch scratch(patterns);
  LineFramer framer(kDefaultMaxLineBytes);
  LineBatch batch;
  constexpr size_t kAlignments = 64;
  size_t batches = 0;
  size_t hits_seen = 0;
  std::vector<PatternSet::Hit> got;
  const auto check = [&] {
    if (batch.empty()) return;
    const std::vector<PatternSet::Hit> want = Re2LineByLine(batch, set);
    hits_seen += want.size();
    for (size_t shift = 0; shift < kAlignments; ++shift) {
      // The same lines `shift` bytes further into the buffer, behind empty lines (which no
      // pattern matches), so the text lies at every offset from a 64-byte boundary.
      LineBatch moved;
      for (size_t line = 0; line < shift; ++line) moved.Append("");
      for (size_t line = 0; line < batch.size(); ++line) moved.Append(batch.line(line));
      patterns.Match(moved, scratch, got);
      for (PatternSet::Hit& hit : got) hit.line -= static_cast<uint32_t>(shift);
      ASSERT_EQ(got, want) << "batch " << batches << " moved by " << shift << " bytes";
    }
    ++batches;
    batch.Clear();
  };
  for (size_t at = 0; at < all.size(); at += 4096) {
    framer.Feed(std::string_view(all).substr(at, 4096), batch);
    if (batch.bytes() >= StreamPipeline::kBatchBytes) check();
  }
  framer.Finish(batch);
  check();
  EXPECT_GT(batches, 30u);
  EXPECT_GT(hits_seen, 10000u);
}

}  // namespace
}  // namespace faultline
