#include "agent/sink/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "agent/core/version.h"

namespace faultline {
namespace {

using ::testing::Contains;
using ::testing::IsSupersetOf;
using ::testing::Not;

Rule MakeRule(std::string id, Severity severity, std::vector<LabelSpec> labels = {},
              int max_label_values = Rule::kDefaultMaxLabelValues) {
  Rule rule;
  rule.id = std::move(id);
  rule.severity = severity;
  rule.labels = std::move(labels);
  rule.max_label_values = max_label_values;
  return rule;
}

// The exposition as whole lines, so a test asserts exact series and values.
std::vector<std::string> Lines(const Metrics& metrics) {
  std::vector<std::string> lines;
  std::istringstream in(metrics.Serialize());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Every series of one family (comments left out).
std::vector<std::string> Series(const Metrics& metrics, const std::string& family) {
  std::vector<std::string> out;
  for (const std::string& line : Lines(metrics)) {
    if (line.rfind(family + "{", 0) == 0 || line.rfind(family + " ", 0) == 0) out.push_back(line);
  }
  return out;
}

class MetricsTest : public ::testing::Test {
 protected:
  // Index 0: plain error rule; 1: critical rule; 2: error rule with a `lib` label, cap 2.
  MetricsTest()
      : rules_{MakeRule("a.b", Severity::kError), MakeRule("gpu.xid", Severity::kCritical),
               MakeRule("build.link", Severity::kError, {{"lib", R"((\w+)\.lib)"}}, 2)},
        metrics_(rules_) {}

  void Count(uint32_t rule_index, Severity severity, std::vector<std::string> label_values = {}) {
    Finding finding;
    finding.rule = &rules_[rule_index];
    finding.rule_index = rule_index;
    finding.severity = severity;
    finding.text = "the line";
    finding.label_values = label_values;
    metrics_.CountFinding(finding);
  }

  std::vector<Rule> rules_;
  Metrics metrics_;
};

TEST_F(MetricsTest, EveryRuleStartsAtZeroUnderItsDeclaredSeverity) {
  EXPECT_THAT(Series(metrics_, "faultline_signature_matches_total"),
              testing::UnorderedElementsAre(
                  R"(faultline_signature_matches_total{severity="error",signature="a.b"} 0)",
                  R"(faultline_signature_matches_total{severity="critical",signature="gpu.xid"} 0)",
                  R"(faultline_signature_matches_total{severity="error",signature="build.link"} 0)"));
  EXPECT_THAT(Lines(metrics_),
              IsSupersetOf({"# TYPE faultline_signature_matches_total counter",
                            "# TYPE faultline_rules_loaded gauge", "faultline_rules_loaded 3"}));
}

TEST_F(MetricsTest, FindingCountsUnderItsRuleAndSeverity) {
  Count(0, Severity::kError);
  Count(0, Severity::kError);
  Count(1, Severity::kCritical);
  EXPECT_THAT(Lines(metrics_),
              IsSupersetOf(
                  {R"(faultline_signature_matches_total{severity="error",signature="a.b"} 2)",
                   R"(faultline_signature_matches_total{severity="critical",signature="gpu.xid"} 1)"}));
}

TEST_F(MetricsTest, DowngradedFindingCountsUnderItsEffectiveSeverity) {
  Count(0, Severity::kWarning);
  EXPECT_THAT(Lines(metrics_),
              IsSupersetOf(
                  {R"(faultline_signature_matches_total{severity="warning",signature="a.b"} 1)",
                   R"(faultline_signature_matches_total{severity="error",signature="a.b"} 0)"}));
}

TEST_F(MetricsTest, RuleLabelsBecomeExtraLabels) {
  Count(2, Severity::kError, {"aio"});
  EXPECT_THAT(
      Lines(metrics_),
      Contains(
          R"(faultline_signature_matches_total{lib="aio",severity="error",signature="build.link"} 1)"));
}

TEST_F(MetricsTest, ValuesBeyondTheCapCountAsOverflow) {
  for (const char* lib : {"aio", "cufile", "nccl", "aio", "mpi"}) Count(2, Severity::kError, {lib});
  EXPECT_THAT(
      Series(metrics_, "faultline_signature_matches_total"),
      IsSupersetOf(
          {R"(faultline_signature_matches_total{lib="aio",severity="error",signature="build.link"} 2)",
           R"(faultline_signature_matches_total{lib="cufile",severity="error",signature="build.link"} 1)",
           R"(faultline_signature_matches_total{lib="__overflow__",severity="error",signature="build.link"} 2)"}));
  EXPECT_THAT(Lines(metrics_), Not(Contains(testing::HasSubstr(R"(lib="nccl")"))));
}

TEST_F(MetricsTest, EmptyCaptureIsUnknownAndDoesNotUseTheCap) {
  Count(2, Severity::kError, {""});
  Count(2, Severity::kError, {});  // fewer values than labels: treated as empty
  Count(2, Severity::kError, {"aio"});
  Count(2, Severity::kError, {"mpi"});
  EXPECT_THAT(
      Lines(metrics_),
      IsSupersetOf(
          {R"(faultline_signature_matches_total{lib="unknown",severity="error",signature="build.link"} 2)",
           R"(faultline_signature_matches_total{lib="aio",severity="error",signature="build.link"} 1)",
           R"(faultline_signature_matches_total{lib="mpi",severity="error",signature="build.link"} 1)"}));
}

TEST_F(MetricsTest, InvalidUtf8InALabelIsReplaced) {
  Count(2, Severity::kError, {"ai\xFFo"});
  EXPECT_THAT(
      Lines(metrics_),
      Contains(
          "faultline_signature_matches_total{lib=\"ai\xEF\xBF\xBDo\",severity=\"error\","
          "signature=\"build.link\"} 1"));
}

TEST_F(MetricsTest, LongLabelValueIsCutAtACharacterBoundary) {
  // 127 ASCII bytes and a 2-byte character straddling the 128-byte limit.
  const std::string value = std::string(127, 'x') + "\xC3\xA9" + "tail";
  Count(2, Severity::kError, {value});
  EXPECT_THAT(Lines(metrics_),
              Contains("faultline_signature_matches_total{lib=\"" + std::string(127, 'x') +
                       "\",severity=\"error\",signature=\"build.link\"} 1"));
}

TEST_F(MetricsTest, FindingOfAnUnknownRuleIndexIsIgnored) {
  const std::string before = metrics_.Serialize();
  Finding finding;
  finding.rule_index = 99;
  metrics_.CountFinding(finding);
  EXPECT_EQ(before, metrics_.Serialize());
}

TEST_F(MetricsTest, MatchErrorsStartAtZeroAndFollowTheRunningTotals) {
  EXPECT_THAT(
      Series(metrics_, "faultline_match_errors_total"),
      testing::UnorderedElementsAre(R"(faultline_match_errors_total{engine="vectorscan"} 0)",
                                    R"(faultline_match_errors_total{engine="re2_set"} 0)"));
  metrics_.CountMatchErrors(MatchErrors{.vectorscan = 2, .re2_set = 5});
  metrics_.CountMatchErrors(MatchErrors{.vectorscan = 3, .re2_set = 5});
  // A total below what is shown (another scratch's, a restart of one) never lowers a counter.
  metrics_.CountMatchErrors(MatchErrors{.vectorscan = 1, .re2_set = 0});
  EXPECT_THAT(
      Series(metrics_, "faultline_match_errors_total"),
      testing::UnorderedElementsAre(R"(faultline_match_errors_total{engine="vectorscan"} 3)",
                                    R"(faultline_match_errors_total{engine="re2_set"} 5)"));
}

TEST_F(MetricsTest, SourceCountersAreCreatedOnceAndCount) {
  Metrics::SourceCounters first = metrics_.ForSource("train");
  Metrics::SourceCounters again = metrics_.ForSource("train");
  EXPECT_EQ(first.lines, again.lines);
  EXPECT_EQ(first.bytes, again.bytes);
  first.lines->Increment(3);
  first.bytes->Increment(120);
  metrics_.ForSource("build");
  EXPECT_THAT(Lines(metrics_),
              IsSupersetOf({R"(faultline_lines_total{source="train"} 3)",
                            R"(faultline_bytes_total{source="train"} 120)",
                            R"(faultline_lines_total{source="build"} 0)",
                            R"(faultline_bytes_total{source="build"} 0)"}));
}

TEST_F(MetricsTest, TruncatedLinesAreCounted) {
  EXPECT_THAT(Lines(metrics_), Contains("faultline_lines_truncated_total 0"));
  metrics_.AddTruncatedLines(2);
  metrics_.AddTruncatedLines(1);
  EXPECT_THAT(Lines(metrics_), Contains("faultline_lines_truncated_total 3"));
}

TEST_F(MetricsTest, BuildInfoCarriesTheVersion) {
  EXPECT_THAT(Lines(metrics_),
              Contains(std::string("faultline_build_info{version=\"") + kVersion + "\"} 1"));
}

TEST(MetricsReservedLabelTest, RuleLabelNamedLikeABuiltInLabelIsDropped) {
  // The rule loader rejects this; Metrics must still never throw while counting.
  std::vector<Rule> rules = {
      MakeRule("x.y", Severity::kError, {{"severity", "(a)"}, {"lib", "(b)"}})};
  Metrics metrics(rules);
  const std::vector<std::string> values = {"low", "b"};
  Finding finding;
  finding.rule = &rules[0];
  finding.rule_index = 0;
  finding.severity = Severity::kError;
  finding.label_values = values;
  metrics.CountFinding(finding);
  EXPECT_THAT(Lines(metrics),
              Contains(R"(faultline_signature_matches_total{lib="b",severity="error",)"
                       R"(signature="x.y"} 1)"));
}

}  // namespace
}  // namespace faultline

namespace faultline {
namespace {

TEST(MetricsRebind, CountersFollowRuleIdsAcrossARebind) {
  std::vector<Rule> first = {MakeRule("keep.me", Severity::kError),
                             MakeRule("gone.rule", Severity::kError),
                             MakeRule("build.link", Severity::kError, {{"lib", R"((\w+)\.lib)"}})};
  Metrics metrics(first);
  auto count = [&](const std::vector<Rule>& rules, uint32_t index,
                   std::vector<std::string> label_values = {}) {
    Finding finding;
    finding.rule = &rules[index];
    finding.rule_index = index;
    finding.severity = rules[index].severity;
    finding.label_values = label_values;
    metrics.CountFinding(finding);
  };
  count(first, 0);
  count(first, 0);
  count(first, 1);
  count(first, 2, {"aio"});

  // Reordered, one rule removed, one added: the kept rules sit at other indexes now.
  std::vector<Rule> second = {MakeRule("new.rule", Severity::kWarning),
                              MakeRule("build.link", Severity::kError, {{"lib", R"((\w+)\.lib)"}}),
                              MakeRule("keep.me", Severity::kError)};
  metrics.BindRules(second);
  count(second, 2);
  count(second, 1, {"aio"});
  EXPECT_THAT(
      Series(metrics, "faultline_signature_matches_total"),
      testing::UnorderedElementsAre(
          R"(faultline_signature_matches_total{severity="error",signature="keep.me"} 3)",
          R"(faultline_signature_matches_total{severity="warning",signature="new.rule"} 0)",
          R"(faultline_signature_matches_total{severity="error",signature="build.link"} 0)",
          R"(faultline_signature_matches_total{lib="aio",severity="error",signature="build.link"} 2)"));
  EXPECT_THAT(Lines(metrics), Contains("faultline_rules_loaded 3"));
}

TEST_F(MetricsTest, SavedCountersContinueAndUnknownRulesAndSourcesAreDropped) {
  Metrics restored(rules_);
  restored.RestoreCounters(
      {{"faultline_signature_matches_total", {{"signature", "a.b"}, {"severity", "error"}}, 41},
       {"faultline_signature_matches_total", {{"signature", "gone"}, {"severity", "error"}}, 5},
       {"faultline_signature_matches_total",
        {{"signature", "lib.missing"}, {"severity", "error"}, {"lib", "aio"}},
        3},
       {"faultline_lines_total", {{"source", "train"}}, 1000},
       {"faultline_lines_total", {{"source", "removed"}}, 7},
       {"faultline_lines_truncated_total", {}, 2}},
      [](const std::string& source) { return source == "train"; });
  Finding hit;
  hit.rule_index = 0;
  hit.severity = Severity::kError;
  restored.CountFinding(hit);
  EXPECT_THAT(Lines(restored),
              IsSupersetOf({"faultline_signature_matches_total{severity=\"error\",signature=\"a.b\"} 42",
                            "faultline_lines_total{source=\"train\"} 1000",
                            "faultline_lines_truncated_total 2"}));
  const std::string text = restored.Serialize();
  EXPECT_EQ(std::string::npos, text.find("gone"));
  EXPECT_EQ(std::string::npos, text.find("removed"));
  // What a checkpoint saves now: the continued values, not what this run added alone.
  bool saved_matches = false;
  for (const CounterValue& value : restored.PersistedCounters()) {
    if (value.family == "faultline_signature_matches_total" && value.labels.at("signature") == "a.b") {
      EXPECT_EQ(42, value.value);
      saved_matches = true;
    }
  }
  EXPECT_TRUE(saved_matches);
}

TEST_F(MetricsTest, PerFileSeriesAreCappedAndGoWithTheirLastStream) {
  Metrics metrics(rules_);
  std::vector<Metrics::FileSeries*> held;
  for (size_t i = 0; i < Metrics::kMaxFileSeries + 10; ++i) {
    held.push_back(metrics.AcquireFile("logs", "/var/log/f" + std::to_string(i) + ".log"));
  }
  metrics.CountFileLines(held.front(), 3);
  metrics.CountFileLines(held.back(), 5);
  metrics.CountFileLines(held[held.size() - 2], 5);
  metrics.UpdateFiles({{"logs", "/var/log/f0.log", 100, 60, 1, 0},
                       {"logs", "/var/log/f" + std::to_string(Metrics::kMaxFileSeries) + ".log", 50,
                        40, 0, 0}});
  const std::vector<std::string> lag = Series(metrics, "faultline_file_lag_bytes");
  EXPECT_EQ(Metrics::kMaxFileSeries + 1, lag.size());  // the cap, and one overflow series
  EXPECT_THAT(lag, Contains("faultline_file_lag_bytes{path=\"/var/log/f0.log\",source=\"logs\"} 40"));
  EXPECT_THAT(lag, Contains("faultline_file_lag_bytes{path=\"__overflow__\",source=\"logs\"} 10"));
  EXPECT_THAT(Series(metrics, "faultline_file_lines_total"),
              IsSupersetOf({"faultline_file_lines_total{path=\"/var/log/f0.log\",source=\"logs\"} 3",
                            "faultline_file_lines_total{path=\"__overflow__\",source=\"logs\"} 10"}));
  EXPECT_THAT(Series(metrics, "faultline_file_rotations_total"),
              Contains("faultline_file_rotations_total{path=\"/var/log/f0.log\",source=\"logs\"} 1"));
  metrics.ReleaseFile(held.front());
  EXPECT_THAT(Series(metrics, "faultline_file_lag_bytes"),
              Not(Contains(::testing::HasSubstr("/var/log/f0.log"))));
  // The freed place goes to the next path that asks.
  metrics.AcquireFile("logs", "/var/log/new.log");
  EXPECT_THAT(Series(metrics, "faultline_file_lag_bytes"),
              Contains(::testing::HasSubstr("/var/log/new.log")));
}

}  // namespace
}  // namespace faultline
