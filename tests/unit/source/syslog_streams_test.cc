#include "agent/source/syslog_streams.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/source/recording_consumer.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using testing::Recorder;

// 2026-06-15T12:00:00Z.
constexpr int64_t kNowMs = 1781524800000;

SyslogStreamsOptions Options(bool datagrams) {
  SyslogStreamsOptions options;
  options.datagrams = datagrams;
  options.default_host = "10.0.0.9";
  options.now = [] { return CivilTime{2026, 6, 15, 12, 0, 0}; };
  options.clock = [] { return FromUnixMs(kNowMs); };
  return options;
}

TEST(SyslogStreamsTest, EachHostAndAppGetsAStreamLabelledWithThem) {
  Recorder recorder;
  SyslogStreams streams("10.0.0.9:514", Options(false), recorder.Labeled());
  streams.OnBytes(
      "<13>Jun 15 11:00:00 node1 trainer[7]: step 1\n"
      "27 <13>1 - node2 make - - - ok\n"
      "<13>Jun 15 11:00:01 node1 trainer[7]: CUDA out of memory\n"
      "<13>Jun 15 11:00:02 kernel: Xid 79\n"
      "not syslog at all\n");
  ASSERT_EQ(4u, recorder.streams.size());
  EXPECT_EQ("10.0.0.9:514", recorder.streams[0].name);
  EXPECT_THAT(recorder.streams[0].labels,
              ElementsAre(Pair("host", "node1"), Pair("app", "trainer")));
  EXPECT_EQ("step 1\nCUDA out of memory\n", recorder.streams[0].bytes);
  EXPECT_EQ(1, recorder.streams[0].on_bytes_calls);  // one read, one batch per stream
  EXPECT_THAT(recorder.streams[1].labels, ElementsAre(Pair("host", "node2"), Pair("app", "make")));
  EXPECT_EQ("ok\n", recorder.streams[1].bytes);
  // No HOSTNAME: the peer's host.
  EXPECT_THAT(recorder.streams[2].labels,
              ElementsAre(Pair("host", "10.0.0.9"), Pair("app", "kernel")));
  EXPECT_THAT(recorder.streams[3].labels, ElementsAre(Pair("host", "10.0.0.9"), Pair("app", "")));
  EXPECT_EQ("not syslog at all\n", recorder.streams[3].bytes);
  EXPECT_EQ(5u, streams.messages());
}

TEST(SyslogStreamsTest, APartialMessageAtTheEndIsStillAMessage) {
  Recorder recorder;
  SyslogStreams streams("peer", Options(false), recorder.Labeled());
  streams.OnBytes("<13>Jun 15 11:00:00 node1 app: cut sh");
  EXPECT_TRUE(recorder.streams.empty());
  streams.OnBytes("ort");
  streams.OnEnd();
  ASSERT_EQ(1u, recorder.streams.size());
  EXPECT_EQ("cut short\n", recorder.streams[0].bytes);
  EXPECT_TRUE(recorder.streams[0].ended);
}

TEST(SyslogStreamsTest, OneDatagramIsOneMessageWhateverItHolds) {
  Recorder recorder;
  SyslogStreams streams("peer", Options(true), recorder.Labeled());
  streams.OnBytes("<13>Jun 15 11:00:00 node1 app: first line\nsecond line\n");
  streams.OnBytes("12 not a count\n");
  ASSERT_EQ(2u, recorder.streams.size());
  EXPECT_EQ("first line\nsecond line\n", recorder.streams[0].bytes);
  EXPECT_EQ("12 not a count\n", recorder.streams[1].bytes);
}

TEST(SyslogStreamsTest, BeyondMaxStreamsTheLeastRecentlyUsedEnds) {
  Recorder recorder;
  SyslogStreamsOptions options = Options(false);
  options.max_streams = 2;
  SyslogStreams streams("peer", options, recorder.Labeled());
  streams.OnBytes("<13>Jun 15 11:00:00 h a1: x\n<13>Jun 15 11:00:00 h a2: x\n");
  streams.OnBytes("<13>Jun 15 11:00:00 h a1: y\n<13>Jun 15 11:00:00 h a3: z\n");
  ASSERT_EQ(3u, recorder.streams.size());
  EXPECT_FALSE(recorder.streams[0].ended);
  EXPECT_TRUE(recorder.streams[1].ended);
  EXPECT_EQ("x\ny\n", recorder.streams[0].bytes);
  EXPECT_EQ(2u, streams.streams());
  streams.OnQuiet();
  EXPECT_EQ(1, recorder.streams[0].quiet);
  EXPECT_EQ(0, recorder.streams[1].quiet);
}

