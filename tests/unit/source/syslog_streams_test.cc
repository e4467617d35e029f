#include "agent/source/syslog_streams.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/source/recording_consumer.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using testing::Recorder;

SyslogStreamsOptions Options(bool datagrams) {
  SyslogStreamsOptions options;
  options.datagrams = datagrams;
  options.default_host = "10.0.0.9";
  options.now = [] { return CivilTime{2026, 6, 15, 12, 0, 0}; };
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

}  // namespace
}  // namespace faultline
