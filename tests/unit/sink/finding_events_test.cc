#include "agent/sink/finding_events.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace faultline {
namespace {

using ::testing::ElementsAre;

class Collect : public FindingEventSink {
 public:
  void OnEvent(const FindingEvent& e) override { events.push_back(e); }
  std::vector<FindingEvent> events;
};

Rule MakeRule(std::string id, std::vector<LabelSpec> labels = {}) {
  Rule rule;
  rule.id = std::move(id);
  rule.labels = std::move(labels);
  return rule;
}

TEST(FindingEventBuilder, OwnsABoundedSanitisedCopyWithTheSignatureOfItsLabels) {
  const std::vector<Rule> rules = {MakeRule("build.link", {{"lib", "(x)"}})};
  SignatureLabels labels;
  labels.Bind(rules);
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
  FindingEventBuilder builder(labels, [now] { return now; });
  Collect sink;
  builder.Add(&sink);

  const StreamOrigin origin{"builds", 7, "/var/log/build.log"};
  const std::string huge = "bad \xff byte " + std::string(10000, 'z');
  const std::vector<std::string> values = {"aio"};
  const std::vector<std::string_view> context = {"a", "b", "c", "d"};
  Finding f;
  f.rule = &rules[0];
  f.rule_index = 0;
  f.origin = &origin;
  f.severity = Severity::kWarning;
  f.line_number = 42;
  f.text = huge;
  f.label_values = values;
  f.context_before = context;
  builder.OnFinding(f);

  ASSERT_EQ(1u, sink.events.size());
  const FindingEvent& e = sink.events[0];
  EXPECT_EQ("build.link{lib=aio}", e.signature);
  EXPECT_EQ("build.link", e.rule_id);
  EXPECT_EQ(Severity::kWarning, e.severity);
  EXPECT_EQ("builds", e.source_id);
  EXPECT_EQ(7u, e.stream_id);
  EXPECT_EQ("/var/log/build.log", e.stream_name);
  EXPECT_EQ(42u, e.line_number);
  EXPECT_EQ(now, e.observed_at);
  EXPECT_TRUE(e.text_truncated);
  EXPECT_LE(e.text.size(), FindingEvent::kMaxTextBytes);
  EXPECT_EQ("bad \xEF\xBF\xBD byte zz", e.text.substr(0, 15));
  EXPECT_THAT(e.context_before, ElementsAre("b", "c", "d"));  // the newest kMaxContextLines
}

TEST(LatestFindings, KeepsTheNewestPerSignatureAndForgetsTheOldestBeyondItsBound) {
  LatestFindings latest(/*max_signatures=*/2);
  auto event = [](std::string signature, uint64_t line) {
    FindingEvent e;
    e.signature = std::move(signature);
    e.line_number = line;
    return e;
  };
  latest.OnEvent(event("a", 1));
  latest.OnEvent(event("b", 2));
  latest.OnEvent(event("a", 3));  // a again: newest first, still two
  std::vector<std::pair<std::string, uint64_t>> seen;
  for (const FindingEvent& e : latest.events()) seen.emplace_back(e.signature, e.line_number);
  EXPECT_THAT(seen, ElementsAre(std::pair<std::string, uint64_t>{"a", 3},
                                std::pair<std::string, uint64_t>{"b", 2}));
  latest.OnEvent(event("c", 4));  // b was seen longest ago
  seen.clear();
  for (const FindingEvent& e : latest.events()) seen.emplace_back(e.signature, e.line_number);
  EXPECT_THAT(seen, ElementsAre(std::pair<std::string, uint64_t>{"c", 4},
                                std::pair<std::string, uint64_t>{"a", 3}));
  EXPECT_EQ(1u, latest.forgotten());
}

}  // namespace
}  // namespace faultline
