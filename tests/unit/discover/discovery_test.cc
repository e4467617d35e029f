#include "agent/discover/discovery.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/match/stream_pipeline.h"
#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;

class Findings : public FindingSink {
 public:
  void OnFinding(const Finding& f) override { lines.push_back(f.line_number); }
  std::vector<uint64_t> lines;
};

// One rule without context (`known failure`), one whose hit waits up to 5 lines for context
// (`LNK1181`, confirmed by `pre-compile`, dropped otherwise).
std::shared_ptr<const RuleSet> Rules(const std::vector<std::string>& watches = WatchPatterns()) {
  auto rules = ParseRules(R"(id: t.known
title: t
severity: error
category: runtime
match: ['known failure']
root_cause: r
fix: f
---
id: t.aio
title: t
severity: error
category: build
match: ['LNK1181']
context:
  within_lines: 5
  requires_any: ['pre-compile']
root_cause: r
fix: f
)",
                          "t.yaml");
  EXPECT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  return RuleSet::Compile(std::move(rules).value(), "", watches).value();
}

struct Scan {
  explicit Scan(DiscoveryOptions options = {}) : discovery(options) {}
  // Scans `text` as one stream named "train.log", in pieces of `chunk` bytes.
  void Run(std::string_view text, size_t chunk = 1 << 20) {
    const auto rules = Rules();
    MatchScratch scratch(rules->patterns());
    StreamDiscovery stream(discovery, "src", "train.log", rules->max_explain_window());
    StreamPipeline pipeline(rules, &findings, &scratch, FramingOptions{}, nullptr, nullptr,
                            &stream);
    for (size_t at = 0; at < text.size(); at += chunk) {
      pipeline.Feed(text.substr(at, chunk));
      pipeline.Drain();
    }
    pipeline.Finish();
    unrecognised = stream.unrecognised_lines();
  }
  std::vector<std::string> Templates() const {
    std::vector<std::string> out;
    for (const TemplateStats* t : discovery.Sorted()) {
      out.push_back(t->text + " x" + std::to_string(t->count) + " @" +
                    std::to_string(t->first.line_number));
    }
    return out;
  }
  Discovery discovery;
  Findings findings;
  uint64_t unrecognised = 0;
};

TEST(StreamDiscovery, CueLinesNoRuleNamesBecomeTemplates) {
  Scan scan;
  scan.Run(
      "step 1\n"
      "ERROR: disk quota exceeded on /scratch/u1/run3\n"
      "step 2\n"
      "ERROR: disk quota exceeded on /scratch/u2/run9\n"
      "Segmentation fault (core dumped)\n");
  EXPECT_THAT(scan.Templates(), ElementsAre("ERROR: disk quota exceeded on <*> x2 @2",
                                            "Segmentation fault (core dumped) x1 @5"));
  EXPECT_EQ(3u, scan.unrecognised);
  const TemplateStats* t = scan.discovery.Sorted()[0];
  EXPECT_EQ("train.log", t->first.stream);
  EXPECT_EQ("src", t->first.source_id);
  EXPECT_EQ("ERROR: disk quota exceeded on /scratch/u1/run3", t->first.text);
  EXPECT_EQ(ErrorCue::kErrorLevel, t->cue);
  EXPECT_EQ(TemplateId(t->text), t->id);
  EXPECT_EQ(2u, t->examples.size());
  const TemplateStats* segv = scan.discovery.Sorted()[1];
  EXPECT_EQ(ErrorCue::kSignal, segv->cue);
}

TEST(StreamDiscovery, ALineARuleRaisesIsNotListed) {
  Scan scan;
  scan.Run("ERROR: known failure in step 3\nERROR: something new\n");
  EXPECT_THAT(scan.findings.lines, ElementsAre(1u));
  EXPECT_THAT(scan.Templates(), ElementsAre("ERROR: something new x1 @2"));
}

TEST(StreamDiscovery, LinesWithinTheContextWindowOfAFindingAreExplained) {
  Scan scan;
  // The LNK1181 hit on line 3 is confirmed by line 4 and explains lines 1..8 (window 5);
  // line 9 is outside it.
  scan.Run(
      "error: command 'cl.exe' failed with exit code 2\n"  // 1, explained
      "ok\n"
      "fatal error LNK1181: cannot open input file 'aio.lib'\n"  // 3, the hit
      "Unable to pre-compile async_io\n"
      "ERROR: Failed building wheel for deepspeed\n"  // 5, explained
      "a\nb\nc\n"
      "ERROR: Could not build wheels for deepspeed\n");  // 9, not explained
  EXPECT_THAT(scan.findings.lines, ElementsAre(3u));
  EXPECT_THAT(scan.Templates(), ElementsAre("ERROR: Could not build wheels for deepspeed x1 @9"));
}