TEST(SyslogStreamsTest, AStreamEvictedMidReadKeepsItsLines) {
  Recorder recorder;
  SyslogStreamsOptions options = Options(false);
  options.max_streams = 1;
  SyslogStreams streams("peer", options, recorder.Labeled());
  streams.OnBytes("<13>Jun 15 11:00:00 h a1: x\n<13>Jun 15 11:00:00 h a2: y\n");
  ASSERT_EQ(2u, recorder.streams.size());
  EXPECT_EQ("x\n", recorder.streams[0].bytes);
  EXPECT_TRUE(recorder.streams[0].ended);
  EXPECT_EQ("y\n", recorder.streams[1].bytes);
}

TEST(SyslogStreamsTest, EachMessageIsHandedOnWithItsHeadersTime) {
  Recorder recorder;
  SyslogStreams streams("peer", Options(false), recorder.Labeled());
  streams.OnBytes(
      "<13>1 2026-06-15T11:59:58.250Z h app - - - one\n"
      "<13>1 2026-06-15T11:59:58.250Z h app - - - two\n"  // the same time: one run
      "<13>1 2026-06-15T13:59:59+02:00 h app - - - three\n"
      "<13>1 - h app - - - no time\n");
  ASSERT_EQ(1u, recorder.streams.size());
  using Run = std::pair<std::string, std::optional<int64_t>>;
  EXPECT_THAT(recorder.streams[0].runs,
              ElementsAre(Run{"one\ntwo\n", kNowMs - 1750}, Run{"three\n", kNowMs - 1000},
                          Run{"no time\n", std::nullopt}));
  EXPECT_EQ(1, recorder.streams[0].on_bytes_calls);  // still one batch
}

TEST(SyslogStreamsTest, ARfc3164TimeIsLocalTimeOfItsResolvedYear) {
  Recorder recorder;
  SyslogStreamsOptions options = Options(true);
  // A receiver on January 1st reads `Dec 31 23:59:30` as last year's.
  options.now = [] { return CivilTime{2027, 1, 1, 0, 0, 10}; };
  std::tm tm{};
  tm.tm_sec = 30;
  tm.tm_min = 59;
  tm.tm_hour = 23;
  tm.tm_mday = 31;
  tm.tm_mon = 11;
  tm.tm_year = 2026 - 1900;
  tm.tm_isdst = -1;
  const int64_t sent_ms = static_cast<int64_t>(mktime(&tm)) * 1000;
  options.clock = [sent_ms] { return FromUnixMs(sent_ms + 40000); };
  SyslogStreams streams("peer", options, recorder.Labeled());
  streams.OnBytes("<13>Dec 31 23:59:30 h app: late\n");
  ASSERT_EQ(1u, recorder.streams.size());
  ASSERT_EQ(1u, recorder.streams[0].runs.size());
  EXPECT_EQ(sent_ms, recorder.streams[0].runs[0].second);
}

TEST(SyslogStreamsTest, ATimeTooFarAheadOrBehindTheArrivalIsNotBelieved) {
  EXPECT_EQ(kNowMs + 60000, BoundedSenderTime(kNowMs + 60000, kNowMs));
  EXPECT_EQ(std::nullopt, BoundedSenderTime(kNowMs + 60001, kNowMs));
  EXPECT_EQ(kNowMs - SyslogStreams::kMaxBehindMs,
            BoundedSenderTime(kNowMs - SyslogStreams::kMaxBehindMs, kNowMs));
  EXPECT_EQ(std::nullopt, BoundedSenderTime(kNowMs - SyslogStreams::kMaxBehindMs - 1, kNowMs));
  Recorder recorder;
  SyslogStreams streams("peer", Options(true), recorder.Labeled());
  streams.OnBytes("<13>1 2026-06-15T12:05:00Z h app - - - from the future");
  streams.OnBytes("<13>1 1970-01-01T00:00:00Z h app - - - from a clock never set");
  ASSERT_EQ(1u, recorder.streams.size());
  using Run = std::pair<std::string, std::optional<int64_t>>;
  EXPECT_THAT(recorder.streams[0].runs, ElementsAre(Run{"from the future\n", std::nullopt},
                                                    Run{"from a clock never set\n", std::nullopt}));
}

}  // namespace
}  // namespace faultline
