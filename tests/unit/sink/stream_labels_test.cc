// Labels a stream carries for its lines (StreamOrigin::labels: syslog's host and app) on the
// signatures of its findings, in metrics and in owned events alike.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "agent/sink/finding_events.h"
#include "agent/sink/metrics.h"
#include "agent/sink/signature_labels.h"

namespace faultline {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Pair;

Rule LabelledRule(std::string id, std::vector<LabelSpec> labels = {}, int max_label_values = 3) {
  Rule rule;
  rule.id = std::move(id);
  rule.severity = Severity::kError;
  rule.labels = std::move(labels);
  rule.max_label_values = max_label_values;
  return rule;
}

class StreamLabelsTest : public ::testing::Test {
 protected:
  StreamLabelsTest() : rules_{LabelledRule("gpu.oom"), LabelledRule("build.link", {{"app", "(x)"}})} {
    labels_.Bind(rules_);
  }

  Finding FindingOf(uint32_t rule, const StreamOrigin& origin) {
    Finding finding;
    finding.rule = &rules_[rule];
    finding.rule_index = rule;
    finding.origin = &origin;
    finding.text = "CUDA out of memory";
    finding.label_values = rule_values_;
    return finding;
  }

  std::vector<Rule> rules_;
  SignatureLabels labels_;
  std::vector<std::string> rule_values_;
};

TEST_F(StreamLabelsTest, StreamLabelsFollowTheRulesOwn) {
  const StreamOrigin origin{"syslog", 1, "10.0.0.5:514", {{"host", "node07"}, {"app", "trainer"}}};
  const LabelPairs& labels = labels_.Resolve(FindingOf(0, origin));
  EXPECT_THAT(labels, ElementsAre(Pair("host", "node07"), Pair("app", "trainer")));
  EXPECT_EQ("gpu.oom{host=node07,app=trainer}", SignatureLabels::Key("gpu.oom", labels));
}

TEST_F(StreamLabelsTest, ARuleLabelOfTheSameNameWins) {
  rule_values_ = {"x"};
  const StreamOrigin origin{"syslog", 1, "peer", {{"host", "node07"}, {"app", "trainer"}}};
  EXPECT_THAT(labels_.Resolve(FindingOf(1, origin)),
              ElementsAre(Pair("app", "x"), Pair("host", "node07")));
}

TEST_F(StreamLabelsTest, ValuesAreBoundedPerRuleAndEmptyIsUnknown) {
  std::vector<std::string> hosts;
  for (const std::string host : {"a", "b", "c", "d", "a", ""}) {
    const StreamOrigin origin{"syslog", 1, "peer", {{"host", host}}};
    hosts.push_back(labels_.Resolve(FindingOf(0, origin))[0].second);
  }
  EXPECT_THAT(hosts, ElementsAre("a", "b", "c", "__overflow__", "a", "unknown"));
}

TEST_F(StreamLabelsTest, MetricsAndEventsNameTheSameSignature) {
  Metrics metrics(labels_);
  metrics.BindRules(rules_);
  FindingEventBuilder events(labels_);
  LatestFindings latest;
  events.Add(&latest);
  const StreamOrigin origin{"syslog", 1, "peer", {{"host", "node07"}, {"app", "trainer"}}};
  const Finding finding = FindingOf(0, origin);
  metrics.CountFinding(finding);
  events.OnFinding(finding);
  std::vector<std::string> lines;
  std::istringstream in(metrics.Serialize());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  EXPECT_THAT(lines, Contains("faultline_signature_matches_total{app=\"trainer\",host=\"node07\","
                              "severity=\"error\",signature=\"gpu.oom\"} 1"));
  ASSERT_EQ(1u, latest.events().size());
  EXPECT_EQ("gpu.oom{host=node07,app=trainer}", latest.events().front().signature);
}

}  // namespace
}  // namespace faultline
