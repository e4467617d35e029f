#include "agent/alert/signature_tracker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace faultline {
namespace {

constexpr int64_t kHour = 3600 * 1000;
constexpr int64_t kT0 = 1790000000000;  // Unix ms

class SignatureTrackerTest : public ::testing::Test {
 protected:
  // One occurrence of `signature` at `at`, in `version`, with an optional line timestamp.
  std::vector<AlertKind> See(const std::string& signature, int64_t at, std::string version = "",
                             std::optional<int64_t> line_time = std::nullopt,
                             Severity severity = Severity::kError) {
    FindingEvent event;
    event.rule_id = signature.substr(0, signature.find('{'));
    event.signature = signature;
    event.severity = severity;
    event.source_id = "ci";
    event.stream_name = "/logs/run-" + std::to_string(at) + ".log";
    event.line_number = 7;
    event.text = "the hit";
    Occurrence occ{&event, "deepspeed", std::move(version), line_time, at};
    std::vector<LifecycleEvent> events;
    last_judgement = tracker.Observe(occ, &events);
    last_events = events;
    std::vector<AlertKind> kinds;
    for (const LifecycleEvent& e : events) kinds.push_back(e.kind);
    return kinds;
  }

  void Fix(const std::string& selector, std::string fixed_in, int64_t at, std::string note = "") {
    FixRecord fix;
    fix.selector = selector;
    fix.fixed_in = std::move(fixed_in);
    fix.note = std::move(note);
    fix.by = "alice";
    std::vector<LifecycleEvent> events;
    tracker.AddFix(fix, at, &events);
  }

