// Match-ahead (match_ahead.h) moves the primary pass of a stream's batches to worker threads; the
// findings must be exactly those of matching on the stream's own thread, in the same order, with
// the same line numbers and batches seen by an observer. Checked with the real rule pack over the
// real corpus, one stream per log and all logs as one long stream (so every slot is reused many
// times and batches wait for each other), with bytes fed in random pieces.
#include "agent/match/match_ahead.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/match/stream_pipeline.h"
#include "agent/rules/rule_loader.h"
#include "tests/support/prerequisite.h"
#include "tests/unit/match/corpus_logs.h"
#include "tests/unit/match/seen_findings.h"

namespace faultline {
namespace {

// Every OnBatch call: the batch's first line, its size and whether it was matched yet.
class BatchLog : public BatchObserver {
 public:
  void OnBatch(const LineBatch& batch, uint64_t first_line, bool matched) override {
    calls.emplace_back(first_line, batch.size(), matched);
  }
  std::vector<std::tuple<uint64_t, size_t, bool>> calls;
};

struct Scanned {
  std::vector<Seen> findings;
  uint64_t lines = 0;
  std::vector<std::tuple<uint64_t, size_t, bool>> batches_matched;
};

// Feeds `text` in pieces of random sizes (seeded), with match-ahead when `ahead` is given.
Scanned Scan(const std::shared_ptr<const RuleSet>& rules, const std::string& text,
             MatchAhead* ahead, uint32_t seed) {
  SeenFindings sink;
  BatchLog observer;
  MatchScratch scratch(rules->patterns());
  StreamPipeline pipeline(rules, &sink, &scratch, FramingOptions{});
  pipeline.set_observer(&observer);
  pipeline.set_match_ahead(ahead);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> piece(1, 3 * StreamPipeline::kBatchBytes);
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(text.size() - at, piece(rng));
    pipeline.Feed(std::string_view(text).substr(at, n));
    at += n;
  }
  pipeline.Finish();
  EXPECT_FALSE(pipeline.has_pending());
  Scanned out{sink.seen, pipeline.lines(), {}};
  for (const auto& call : observer.calls) {
    if (std::get<2>(call)) out.batches_matched.push_back(call);
  }
  return out;
}

class MatchAheadOnTheCorpus : public ::testing::Test {
 protected:
  void SetUp() override {
    FAULTLINE_REQUIRE(std::filesystem::is_directory(CorpusDir()), "no corpus at " << CorpusDir());
    auto loaded = LoadRules({BundledRulesDir().string()});
    ASSERT_TRUE(loaded.ok()) << FormatErrors(loaded.errors());
    auto compiled = RuleSet::Compile(std::move(loaded).value(), "", {});
    ASSERT_TRUE(compiled.ok()) << FormatErrors(compiled.errors());
    rules_ = compiled.value();
    for (const auto& path : CorpusLogPaths()) logs_.push_back(ReadWholeFile(path));
  }

  std::shared_ptr<const RuleSet> rules_;
  std::vector<std::string> logs_;
};

TEST_F(MatchAheadOnTheCorpus, EachLogFindsWhatMatchingInLineFinds) {
  auto ahead = MatchAhead::Start(rules_->patterns(), 2, 3);
  ASSERT_NE(ahead, nullptr);
  size_t findings = 0;
  for (size_t i = 0; i < logs_.size(); ++i) {
    const Scanned in_line = Scan(rules_, logs_[i], nullptr, static_cast<uint32_t>(i));
    const Scanned matched_ahead = Scan(rules_, logs_[i], ahead.get(), static_cast<uint32_t>(i));
    EXPECT_EQ(in_line.findings, matched_ahead.findings) << "log " << i;
    EXPECT_EQ(in_line.lines, matched_ahead.lines) << "log " << i;
    EXPECT_EQ(in_line.batches_matched, matched_ahead.batches_matched) << "log " << i;
    findings += in_line.findings.size();
  }
  EXPECT_GT(logs_.size(), 50u);
  EXPECT_GT(findings, logs_.size());
}

TEST_F(MatchAheadOnTheCorpus, OneLongStreamReusingEverySlotFindsWhatMatchingInLineFinds) {
  std::string all;
  while (all.size() < 40 * StreamPipeline::kBatchBytes) {
    for (const std::string& log : logs_) all += log;
  }
  const Scanned in_line = Scan(rules_, all, nullptr, 7);
  ASSERT_GT(in_line.batches_matched.size(), 20u);
  for (const auto& [threads, depth] : {std::pair{1, 2}, std::pair{2, 3}, std::pair{4, 9}}) {
    auto ahead = MatchAhead::Start(rules_->patterns(), threads, depth);
    ASSERT_NE(ahead, nullptr);
    const Scanned matched_ahead = Scan(rules_, all, ahead.get(), 7);
    EXPECT_EQ(in_line.findings, matched_ahead.findings) << threads << " threads";
    EXPECT_EQ(in_line.lines, matched_ahead.lines) << threads << " threads";
    EXPECT_EQ(in_line.batches_matched, matched_ahead.batches_matched) << threads << " threads";
  }
}

TEST(MatchAhead, SlotsAreHandedOutUpToTheDepthAndComeBackInSubmissionOrder) {
  auto rules = ParseRules(R"(id: t.oom
title: t
severity: error
category: memory
match: ['out of memory']
root_cause: r
fix: f
)",
                          "t.yaml");
  ASSERT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  auto set = RuleSet::Compile(std::move(rules).value(), "", {});
  ASSERT_TRUE(set.ok());
  auto ahead = MatchAhead::Start(set.value()->patterns(), 2, 3);
  ASSERT_NE(ahead, nullptr);
  std::vector<MatchAhead::Slot*> out;
  for (int i = 0; i < 3; ++i) {
    MatchAhead::Slot* slot = ahead->Acquire();
    ASSERT_NE(slot, nullptr);
    // Batch i has its hit on line i.
    for (int line = 0; line < 3; ++line) slot->batch.Append(line == i ? "out of memory" : "ok");
    ahead->Submit(slot);
    out.push_back(slot);
  }
  EXPECT_EQ(ahead->Acquire(), nullptr);
  EXPECT_EQ(ahead->submitted(), 3u);
  for (int i = 0; i < 3; ++i) {
    MatchAhead::Slot* slot = ahead->Oldest();
    ASSERT_EQ(slot, out[i]);
    ASSERT_EQ(slot->hits.size(), 1u);
    EXPECT_EQ(slot->hits[0].line, static_cast<uint32_t>(i));
    ahead->Release(slot);
  }
  EXPECT_EQ(ahead->Oldest(), nullptr);
  MatchAhead::Slot* again = ahead->Acquire();
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(again->batch.empty());
}

}  // namespace
}  // namespace faultline