TEST(StreamDiscovery, AHitThatWaitsForContextExplainsOnlyWhenItIsReported) {
  // Line 2's LNK1181 hit finds no pre-compile within 5 lines and is dropped, so the line itself
  // (a diagnostic) and line 1 stay unrecognised. Fed one line at a time: the decision comes
  // batches later.
  Scan scan;
  const std::string log =
      "ERROR: build failed\n"
      "fatal error LNK1181: cannot open input file 'aio.lib'\n"
      "1\n2\n3\n4\n5\n6\n7\n";
  scan.Run(log, 4);
  EXPECT_TRUE(scan.findings.lines.empty());
  EXPECT_THAT(scan.Templates(),
              ElementsAre("ERROR: build failed x1 @1",
                          "fatal error LNK1181: cannot open input file <*> x1 @2"));
}

TEST(StreamDiscovery, PythonExceptionLineEndsATracebackWithItsPrefix) {
  Scan scan;
  scan.Run(
      "[rank3]: Traceback (most recent call last):\n"
      "[rank3]:   File \"train.py\", line 10, in <module>\n"
      "[rank0]: step 7 loss 2.1\n"
      "[rank3]:     main()\n"
      "[rank3]: flash_attn.FlashAttnBackwardFailed: head dim 320 unsupported\n"
      "Traceback (most recent call last):\n"
      "wandb: train/loss 2.5\n");
  EXPECT_THAT(scan.Templates(),
              ElementsAre("[rank3]: flash_attn.FlashAttnBackwardFailed: head dim <*> unsupported "
                          "x1 @5"));
  EXPECT_EQ(ErrorCue::kPythonException, scan.discovery.Sorted()[0]->cue);
}

// vLLM logs a traceback with its logger header, which says ERROR, on every line: the frames and
// the traceback's first line are not candidates of their own; the exception line stands for them.
TEST(StreamDiscovery, ATracebackLoggedBehindAnErrorHeaderIsItsExceptionLine) {
  Scan scan;
  const std::string header = "(EngineCore pid=7) ERROR 07-25 16:19:29 [core.py:1007] ";
  scan.Run(header + "EngineCore failed to start.\n" + header +
           "Traceback (most recent call last):\n" + header +
           "  File \"/vllm/v1/engine/core.py\", line 99, in run_engine_core\n" + header +
           "    raise RuntimeError(\"ERROR while warming up\")\n" + header +
           "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n" + header +
           "RuntimeError: shape mismatch: value tensor of shape [5]\n"
           "(APIServer pid=3) INFO 07-25 16:19:30 [api_server.py:1] shutting down\n");
  EXPECT_THAT(scan.Templates(),
              ElementsAre("(EngineCore pid= <*>) ERROR <*>-<*> <*> [<*>] EngineCore failed "
                          "to start. x1 @1",
                          "(EngineCore pid= <*>) ERROR <*>-<*> <*> [<*>] RuntimeError: "
                          "shape mismatch: value tensor of shape [<*>] x1 @6"));
}

TEST(StreamDiscovery, ChainedTracebacksGiveEachException) {
  Scan scan;
  scan.Run(
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 1, in f\n"
      "KeyError: 'x'\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 3, in g\n"
      "ConfigMissing: no key x\n");
  EXPECT_THAT(scan.Templates(), ElementsAre("KeyError: <*> x1 @3", "ConfigMissing: no key x x1 @9"));
}

TEST(StreamDiscovery, IpythonNamesTheExceptionOnTheTracebacksFirstLine) {
  Scan scan;
  scan.Run(
      "---------------------------------------------------------------------------\n"
      "CalledProcessError                        Traceback (most recent call last)\n"
      "File ~/venv/lib/python3.10/site-packages/torch/utils/cpp_extension.py:1673, in _run\n"
      "-> 1674     except subprocess.CalledProcessError as e:\n");
  EXPECT_THAT(scan.Templates(),
              ElementsAre("CalledProcessError Traceback (most recent call last) x1 @2"));
  EXPECT_EQ(ErrorCue::kPythonException, scan.discovery.Sorted()[0]->cue);
}

