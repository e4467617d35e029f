#include "agent/match/stream_pipeline.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;

class Lines : public FindingSink {
 public:
  void OnFinding(const Finding& f) override { lines.push_back(f.line_number); }
  std::vector<uint64_t> lines;
};

std::shared_ptr<const RuleSet> Rules() {
  auto rules = ParseRules(R"(id: t.oom
title: t
severity: error
category: memory
match: ['out of memory']
root_cause: r
fix: f
---
id: t.aio
title: t
severity: error
category: build
match: ['LNK1181']
context:
  within_lines: 100
  requires_any: ['pre-compile']
  unconfirmed_severity: warning
root_cause: r
fix: f
)",
                          "t.yaml");
  EXPECT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  return RuleSet::Compile(std::move(rules).value()).value();
}

TEST(StreamPipelineState, CommittedStopsAtAPendingHitAndAtAPartialLine) {
  const auto rules = Rules();
  MatchScratch scratch(rules->patterns());
  Lines sink;
  const StreamOrigin origin{"train", 1, "/logs/a.log"};
  StreamPipeline pipeline(rules, &sink, &scratch, FramingOptions{}, &origin);

  const std::string settled = "step 1\nout of memory\n";  // 21 bytes, 2 lines
  pipeline.Feed(settled);
  pipeline.Drain();
  StreamState s = pipeline.State();
  EXPECT_EQ("train", s.source_id);
  EXPECT_EQ("/logs/a.log", s.stream_name);
  EXPECT_EQ(21u, s.committed.offset);
  EXPECT_EQ(2u, s.committed_line);
  EXPECT_EQ(21u, s.read_offset);

  pipeline.Feed("LNK1181 aio.lib\nstep 2\npart");  // a hit waiting for context, a partial line
  pipeline.Drain();
  s = pipeline.State();
  EXPECT_EQ(21u, s.committed.offset);  // the pending hit's line is not past
  EXPECT_EQ(2u, s.committed_line);
  EXPECT_EQ(21u + 27u, s.read_offset);
  EXPECT_EQ(4u, s.read_line);
  EXPECT_THAT(s.pending_hits, ElementsAre(PendingHitState{"t.aio", 3}));

  pipeline.SettlePending();
  s = pipeline.State();
  EXPECT_TRUE(s.pending_hits.empty());
  EXPECT_EQ(21u + 23u, s.committed.offset);  // the start of "part"
  EXPECT_EQ(4u, s.committed_line);
  EXPECT_THAT(sink.lines, ElementsAre(2, 3));
}

TEST(StreamPipelineState, AResumedPipelineNumbersLinesOnAndFindsWhatFollows) {
  const auto rules = Rules();
  MatchScratch scratch(rules->patterns());
  Lines sink;
  const std::string stream = "a\nb\nout of memory\nc\nout of memory\n";
  StreamPipeline first(rules, &sink, &scratch, FramingOptions{});
  first.Feed(stream.substr(0, 9));  // "a\nb\nout o"
  first.Drain();
  const StreamState s = first.State();
  ASSERT_EQ(4u, s.committed.offset);
  ASSERT_EQ(2u, s.committed_line);

  const StreamResume resume{s.committed, s.committed_line};
  StreamPipeline second(rules, &sink, &scratch, FramingOptions{}, nullptr, &resume);
  second.Feed(std::string_view(stream).substr(s.committed.offset));
  second.Finish();
  EXPECT_THAT(sink.lines, ElementsAre(3, 5));
  EXPECT_EQ(stream.size(), second.State().read_offset);
}

}  // namespace
}  // namespace faultline
