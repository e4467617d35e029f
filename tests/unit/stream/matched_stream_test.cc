#include "agent/stream/matched_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;

// `oom` matches at once; `aio` waits up to 100 lines for context, so it is pending meanwhile and
// holds the committed position back: what a restart then reads again.
constexpr char kRules[] = R"(id: t.oom
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
)";

constexpr char kReloadedRules[] = R"(id: t.segv
title: t
severity: error
category: runtime
match: ['segfault']
root_cause: r
fix: f
)";

std::shared_ptr<const RuleSet> Compile(const char* text) {
  auto rules = ParseRules(text, "t.yaml");
  EXPECT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  return RuleSet::Compile(std::move(rules).value()).value();
}

// Everything that reaches the fan-out and the alert side, in order.
class Events : public FindingSink, public StreamWatcher {
 public:
  void OnFinding(const Finding& f) override {
    log.push_back(f.rule->id + "@" + std::to_string(f.line_number));
  }
  void OnBatch(const StreamOrigin&, const LineBatch&, uint64_t, bool) override { ++batches; }
  void OnStreamEnd(const StreamOrigin& origin) override {
    log.push_back("end:" + origin.stream_name);
  }
  std::vector<std::string> log;
  int batches = 0;
};

// One agent's worth of shared parts: rules, scratch, metrics, the recording fan-out.
class MatchedStreamTest : public ::testing::Test {
 protected:
  MatchedStreamTest()
      : rules_(Compile(kRules)), scratch_(rules_->patterns()), metrics_(rules_->rules()) {}

  std::unique_ptr<MatchedStream> Open(const std::string& name, MatchedStream::Resume resume = {}) {
    return std::make_unique<MatchedStream>(MatchedStream::Options{
        .wiring = {.rules = rules_,
                   .scratch = &scratch_,
                   .framing = FramingOptions{},
                   .findings = &events_,
                   .metrics = &metrics_,
                   .watcher = &events_,
                   .live = &live_},
        .origin = StreamOrigin{"train", ++streams_, name},
        .counters = metrics_.ForSource("train"),
        .resume = resume,
    });
  }
  double Lines() { return metrics_.ForSource("train").lines->Value(); }
  double Bytes() { return metrics_.ForSource("train").bytes->Value(); }

  std::shared_ptr<const RuleSet> rules_;
  MatchScratch scratch_;
  Metrics metrics_;
  Events events_;
  LiveStreams live_;
  uint64_t streams_ = 0;
};

TEST_F(MatchedStreamTest, CountsLinesBytesAndFindingsOfAFreshStream) {
  auto stream = Open("/logs/a.log");
  const std::string text = "step 1\nout of memory\nstep 2\n";
  stream->OnBytes(text);
  EXPECT_EQ(3, Lines());
  EXPECT_EQ(static_cast<double>(text.size()), Bytes());
  EXPECT_THAT(events_.log, ElementsAre("t.oom@2"));
  EXPECT_GT(events_.batches, 0);
}

TEST_F(MatchedStreamTest, ResumedStreamDoesNotCountTheReplayedLinesTwice) {
  // Before the restart: line 3 is a pending hit, so the checkpoint commits only lines 1-2 while
  // 5 lines were read and counted, and line 4's finding went out.
  const std::string settled = "step 1\nstep 2\n";
  const std::string replayed = "LNK1181 aio.lib\nout of memory\nstep 3\n";
  StreamState saved;
  {
    auto before = Open("/logs/a.log");
    before->OnBytes(settled + replayed);
    saved = before->State();
    // The restart comes before the stream ends: nothing more of it counts.
  }
  ASSERT_EQ(settled.size(), saved.committed.offset);
  ASSERT_EQ(5u, saved.read_line);
  ASSERT_THAT(saved.pending_hits, ElementsAre(PendingHitState{"t.aio", 3}));
  EXPECT_EQ(5, Lines());
  EXPECT_THAT(events_.log, ElementsAre("t.oom@4"));
  const double bytes_before = Bytes();

  // After it: reading starts again at the committed position.
  auto after = Open("/logs/a.log", {.offset = saved.committed.offset, .saved = &saved});
  after->OnBytes(replayed);
  EXPECT_EQ(5, Lines()) << "replayed lines counted again";
  EXPECT_EQ(bytes_before, Bytes()) << "replayed bytes counted again";
  // While still at the old read point, State says what the checkpoint said: still pending.
  StreamState during = after->State();
  EXPECT_EQ(5u, during.read_line);
  EXPECT_THAT(during.pending_hits, ElementsAre(PendingHitState{"t.aio", 3}));

  const std::string fresh = "out of memory\n";
  after->OnBytes(fresh);
  EXPECT_EQ(6, Lines());
  EXPECT_EQ(bytes_before + static_cast<double>(fresh.size()), Bytes());
  after->OnEnd();
  // Line 4's finding once (before the restart), the pending hit once (settled at the end), the
  // new line's finding, then the end.
  EXPECT_THAT(events_.log, ElementsAre("t.oom@4", "t.oom@6", "t.aio@3", "end:/logs/a.log"));
}

TEST_F(MatchedStreamTest, ReloadRebindsEveryLiveStreamToTheNewRules) {
  auto a = Open("/logs/a.log");
  auto b = Open("/logs/b.log");
  EXPECT_EQ(2u, live_.size());
  a->OnBytes("out of memory\n");
  const auto reloaded = Compile(kReloadedRules);
  MatchScratch reloaded_scratch(reloaded->patterns());
  live_.Rebind(reloaded, &reloaded_scratch);
  a->OnBytes("out of memory\nsegfault\n");
  b->OnBytes("segfault\n");
  EXPECT_THAT(events_.log, ElementsAre("t.oom@1", "t.segv@3", "t.segv@1"));
  EXPECT_EQ(4, Lines());
  b.reset();
  EXPECT_EQ(1u, live_.size());
}

TEST_F(MatchedStreamTest, EndSettlesPendingHitsAndAPartialLineBeforeTheWatcherHearsOfIt) {
  auto stream = Open("-");
  stream->OnBytes("LNK1181 aio.lib\nout of mem");
  EXPECT_EQ(1, Lines());
  EXPECT_TRUE(events_.log.empty());
  stream->OnBytes("ory");
  stream->OnEnd();
  EXPECT_EQ(2, Lines());
  // The last line's finding as it is framed, then the hit its context never confirmed.
  EXPECT_THAT(events_.log, ElementsAre("t.oom@2", "t.aio@1", "end:-"));
}

TEST_F(MatchedStreamTest, AFrozenStreamCountsNothingMoreAndDoesNotEnd) {
  bool frozen = false;
  auto stream = Open("/logs/a.log", {.frozen = &frozen});
  stream->OnBytes("LNK1181 aio.lib\n");
  frozen = true;
  stream->OnBytes("out of memory\n");
  stream->OnQuiet();
  stream->OnEnd();
  EXPECT_EQ(1, Lines());
  EXPECT_TRUE(events_.log.empty()) << events_.log.front();
  // Its state is as it stood when the agent froze it: the pending hit is read again later.
  EXPECT_THAT(stream->State().pending_hits, ElementsAre(PendingHitState{"t.aio", 1}));
}

}  // namespace
}  // namespace faultline
