#include "agent/sink/signature_tally.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace faultline {
namespace {

FindingEvent Event(std::string rule, std::string signature, Severity severity, int second) {
  FindingEvent e;
  e.rule_id = std::move(rule);
  e.signature = std::move(signature);
  e.severity = severity;
  e.observed_at = std::chrono::system_clock::time_point(std::chrono::seconds(second));
  return e;
}

TEST(SignatureTally, CountsEachSignatureWithFirstAndLastSeenAndWorstSeverity) {
  SignatureTally tally;
  tally.OnEvent(Event("a", "a", Severity::kWarning, 10));
  tally.OnEvent(Event("b", "b{x=1}", Severity::kError, 11));
  tally.OnEvent(Event("a", "a", Severity::kCritical, 12));
  tally.OnEvent(Event("a", "a", Severity::kInfo, 13));
  ASSERT_EQ(2u, tally.counts().size());
  const SignatureCount& a = tally.counts().front();  // most recent first
  EXPECT_EQ("a", a.signature);
  EXPECT_EQ(3u, a.count);
  EXPECT_EQ(Severity::kCritical, a.worst_severity);
  EXPECT_EQ(std::chrono::seconds(10), a.first_seen.time_since_epoch());
  EXPECT_EQ(std::chrono::seconds(13), a.last_seen.time_since_epoch());
  EXPECT_EQ("b{x=1}", tally.counts().back().signature);
  EXPECT_EQ(1u, tally.counts().back().count);
}

TEST(SignatureTally, TheSendersTimeDatesASignatureWhenItGaveOne) {
  SignatureTally tally;
  const auto at = [](int second) {
    return std::chrono::system_clock::time_point(std::chrono::seconds(second));
  };
  FindingEvent late = Event("a", "a", Severity::kError, 100);
  late.line_time = at(50);
  tally.OnEvent(late);
  FindingEvent earlier = Event("a", "a", Severity::kError, 101);
  earlier.line_time = at(40);  // written before the first one, arrived after it
  tally.OnEvent(earlier);
  tally.OnEvent(Event("a", "a", Severity::kError, 102));  // no time of its own: its arrival
  const SignatureCount& a = tally.counts().front();
  EXPECT_EQ(at(40), a.first_seen);
  EXPECT_EQ(at(102), a.last_seen);
  FindingEvent old = Event("a", "a", Severity::kError, 103);
  old.line_time = at(45);
  tally.OnEvent(old);
  EXPECT_EQ(at(40), a.first_seen);
  EXPECT_EQ(at(102), a.last_seen);  // an old line does not move last seen back
}

TEST(SignatureTally, ForgetsTheSignatureSeenLongestAgoBeyondItsBound) {
  SignatureTally tally(2);
  tally.OnEvent(Event("a", "a", Severity::kError, 1));
  tally.OnEvent(Event("b", "b", Severity::kError, 2));
  tally.OnEvent(Event("a", "a", Severity::kError, 3));
  tally.OnEvent(Event("c", "c", Severity::kError, 4));  // b was seen longest ago
  ASSERT_EQ(2u, tally.counts().size());
  EXPECT_EQ("c", tally.counts().front().signature);
  EXPECT_EQ("a", tally.counts().back().signature);
  EXPECT_EQ(2u, tally.counts().back().count);
  EXPECT_EQ(1u, tally.forgotten());
}

TEST(SignatureTally, RetainDropsTheSignaturesOfRemovedRules) {
  SignatureTally tally;
  tally.OnEvent(Event("a", "a{x=1}", Severity::kError, 1));
  tally.OnEvent(Event("a", "a{x=2}", Severity::kError, 2));
  tally.OnEvent(Event("b", "b", Severity::kError, 3));
  tally.Retain({"b", "c"});
  ASSERT_EQ(1u, tally.counts().size());
  EXPECT_EQ("b", tally.counts().front().signature);
  tally.OnEvent(Event("a", "a{x=1}", Severity::kError, 4));  // a rule that came back starts at 1
  EXPECT_EQ(1u, tally.counts().front().count);
}

}  // namespace
}  // namespace faultline
