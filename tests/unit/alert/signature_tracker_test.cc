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

  // A successful run of `job` ended at `at`: the events it raised, as (kind, muted).
  std::vector<std::pair<AlertKind, bool>> CleanRun(const std::string& job, int64_t at) {
    std::vector<LifecycleEvent> events;
    tracker.OnCleanRun(job, at, &events);
    return Sent(events);
  }
  std::vector<std::pair<AlertKind, bool>> Tick(int64_t at) {
    std::vector<LifecycleEvent> events;
    tracker.Tick(at, &events);
    return Sent(events);
  }
  std::vector<std::pair<AlertKind, bool>> Sent(const std::vector<LifecycleEvent>& events) {
    last_events = events;
    std::vector<std::pair<AlertKind, bool>> out;
    for (const LifecycleEvent& e : events) out.emplace_back(e.kind, e.muted);
    return out;
  }
  SignatureState State(const std::string& signature, int64_t at) {
    return tracker.StateOf(*tracker.Find(signature), at);
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
  add(See("s.x", kT0 + 5 * kHour, "1.0"));   // ongoing
  add(See("s.x", kT0 + 30 * kHour, "1.0"));  // recurrence
  Fix("s.x", "1.1", kT0 + 31 * kHour);
  add(See("s.x", kT0 + 32 * kHour, "1.0"));  // pre-fix
  add(See("s.x", kT0 + 33 * kHour, "1.1"));  // regression
  add(See("s.x", kT0 + 38 * kHour, "1.1"));  // ongoing after the regression
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

using Sends = std::vector<std::pair<AlertKind, bool>>;
const Sends kNothing;
constexpr int64_t kMinute = 60 * 1000;

// Behaviour 15: resolved after N successful runs in a row of the job the signature last failed
// in (the job is the source, "ci" in See); another job's runs say nothing about it.
TEST_F(SignatureTrackerTest, ResolvedAfterThreeSuccessfulRunsOfTheJobItLastFailedIn) {
  See("a.b", kT0);
  for (int i = 1; i <= 5; ++i) EXPECT_EQ(kNothing, CleanRun("nightly", kT0 + i)) << "another job";
  EXPECT_EQ(kNothing, CleanRun("ci", kT0 + 10));
  EXPECT_EQ(kNothing, CleanRun("ci", kT0 + 11));
  EXPECT_EQ((Sends{{AlertKind::kResolved, false}}), CleanRun("ci", kT0 + 12));
  EXPECT_EQ("a.b", last_events[0].signature);
  EXPECT_EQ("3 successful run(s) of ci in a row since it last failed", last_events[0].detail);
  EXPECT_EQ(SignatureState::kResolved, State("a.b", kT0 + 13));
  EXPECT_EQ(kNothing, CleanRun("ci", kT0 + 13)) << "resolved once until it fails again";
  // It fails again: the receiver closed the alert, so it fires at once, not a quiet_for later.
  EXPECT_EQ(Kinds{AlertKind::kRecurrence}, See("a.b", kT0 + 14));
  EXPECT_EQ(SignatureState::kNew, State("a.b", kT0 + 15));
  // A failure in between starts the count over.
  CleanRun("ci", kT0 + 20);
  CleanRun("ci", kT0 + 21);
  See("a.b", kT0 + 22);
  EXPECT_EQ(kNothing, CleanRun("ci", kT0 + 23));
  EXPECT_EQ(kNothing, CleanRun("ci", kT0 + 24));
  EXPECT_EQ((Sends{{AlertKind::kResolved, false}}), CleanRun("ci", kT0 + 25));
}

TEST_F(SignatureTrackerTest, RunsResolveNothingWhenOffOrUnderAFix) {
  SignatureTracker off(LifecycleOptions{.resolve_after_runs = 0});
  FindingEvent event;
  event.rule_id = event.signature = "a.b";
  event.source_id = "ci";
  event.severity = Severity::kError;
  std::vector<LifecycleEvent> events;
  off.Observe(Occurrence{&event, "", "", std::nullopt, kT0}, &events);
  events.clear();
  for (int i = 1; i <= 10; ++i) off.OnCleanRun("ci", kT0 + i, &events);
  EXPECT_TRUE(events.empty());

  See("c.d", kT0);
  Fix("c.d", "", kT0 + 1);  // resolves it (the fix's own resolved)
  for (int i = 2; i <= 10; ++i) EXPECT_EQ(kNothing, CleanRun("ci", kT0 + i));
  EXPECT_EQ(SignatureState::kFixed, State("c.d", kT0 + 11));
}

// Behaviour 15, flapping: the third fire/resolve cycle within an hour marks the signature
// flapping (that resolved says so); then at most one message an hour, the latest state held back
// goes out when the hour is up, and an hour without a cycle ends it.
TEST_F(SignatureTrackerTest, ThreeCyclesWithinAnHourAreFlappingThenAtMostOneMessageAnHour) {
  int64_t t = kT0;
  const auto cycle = [&]() {
    Sends sent;
    for (const AlertKind k : See("a.b", t += kMinute)) sent.emplace_back(k, false);
    for (int i = 0; i < 3; ++i) {
      for (const auto& s : CleanRun("ci", t += kMinute)) sent.push_back(s);
    }
    return sent;
  };
  EXPECT_EQ((Sends{{AlertKind::kNew, false}, {AlertKind::kResolved, false}}), cycle());
  EXPECT_EQ((Sends{{AlertKind::kRecurrence, false}, {AlertKind::kResolved, false}}), cycle());
  EXPECT_NE(SignatureState::kFlapping, State("a.b", t));
  EXPECT_EQ((Sends{{AlertKind::kRecurrence, false}, {AlertKind::kResolved, false}}), cycle());
  EXPECT_EQ(SignatureState::kFlapping, State("a.b", t));
  EXPECT_NE(std::string::npos, last_events.back().detail.find("flapping: 3 fire/resolve cycles"))
      << last_events.back().detail;
  const int64_t flagged = t;

  // Within the hour: raised (counted), not sent.
  std::vector<LifecycleEvent> fired;
  FindingEvent event;
  event.rule_id = event.signature = "a.b";
  event.source_id = "ci";
  event.severity = Severity::kError;
  tracker.Observe(Occurrence{&event, "", "", std::nullopt, t += kMinute}, &fired);
  ASSERT_EQ(1u, fired.size());
  EXPECT_EQ(AlertKind::kRecurrence, fired[0].kind);
  EXPECT_TRUE(fired[0].muted) << "held back by flapping";
  CleanRun("ci", t += kMinute);
  CleanRun("ci", t += kMinute);
  EXPECT_EQ((Sends{{AlertKind::kResolved, true}}), CleanRun("ci", t += kMinute));
  EXPECT_EQ(kNothing, Tick(flagged + 59 * kMinute));
  // The hour is up: the latest held state (resolved) goes out, once.
  EXPECT_EQ((Sends{{AlertKind::kResolved, false}}), Tick(flagged + 60 * kMinute));
  EXPECT_EQ(kNothing, Tick(flagged + 61 * kMinute));
  EXPECT_EQ(SignatureState::kFlapping, State("a.b", flagged + 61 * kMinute));
  // An hour after the last resolution without another cycle: no longer flapping.
  EXPECT_EQ(kNothing, Tick(t + 60 * kMinute));
  EXPECT_EQ(SignatureState::kResolved, State("a.b", t + 60 * kMinute));
  EXPECT_EQ(Kinds{AlertKind::kRecurrence}, See("a.b", t + 61 * kMinute));
  EXPECT_FALSE(last_events[0].muted) << "sent at once again";
}

TEST_F(SignatureTrackerTest, CyclesSpreadOverMoreThanAnHourAreNotFlapping) {
  int64_t t = kT0;
  for (int cycle = 0; cycle < 6; ++cycle) {
    See("a.b", t += 31 * kMinute);  // a cycle every 34 minutes: two within any hour
    for (int i = 0; i < 3; ++i) CleanRun("ci", t += kMinute);
    EXPECT_FALSE(last_events.empty());
    EXPECT_FALSE(last_events.back().muted);
    EXPECT_EQ(SignatureState::kResolved, State("a.b", t)) << "cycle " << cycle;
  }
}

}  // namespace
}  // namespace faultline