  SignatureTracker tracker;
  FixJudgement last_judgement = FixJudgement::kNoFix;
  std::vector<LifecycleEvent> last_events;
};

using Kinds = std::vector<AlertKind>;

TEST_F(SignatureTrackerTest, NewOnceThenOngoingOncePerRepeatInterval) {
  EXPECT_EQ(Kinds{AlertKind::kNew}, See("a.b", kT0));
  for (int i = 1; i < 10000; ++i) EXPECT_EQ(Kinds{}, See("a.b", kT0 + i));
  EXPECT_EQ(10000u, tracker.Find("a.b")->count);
  EXPECT_EQ(Kinds{AlertKind::kOngoing}, See("a.b", kT0 + 4 * kHour));
  EXPECT_EQ(10000u, last_events[0].count_since_last);
  EXPECT_EQ(Kinds{}, See("a.b", kT0 + 5 * kHour));
}

TEST_F(SignatureTrackerTest, WarningsAreCountedButNewIsTheFirstFailure) {
  EXPECT_EQ(Kinds{}, See("a.b", kT0, "", std::nullopt, Severity::kWarning));
  EXPECT_EQ(Kinds{AlertKind::kNew}, See("a.b", kT0 + 1));
  EXPECT_EQ(2u, tracker.Find("a.b")->count);
}

TEST_F(SignatureTrackerTest, TheDeepSpeedVersionStory) {
  EXPECT_EQ(Kinds{AlertKind::kNew}, See("ds.aio", kT0, "0.14.0"));
  Fix("ds.aio", "0.15.0", kT0 + kHour, "op builder skips aio on Windows");
  // A log from 0.14.2 after the fix: counted as pre-fix, never a regression.
  EXPECT_EQ(Kinds{}, See("ds.aio", kT0 + 2 * kHour, "0.14.2"));
  EXPECT_EQ(FixJudgement::kPreFixVersion, last_judgement);
  EXPECT_EQ(1u, tracker.Find("ds.aio")->pre_fix_version);
  // 0.15.1: exactly one regression naming both versions and the note.
  EXPECT_EQ(Kinds{AlertKind::kRegression}, See("ds.aio", kT0 + 3 * kHour, "0.15.1"));
  ASSERT_TRUE(last_events[0].fix.has_value());
  EXPECT_EQ("0.15.0", last_events[0].fix->fixed_in);
  EXPECT_EQ("op builder skips aio on Windows", last_events[0].fix->note);
  EXPECT_EQ("0.15.1", last_events[0].version);
  EXPECT_EQ("version", last_events[0].regression_basis);
  EXPECT_EQ(Kinds{}, See("ds.aio", kT0 + 3 * kHour + 1, "0.15.1"));
  EXPECT_EQ(Kinds{}, See("ds.aio", kT0 + 3 * kHour + 2, "0.15.2"));
  EXPECT_EQ(SignatureState::kRegressed, tracker.StateOf(*tracker.Find("ds.aio"), kT0 + 4 * kHour));
}

TEST_F(SignatureTrackerTest, TheFixedVersionItselfRegresses) {
  See("ds.aio", kT0, "1.3.0");
  Fix("ds.aio", "1.4.0", kT0 + 1);
  EXPECT_EQ(Kinds{AlertKind::kRegression}, See("ds.aio", kT0 + 2, "1.4.0"));
}

TEST_F(SignatureTrackerTest, UnparseableVersionsAreNeverARegression) {
  See("ds.aio", kT0, "1.3.0");
  Fix("ds.aio", "1.4.0", kT0 + 1);
  EXPECT_EQ(Kinds{}, See("ds.aio", kT0 + 2, "abc1234"));
  EXPECT_EQ(FixJudgement::kVersionUnknown, last_judgement);
  EXPECT_EQ(1u, tracker.Find("ds.aio")->version_unknown);
}

TEST_F(SignatureTrackerTest, WithoutVersionsTheLineTimestampDecidesNotTheArrival) {
  See("a.b", kT0);
  Fix("a.b", "", kT0 + kHour);
  // A lagging shipper delivers a line written before the fix, an hour late.
  EXPECT_EQ(Kinds{}, See("a.b", kT0 + 2 * kHour, "", kT0 + kHour - 1000));
  EXPECT_EQ(FixJudgement::kPreFixTime, last_judgement);
  // A line written after the fix.
  EXPECT_EQ(Kinds{AlertKind::kRegression}, See("a.b", kT0 + 3 * kHour, "", kT0 + kHour + 1000));
  EXPECT_EQ("timestamp", last_events[0].regression_basis);
}

TEST_F(SignatureTrackerTest, WithoutVersionOrTimestampArrivalDecides) {
  See("a.b", kT0);
  Fix("a.b", "", kT0 + kHour);
  EXPECT_EQ(Kinds{AlertKind::kRegression}, See("a.b", kT0 + kHour + 1));
  EXPECT_EQ("arrival", last_events[0].regression_basis);
}

TEST_F(SignatureTrackerTest, FixedInNextVersionPinsToTheHighestSeen) {
  See("ds.aio", kT0, "0.14.0");
  See("ds.aio", kT0 + 1, "0.14.2");
  Fix("ds.aio", "", kT0 + 2);
  EXPECT_EQ("0.14.2", tracker.fixes().back().after_version);
  EXPECT_EQ(Kinds{}, See("ds.aio", kT0 + 3, "0.14.2"));
  EXPECT_EQ(Kinds{}, See("ds.aio", kT0 + 4, "0.14.1"));
  EXPECT_EQ(Kinds{AlertKind::kRegression}, See("ds.aio", kT0 + 5, "0.14.3"));
}

TEST_F(SignatureTrackerTest, OneRegressionPerFixAndANewFixArmsAnother) {
  See("a.b", kT0, "1.0");
  Fix("a.b", "2.0", kT0 + 1);
  EXPECT_EQ(Kinds{AlertKind::kRegression}, See("a.b", kT0 + 2, "2.0"));
  EXPECT_EQ(Kinds{}, See("a.b", kT0 + 3, "2.1"));
  Fix("a.b", "3.0", kT0 + 4);
  EXPECT_EQ(Kinds{}, See("a.b", kT0 + 5, "2.1"));
  EXPECT_EQ(Kinds{AlertKind::kRegression}, See("a.b", kT0 + 6, "3.0"));
}

TEST_F(SignatureTrackerTest, ARuleIdFixCoversSignaturesNotSeenYet) {
  Fix("ds.aio", "0.15.0", kT0);
  EXPECT_EQ(Kinds{}, See("ds.aio{lib=aio}", kT0 + 1, "0.14.2"));
  EXPECT_EQ(Kinds{AlertKind::kRegression}, See("ds.aio{lib=aio}", kT0 + 2, "0.15.1"));
  EXPECT_EQ(Kinds{AlertKind::kRegression}, See("ds.aio{lib=cufile}", kT0 + 3, "0.15.1"));
}

TEST_F(SignatureTrackerTest, RecurrenceAfterQuietForWithBackoff) {
  See("a.b", kT0);
  EXPECT_EQ(Kinds{AlertKind::kOngoing}, See("a.b", kT0 + 23 * kHour));
  EXPECT_EQ(Kinds{AlertKind::kRecurrence}, See("a.b", kT0 + 47 * kHour));
  EXPECT_EQ(Kinds{AlertKind::kRecurrence}, See("a.b", kT0 + 71 * kHour));
}

TEST_F(SignatureTrackerTest, ScriptedSequenceGivesTheExactKinds) {
  std::vector<AlertKind> all;
  const auto add = [&](const Kinds& k) { all.insert(all.end(), k.begin(), k.end()); };
  add(See("s.x", kT0, "1.0"));
  add(See("s.x", kT0 + 1, "1.0"));
  add(See("s.x", kT0 + 5 * kHour, "1.0"));        // ongoing
  add(See("s.x", kT0 + 30 * kHour, "1.0"));       // recurrence
  Fix("s.x", "1.1", kT0 + 31 * kHour);
  add(See("s.x", kT0 + 32 * kHour, "1.0"));       // pre-fix
  add(See("s.x", kT0 + 33 * kHour, "1.1"));       // regression
  add(See("s.x", kT0 + 38 * kHour, "1.1"));       // ongoing after the regression
  EXPECT_EQ((Kinds{AlertKind::kNew, AlertKind::kOngoing, AlertKind::kRecurrence,
                   AlertKind::kRegression, AlertKind::kOngoing}),
            all);
}

TEST_F(SignatureTrackerTest, MutesHideNotificationsNotCountsAndSummariseAtTheEnd) {
  See("a.b", kT0);
  ASSERT_TRUE(tracker.Mute("a.b", kT0 + 8 * kHour, "known, fix in 0.15.1", "bob", kT0));
  for (int i = 0; i < 37; ++i) See("a.b", kT0 + 5 * kHour + i);
  for (const LifecycleEvent& e : last_events) EXPECT_TRUE(e.muted);
  EXPECT_EQ(38u, tracker.Find("a.b")->count);
  std::vector<LifecycleEvent> events;
  tracker.Tick(kT0 + 7 * kHour, &events);
  EXPECT_TRUE(events.empty());
  tracker.Tick(kT0 + 8 * kHour, &events);
  ASSERT_EQ(1u, events.size());
  EXPECT_EQ(AlertKind::kMuteEnded, events[0].kind);
  EXPECT_NE(events[0].detail.find("37 occurrence(s) in 37 run(s)"), std::string::npos)
      << events[0].detail;
  EXPECT_FALSE(tracker.Find("a.b")->mute.has_value());
}

TEST_F(SignatureTrackerTest, ARegressionDuringAMutePagesOnceWhenItEnds) {
  See("a.b", kT0, "1.0");
  Fix("a.b", "2.0", kT0 + 1);
  tracker.Mute("a.b", kT0 + kHour, "deploy", "bob", kT0 + 2);
  EXPECT_EQ(Kinds{AlertKind::kRegression}, See("a.b", kT0 + 3, "2.0"));
  EXPECT_TRUE(last_events[0].muted);
  std::vector<LifecycleEvent> events;
  tracker.Tick(kT0 + kHour, &events);
  ASSERT_EQ(1u, events.size());
  EXPECT_EQ(AlertKind::kRegression, events[0].kind);
  EXPECT_FALSE(events[0].muted);
}

TEST_F(SignatureTrackerTest, ResolvedWhenFixedOrQuietAndOnlyOnce) {
  See("a.b", kT0);
  See("c.d", kT0);
  std::vector<LifecycleEvent> events;
  FixRecord fix;
  fix.selector = "a.b";
  tracker.AddFix(fix, kT0 + 1, &events);
  ASSERT_EQ(1u, events.size());
  EXPECT_EQ(AlertKind::kResolved, events[0].kind);
  EXPECT_EQ("a.b", events[0].signature);
  events.clear();
  tracker.Tick(kT0 + 25 * kHour, &events);
  ASSERT_EQ(1u, events.size());
  EXPECT_EQ("c.d", events[0].signature);
  events.clear();
  tracker.Tick(kT0 + 26 * kHour, &events);
  EXPECT_TRUE(events.empty());
}

TEST_F(SignatureTrackerTest, RestoredRecordsKeepNewExactlyOnce) {
  See("a.b", kT0, "1.0");
  Fix("a.b", "2.0", kT0 + 1);
  SignatureTracker::Dirty dirty = tracker.TakeDirty();
  ASSERT_EQ(1u, dirty.records.size());
  ASSERT_TRUE(dirty.fixes_changed);
  SignatureTracker restarted;
  restarted.Restore(dirty.records, dirty.fixes);
  FindingEvent event;
  event.rule_id = "a.b";
  event.signature = "a.b";
  std::vector<LifecycleEvent> events;
  restarted.Observe(Occurrence{&event, "", "1.0", std::nullopt, kT0 + 2}, &events);
  EXPECT_TRUE(events.empty()) << "no second new, and 1.0 is older than the fix";
  restarted.Observe(Occurrence{&event, "", "2.0", std::nullopt, kT0 + 3}, &events);
  ASSERT_EQ(1u, events.size());
  EXPECT_EQ(AlertKind::kRegression, events[0].kind);
  FixRecord another;
  another.selector = "a.b";
  EXPECT_EQ(2, restarted.AddFix(another, kT0 + 4, &events).id);
}

}  // namespace
}  // namespace faultline