TEST(StreamDiscovery, WithoutWatchPatternsNothingIsSeen) {
  const auto rules = Rules({});
  MatchScratch scratch(rules->patterns());
  Discovery discovery;
  StreamDiscovery stream(discovery, "", "x", 0);
  Findings findings;
  StreamPipeline pipeline(rules, &findings, &scratch, FramingOptions{}, nullptr, nullptr, &stream);
  pipeline.Feed("ERROR: x\n");
  pipeline.Finish();
  EXPECT_EQ(0u, discovery.lines());
}

TEST(StreamDiscovery, HeldLinesAreBoundedAndReleasedWhenQuiet) {
  const auto rules = Rules();
  MatchScratch scratch(rules->patterns());
  Discovery discovery;
  // A wide window holds every cue line until the stream is quiet.
  StreamDiscovery stream(discovery, "", "x", 100000);
  Findings findings;
  StreamPipeline pipeline(rules, &findings, &scratch, FramingOptions{}, nullptr, nullptr, &stream);
  std::string log;
  for (size_t i = 0; i < StreamDiscovery::kMaxHeld + 10; ++i) log += "ERROR: bad " + std::to_string(i) + "\n";
  pipeline.Feed(log);
  pipeline.Drain();
  EXPECT_EQ(StreamDiscovery::kMaxHeld, stream.held());
  EXPECT_EQ(10u, stream.unrecognised_lines());  // the oldest were decided early
  pipeline.SettlePending();
  EXPECT_EQ(0u, stream.held());
  EXPECT_EQ(StreamDiscovery::kMaxHeld + 10, discovery.lines());
}

TEST(Discovery, AlertHookFiresOnceWhenATemplateReachesAlertAfter) {
  Discovery discovery(DiscoveryOptions{.max_templates = 10, .alert_after = 3});
  std::vector<FindingEvent> events;
  discovery.SetAlertHook([&](const FindingEvent& e) { events.push_back(e); });
  for (int i = 1; i <= 5; ++i) {
    const std::string line = "ERROR: shard " + std::to_string(i) + " unreadable";
    discovery.Record({ErrorCue::kErrorLevel, "train", "/logs/a.log", static_cast<uint64_t>(i), line});
  }
  ASSERT_EQ(1u, events.size());
  const TemplateStats* t = discovery.Sorted()[0];
  EXPECT_EQ("unrecognised." + t->id, events[0].signature);
  EXPECT_EQ(events[0].signature, events[0].rule_id);
  EXPECT_EQ(Severity::kError, events[0].severity);
  EXPECT_EQ(3u, events[0].line_number);
  EXPECT_EQ("train", events[0].source_id);
  EXPECT_EQ("ERROR: shard 3 unreadable", events[0].text);
}

TEST(Discovery, EvictionIsCountedAndExamplesAreShortAndDistinct) {
  Discovery discovery(DiscoveryOptions{.max_templates = 2});
  const std::string long_line = "ERROR: " + std::string(5000, 'x');
  discovery.Record({ErrorCue::kErrorLevel, "", "a", 1, long_line});
  discovery.Record({ErrorCue::kErrorLevel, "", "a", 2, long_line});
  const std::string long_id = discovery.Sorted()[0]->id;
  EXPECT_EQ(1u, discovery.Sorted()[0]->examples.size());  // the same line twice: one example
  discovery.Record({ErrorCue::kDiagnostic, "", "a", 3, "error: b went wrong"});
  discovery.Record({ErrorCue::kSignal, "", "a", 4, "Segmentation fault"});
  EXPECT_EQ(2u, discovery.size());
  EXPECT_EQ(1u, discovery.evictions());
  EXPECT_EQ(nullptr, discovery.Find(long_id));
  const TemplateStats* b = discovery.Find(TemplateId("error: b went wrong"));
  ASSERT_NE(nullptr, b);
  EXPECT_EQ(1u, b->count);
  // Seen again after eviction, the long line starts over under the same id.
  discovery.Record({ErrorCue::kErrorLevel, "", "a", 5, long_line});
  EXPECT_EQ(2u, discovery.evictions());
  const TemplateStats* again = discovery.Find(long_id);
  ASSERT_NE(nullptr, again);
  EXPECT_EQ(1u, again->count);
  EXPECT_EQ(5u, again->first.line_number);
  ASSERT_EQ(1u, again->examples.size());
  EXPECT_EQ(Discovery::kExampleBytes, again->examples[0].size());
  EXPECT_EQ(Discovery::kExampleBytes, again->first.text.size());
}

}  // namespace
}  // namespace faultline
