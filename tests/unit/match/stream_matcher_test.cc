#include "agent/match/stream_matcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/rules/rule_loader.h"
#include "tests/unit/match/seen_findings.h"

namespace faultline {
namespace {

std::shared_ptr<const RuleSet> Rules(const std::string& yaml) {
  auto rules = ParseRules(yaml, "test.yaml");
  EXPECT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  auto set = RuleSet::Compile(std::move(rules).value());
  EXPECT_TRUE(set.ok()) << FormatErrors(set.errors());
  return set.value();
}

// Feeds `lines` in batches of `batch_lines` and optionally flushes at the end.
std::vector<Seen> Scan(const std::shared_ptr<const RuleSet>& rules,
                       const std::vector<std::string>& lines, bool flush = true,
                       size_t batch_lines = 1000) {
  SeenFindings sink;
  StreamMatcher matcher(rules, &sink);
  MatchScratch scratch(rules->patterns());
  LineBatch batch;
  for (size_t i = 0; i < lines.size(); ++i) {
    batch.Append(lines[i]);
    if (batch.size() == batch_lines) {
      matcher.Process(batch, scratch);
      batch.Clear();
    }
  }
  matcher.Process(batch, scratch);
  if (flush) matcher.Finish();
  return sink.seen;
}

constexpr char kRuleHead[] = "title: t\ncategory: build\nroot_cause: r\nfix: f\n";

std::string RuleYaml(const std::string& body) { return std::string(kRuleHead) + body; }

TEST(StreamMatcher, EveryMatchingRuleCountsOncePerLine) {
  auto rules = Rules(RuleYaml("id: a.one\nseverity: error\nmatch: ['out of memory', 'memory']\n") +
                     "---\n" + RuleYaml("id: a.two\nseverity: warning\nmatch: ['CUDA']\n"));
  EXPECT_THAT(Scan(rules, {"CUDA out of memory", "fine", "memory"}),
              ::testing::ElementsAre(Seen{"a.one", Severity::kError, 1, "CUDA out of memory", {}},
                                     Seen{"a.two", Severity::kWarning, 1, "CUDA out of memory", {}},
                                     Seen{"a.one", Severity::kError, 3, "memory", {}}));
}

constexpr char kAio[] = R"(id: ds.aio
severity: error
match: ['LNK1181\b.*\baio\.lib\b']
context:
  within_lines: 10
  requires_any: ['Unable to pre-compile async_io', 'DS_BUILD_OPS=1']
  unconfirmed_severity: warning
)";

TEST(StreamMatcher, ALineMatchingSeveralPatternsOfARuleCountsOnce) {
  auto rules =
      Rules(RuleYaml("id: gpu.xid\nseverity: error\nmatch: ['NVRM: Xid', 'Xid \\(PCI', "
                 "'fallen off the bus']\n"));
  EXPECT_EQ(1u,
            Scan(rules, {"NVRM: Xid (PCI:0000:cb:00): 79, GPU has fallen off the bus."}).size());
}

TEST(StreamMatcher, RequiresAnyAfterTheHitConfirmsIt) {
  auto rules = Rules(RuleYaml(kAio));
  EXPECT_THAT(Scan(rules,
                   {"test.c", "LINK : fatal error LNK1181: 'aio.lib'", "x",
                    "AssertionError: Unable to pre-compile async_io"},
                   /*flush=*/false),
              ::testing::ElementsAre(Seen{
                  "ds.aio", Severity::kError, 2, "LINK : fatal error LNK1181: 'aio.lib'", {}}));
}

TEST(StreamMatcher, RequiresAnyBeforeTheHitConfirmsItAtOnce) {
  auto rules = Rules(RuleYaml(kAio));
  EXPECT_THAT(Scan(rules, {"DS_BUILD_OPS=1", "LNK1181 aio.lib"}, /*flush=*/false),
              ::testing::ElementsAre(Seen{"ds.aio", Severity::kError, 2, "LNK1181 aio.lib", {}}));
}

TEST(StreamMatcher, UnconfirmedHitIsReportedAtItsLowerSeverityAtEndOfInput) {
  auto rules = Rules(RuleYaml(kAio));
  EXPECT_THAT(Scan(rules, {"import deepspeed", "LNK1181 aio.lib", "training step 1"}),
              ::testing::ElementsAre(Seen{"ds.aio", Severity::kWarning, 2, "LNK1181 aio.lib", {}}));
}

TEST(StreamMatcher, PendingHitIsNotLostWithoutFlush) {
  // Nothing is reported before the window has passed or the stream is flushed...
  auto rules = Rules(RuleYaml(kAio));
  EXPECT_TRUE(Scan(rules, {"LNK1181 aio.lib"}, /*flush=*/false).empty());
  // ...and once the window has passed, it is, even with no further hit.
  std::vector<std::string> lines = {"LNK1181 aio.lib"};
  for (int i = 0; i < 20; ++i) lines.push_back("step");
  EXPECT_THAT(Scan(rules, lines, /*flush=*/false, /*batch_lines=*/5),
              ::testing::ElementsAre(Seen{"ds.aio", Severity::kWarning, 1, "LNK1181 aio.lib", {}}));
}

TEST(StreamMatcher, AFloodOfPendingHitsIsBoundedAndNoneIsLost) {
  // A window wider than the pending cap: the oldest hits are settled early, with what is known.
  auto rules =
      Rules(RuleYaml("id: ds.aio\nseverity: error\nmatch: ['LNK1181']\n"
                 "context:\n  within_lines: 5000\n  requires_any: ['pre-compile']\n"
                 "  unconfirmed_severity: warning\n"));
  std::vector<std::string> lines(StreamMatcher::kMaxPending + 500, "LNK1181 aio.lib");
  const auto seen = Scan(rules, lines);
  EXPECT_EQ(lines.size(), seen.size());
  for (const Seen& s : seen) EXPECT_EQ(Severity::kWarning, s.severity);
}

TEST(StreamMatcher, RequirementOutsideTheWindowDoesNotConfirm) {
  auto rules = Rules(RuleYaml(kAio));
  std::vector<std::string> lines = {"LNK1181 aio.lib"};
  for (int i = 0; i < 10; ++i) lines.push_back("step");
  lines.push_back("Unable to pre-compile async_io");
  EXPECT_EQ(Severity::kWarning, Scan(rules, lines).at(0).severity);
}

TEST(StreamMatcher, UnconfirmedHitWithoutFallbackSeverityIsDropped) {
  auto rules =
      Rules(RuleYaml("id: a.b\nseverity: error\nmatch: ['pip failed']\n"
                 "context: {requires_any: ['deepspeed']}\n"));
  EXPECT_TRUE(Scan(rules, {"pip failed"}).empty());
  EXPECT_EQ(1u, Scan(rules, {"Collecting deepspeed", "pip failed"}).size());
}

TEST(StreamMatcher, DowngradeIfFollowedBy) {
  auto rules =
      Rules(RuleYaml("id: a.b\nseverity: error\nmatch: ['Building extension module cpu_adam']\n"
                 "context:\n  within_lines: 5\n"
                 "  downgrade_if_followed_by: ['ninja: no work to do']\n"
                 "  downgrade_to: info\n"));
  EXPECT_THAT(Scan(rules, {"Building extension module cpu_adam...", "ninja: no work to do."},
                   /*flush=*/false),
              ::testing::ElementsAre(
                  Seen{"a.b", Severity::kInfo, 1, "Building extension module cpu_adam...", {}}));
  EXPECT_EQ(
      Severity::kError,
      Scan(rules, {"Building extension module cpu_adam...", "FAILED: cpu_adam.o"}).at(0).severity);
}

TEST(StreamMatcher, DowngradeIfPrecededBy) {
  auto rules =
      Rules(RuleYaml("id: a.b\nseverity: error\nmatch: ['grad_norm: nan']\n"
                 "context:\n  within_lines: 3\n"
                 "  downgrade_if_preceded_by: ['iteration 1/']\n"));
  EXPECT_EQ(Severity::kWarning, Scan(rules, {"iteration 1/100", "grad_norm: nan"}).at(0).severity);
  EXPECT_EQ(Severity::kError,
            Scan(rules, {"iteration 1/100", "a", "b", "c", "grad_norm: nan"}).at(0).severity);
}

TEST(StreamMatcher, SequenceAcrossLinesIsOneFindingAtItsFirstLine) {
  auto rules =
      Rules(RuleYaml("id: gpu.bus\nseverity: critical\nmatch:\n"
                 "  - sequence: ['NVRM: The NVIDIA GPU', 'installed in this system has',"
                 " 'fallen off the bus']\n    within_lines: 4\n"));
  EXPECT_THAT(Scan(rules, {"x", "NVRM: The NVIDIA GPU 0000:01:00.0",
                           "NVRM: (PCI ID: 10de:2204) installed in this system has",
                           "NVRM: fallen off the bus and is not responding to commands."}),
              ::testing::ElementsAre(Seen{
                  "gpu.bus", Severity::kCritical, 2, "NVRM: The NVIDIA GPU 0000:01:00.0", {}}));
}

TEST(StreamMatcher, SequenceSpreadTooFarIsNoMatch) {
  auto rules =
      Rules(RuleYaml("id: a.b\nseverity: error\nmatch:\n"
                 "  - sequence: ['first part', 'second part']\n    within_lines: 2\n"));
  EXPECT_TRUE(Scan(rules, {"first part", "noise", "second part"}).empty());
  EXPECT_EQ(1u, Scan(rules, {"first part", "second part"}).size());
}

TEST(StreamMatcher, LineRaisedByAPatternIsNotCountedAgainWhenItStartsASequence) {
  auto rules =
      Rules(RuleYaml("id: a.b\nseverity: error\nmatch:\n  - 'version mismatch'\n"
                 "  - sequence: ['version mismatch', 'Pytorch binaries']\n"));
  // Line 1 starts the sequence and is raised by the single-line pattern; line 2 raises it too;
  // line 3 completes the sequence that started on line 1, which was counted already.
  EXPECT_EQ(2u, Scan(rules, {"version mismatch", "version mismatch", "Pytorch binaries"}).size());
}

TEST(StreamMatcher, SequenceContextIsMeasuredFromTheLineThatCompletesIt) {
  auto rules =
      Rules(RuleYaml("id: a.b\nseverity: error\nmatch:\n"
                 "  - sequence: ['STEP_A', 'STEP_B']\n    within_lines: 5\n"
                 "context:\n  within_lines: 1\n  downgrade_if_followed_by: ['BENIGN']\n"));
  EXPECT_EQ(Severity::kError, Scan(rules, {"STEP_A", "BENIGN", "STEP_B", "x", "y"}).at(0).severity);
  EXPECT_EQ(Severity::kWarning, Scan(rules, {"STEP_A", "STEP_B", "BENIGN"}).at(0).severity);
}

TEST(StreamMatcher, SettlingPendingHitsKeepsSequencesInProgress) {
  auto rules =
      Rules(RuleYaml("id: a.seq\nseverity: error\nmatch:\n  - sequence: ['SQ_A', 'SQ_B']\n") + "---\n" +
            RuleYaml("id: a.ctx\nseverity: error\nmatch: ['CTXHIT']\n"
                 "context: {requires_any: ['never']}\n"));
  SeenFindings sink;
  StreamMatcher matcher(rules, &sink);
  MatchScratch scratch(rules->patterns());
  LineBatch batch;
  batch.Append("SQ_A");
  batch.Append("CTXHIT");
  matcher.Process(batch, scratch);
  matcher.SettlePending();  // the stream went quiet
  batch.Clear();
  batch.Append("SQ_B");
  matcher.Process(batch, scratch);
  ASSERT_EQ(1u, sink.seen.size());
  EXPECT_EQ("a.seq", sink.seen[0].rule);
}

TEST(StreamMatcher, SequenceSplitAcrossBatches) {
  auto rules =
      Rules(RuleYaml("id: a.b\nseverity: error\nmatch:\n"
                 "  - sequence: ['first part', 'second part']\n"));
  EXPECT_EQ(1u, Scan(rules, {"first part", "second part"}, true, /*batch_lines=*/1).size());
}

TEST(StreamMatcher, LabelsComeFromTheHitLine) {
  auto rules =
      Rules(RuleYaml("id: gpu.xid\nseverity: error\nmatch: ['NVRM: Xid']\n"
                 "labels: {xid: 'Xid \\([^)]*\\): (\\d+)'}\n"));
  auto seen = Scan(rules, {"NVRM: Xid (PCI:0000:cb:00): 79, pid=1, GPU has fallen off the bus."});
  ASSERT_EQ(1u, seen.size());
  EXPECT_EQ(std::vector<std::string>{"79"}, seen[0].labels);
}

TEST(StreamMatcher, LineNumbersContinueAcrossBatches) {
  auto rules = Rules(RuleYaml("id: a.b\nseverity: error\nmatch: ['boom']\n"));
  auto seen = Scan(rules, {"a", "b", "c", "boom", "d", "boom"}, true, /*batch_lines=*/2);
  ASSERT_EQ(2u, seen.size());
  EXPECT_EQ(4u, seen[0].line);
  EXPECT_EQ(6u, seen[1].line);
}

TEST(StreamMatcher, AGenericRuleGivesWayToASpecificOneOnTheSameLine) {
  auto rules = Rules(RuleYaml("id: gpu.cuda_error\nseverity: error\ngeneric: true\n"
                          "match: ['CUDA error: ']\n") +
                     "---\n" + RuleYaml("id: gpu.oom\nseverity: error\nmatch: ['out of memory']\n"));
  EXPECT_THAT(
      Scan(rules, {"CUDA error: out of memory", "CUDA error: misaligned address"}),
      ::testing::ElementsAre(
          Seen{"gpu.oom", Severity::kError, 1, "CUDA error: out of memory", {}},
          Seen{"gpu.cuda_error", Severity::kError, 2, "CUDA error: misaligned address", {}}));
}

TEST(StreamMatcher, AGenericRuleSpeaksWhenTheSpecificOneIsDroppedByItsContext) {
  // The specific rule only counts near a deepspeed build; elsewhere the generic one names the line.
  auto rules = Rules(RuleYaml("id: pip.subprocess\nseverity: error\ngeneric: true\n"
                          "match: ['subprocess-exited-with-error']\n") +
                     "---\n" +
                     RuleYaml("id: ds.pip\nseverity: error\nmatch: ['subprocess-exited-with-error']\n"
                          "context:\n  within_lines: 3\n  requires_any: ['deepspeed']\n"));
  EXPECT_THAT(
      Scan(rules, {"error: subprocess-exited-with-error", "a", "b", "c", "d"}),
      ::testing::ElementsAre(
          Seen{"pip.subprocess", Severity::kError, 1, "error: subprocess-exited-with-error", {}}));
  EXPECT_THAT(Scan(rules, {"error: subprocess-exited-with-error", "Building deepspeed"}),
              ::testing::ElementsAre(
                  Seen{"ds.pip", Severity::kError, 1, "error: subprocess-exited-with-error", {}}));
  // Unsettled at the end of input: the same answers.
  EXPECT_THAT(
      Scan(rules, {"error: subprocess-exited-with-error"}),
      ::testing::ElementsAre(
          Seen{"pip.subprocess", Severity::kError, 1, "error: subprocess-exited-with-error", {}}));
}

// What a sink sees of a finding beyond its line: whether the line was cut and the lines above.
struct Detail {
  std::string text;
  bool truncated;
  std::vector<std::string> context;
};

class CollectDetail : public FindingSink {
 public:
  void OnFinding(const Finding& f) override {
    seen.push_back(Detail{
        std::string(f.text), f.text_truncated, {f.context_before.begin(), f.context_before.end()}});
  }
  std::vector<Detail> seen;
};

std::vector<Detail> ScanDetail(const std::shared_ptr<const RuleSet>& rules,
                               const std::vector<std::string>& lines, size_t batch_lines) {
  CollectDetail sink;
  StreamMatcher matcher(rules, &sink);
  MatchScratch scratch(rules->patterns());
  LineBatch batch;
  for (const std::string& line : lines) {
    batch.Append(line);
    if (batch.size() == batch_lines) {
      matcher.Process(batch, scratch);
      batch.Clear();
    }
  }
  matcher.Process(batch, scratch);
  matcher.Finish();
  return sink.seen;
}

TEST(StreamMatcher, FindingsCarryTheLinesBeforeTheHitAcrossBatches) {
  auto rules = Rules(RuleYaml("id: gpu.oom\nseverity: error\nmatch: ['out of memory']\n"));
  const std::vector<std::string> lines = {"a", "b", "c", "d", "CUDA out of memory"};
  for (size_t batch_lines : {1, 2, 3, 100}) {
    const auto seen = ScanDetail(rules, lines, batch_lines);
    ASSERT_EQ(1u, seen.size());
    EXPECT_THAT(seen[0].context, ::testing::ElementsAre("b", "c", "d")) << batch_lines;
  }
  // At the start of a stream there are fewer.
  EXPECT_THAT(ScanDetail(rules, {"x", "out of memory"}, 1).at(0).context,
              ::testing::ElementsAre("x"));
}

TEST(StreamMatcher, APendingHitKeepsABoundedPreviewAndItsLabelsFromTheWholeLine) {
  // The label sits past the preview: it must still come from the whole line.
  auto rules =
      Rules(RuleYaml("id: ds.aio\nseverity: error\nmatch: ['LNK1181']\n"
                 "labels: {lib: 'lib=(\\w+)'}\n"
                 "context:\n  within_lines: 5\n  requires_any: ['pre-compile']\n"
                 "  unconfirmed_severity: warning\n"));
  const std::string huge = "LNK1181 " + std::string(1 << 20, 'x') + " lib=aio";
  const auto seen = Scan(rules, {"ctx", huge});
  ASSERT_EQ(1u, seen.size());
  EXPECT_EQ(StreamMatcher::kPreviewBytes, seen[0].text.size());
  EXPECT_EQ(huge.substr(0, StreamMatcher::kPreviewBytes), seen[0].text);
  EXPECT_THAT(seen[0].labels, ::testing::ElementsAre("aio"));
  const auto detail = ScanDetail(rules, {"ctx", huge}, 1);
  ASSERT_EQ(1u, detail.size());
  EXPECT_TRUE(detail[0].truncated);
  EXPECT_THAT(detail[0].context, ::testing::ElementsAre("ctx"));
}

TEST(StreamMatcher, AHitDecidedAtOnceKeepsItsWholeLine) {
  auto rules = Rules(RuleYaml(kAio));
  const std::string huge = "LNK1181 aio.lib " + std::string(100000, 'y');
  const auto seen = ScanDetail(rules, {"DS_BUILD_OPS=1", huge}, 100);
  ASSERT_EQ(1u, seen.size());
  EXPECT_EQ(huge, seen[0].text);
  EXPECT_FALSE(seen[0].truncated);
}

}  // namespace
}  // namespace faultline

namespace faultline {
namespace {

// A stream that runs with one rule set, is rebound to another between batches, and runs on.
struct Rebound {
  SeenFindings sink;
  MatchScratch* scratch = nullptr;
  std::unique_ptr<MatchScratch> first_scratch;
  std::unique_ptr<MatchScratch> second_scratch;
  std::unique_ptr<StreamMatcher> matcher;

  Rebound(const std::shared_ptr<const RuleSet>& first) {
    first_scratch = std::make_unique<MatchScratch>(first->patterns());
    matcher = std::make_unique<StreamMatcher>(first, &sink);
    scratch = first_scratch.get();
  }
  void Lines(const std::vector<std::string>& lines) {
    LineBatch batch;
    for (const std::string& line : lines) batch.Append(line);
    matcher->Process(batch, *scratch);
  }
  void Rebind(const std::shared_ptr<const RuleSet>& next) {
    second_scratch = std::make_unique<MatchScratch>(next->patterns());
    matcher->Rebind(next);
    scratch = second_scratch.get();
  }
};

TEST(StreamMatcherRebind, APendingHitOfARuleThatStaysIsDecidedAfterTheReload) {
  const auto before =
      Rules(RuleYaml(kAio) + "---\n" + RuleYaml("id: x.gone\nseverity: error\nmatch: ['gone']\n"));
  // The new set orders rules differently and has a new one: indexes change, ids do not.
  const auto after =
      Rules(RuleYaml("id: x.new\nseverity: error\nmatch: ['brand new']\n") + "---\n" + RuleYaml(kAio));
  Rebound stream(before);
  stream.Lines({"LINK : fatal error LNK1181: 'aio.lib'", "x"});
  EXPECT_TRUE(stream.sink.seen.empty());  // pending: waits for requires_any
  stream.Rebind(after);
  stream.Lines({"brand new", "AssertionError: Unable to pre-compile async_io"});
  EXPECT_THAT(
      stream.sink.seen,
      ::testing::ElementsAre(
          Seen{"x.new", Severity::kError, 3, "brand new", {}},
          Seen{"ds.aio", Severity::kError, 1, "LINK : fatal error LNK1181: 'aio.lib'", {}}));
}

TEST(StreamMatcherRebind, PendingHitsOfRemovedRulesAreSettledWithTheOldRulesFirst) {
  const auto before = Rules(RuleYaml(kAio));
  const auto after = Rules(RuleYaml("id: x.other\nseverity: error\nmatch: ['other']\n"));
  Rebound stream(before);
  stream.Lines({"LNK1181 aio.lib"});
  stream.Rebind(after);
  // Not confirmed when its rule went away: reported at unconfirmed_severity, by the old rule.
  EXPECT_THAT(stream.sink.seen,
              ::testing::ElementsAre(Seen{"ds.aio", Severity::kWarning, 1, "LNK1181 aio.lib", {}}));
  stream.Lines({"Unable to pre-compile async_io", "other"});
  EXPECT_EQ(2u, stream.sink.seen.size());
  EXPECT_EQ("x.other", stream.sink.seen.back().rule);
}

TEST(StreamMatcherRebind, ContextSeenBeforeTheReloadStillCounts) {
  // requires_any seen before the hit, under the old set; the hit comes after the reload.
  const auto before = Rules(RuleYaml(kAio));
  const auto after =
      Rules(RuleYaml("id: x.new\nseverity: info\nmatch: ['zzz']\n") + "---\n" + RuleYaml(kAio));
  Rebound stream(before);
  stream.Lines({"Unable to pre-compile async_io"});
  stream.Rebind(after);
  stream.Lines({"LNK1181 aio.lib"});
  EXPECT_THAT(stream.sink.seen,
              ::testing::ElementsAre(Seen{"ds.aio", Severity::kError, 2, "LNK1181 aio.lib", {}}));
}

TEST(StreamMatcherRebind, ASequenceInProgressSurvivesWhenItsStepsAreUnchanged) {
  const std::string seq = RuleYaml(
      "id: gpu.fell\nseverity: critical\nmatch:\n  - sequence: ['GPU step one', 'GPU step two']\n"
      "    within_lines: 10\n");
  Rebound stream(Rules(seq));
  stream.Lines({"GPU step one"});
  stream.Rebind(Rules(RuleYaml("id: a.first\nseverity: info\nmatch: ['nothing']\n") + "---\n" + seq));
  stream.Lines({"GPU step two"});
  EXPECT_THAT(stream.sink.seen,
              ::testing::ElementsAre(Seen{"gpu.fell", Severity::kCritical, 1, "GPU step one", {}}));

  // With other steps the progress is dropped: a half-seen old sequence never completes a new one.
  Rebound changed(Rules(seq));
  changed.Lines({"GPU step one"});
  changed.Rebind(Rules(RuleYaml(
      "id: gpu.fell\nseverity: critical\nmatch:\n  - sequence: ['GPU step zero', 'GPU step two']\n"
      "    within_lines: 10\n")));
  changed.Lines({"GPU step two"});
  EXPECT_TRUE(changed.sink.seen.empty());
}

}  // namespace
}  // namespace faultline
