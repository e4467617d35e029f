#include "agent/syslog/syslog_message.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

constexpr CivilTime kMidYear{2026, 6, 15, 12, 0, 0};

SyslogMessage Parse(std::string_view text, const CivilTime& now = kMidYear) {
  return ParseSyslogMessage(text, now);
}

TEST(SyslogMessageTest, Rfc5424ExampleFromTheRfcWithBom) {
  const SyslogMessage m = Parse(
      "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \xEF\xBB\xBF'su root' "
      "failed for lonvick on /dev/pts/8");
  EXPECT_EQ(SyslogFormat::kRfc5424, m.format);
  EXPECT_EQ(34, m.priority);
  EXPECT_EQ(4, m.facility());
  EXPECT_EQ(2, m.severity());
  ASSERT_TRUE(m.time.has_value());
  EXPECT_EQ((CivilTime{2003, 10, 11, 22, 14, 15}), m.time->civil);
  EXPECT_EQ(3000000u, m.time->nanoseconds);
  EXPECT_EQ(0, m.time->utc_offset_minutes);
  EXPECT_EQ("mymachine.example.com", m.host);
  EXPECT_EQ("su", m.app);
  EXPECT_EQ("", m.proc_id);
  EXPECT_EQ("ID47", m.msg_id);
  EXPECT_EQ("", m.structured_data);
  EXPECT_EQ("'su root' failed for lonvick on /dev/pts/8", m.text);
}

TEST(SyslogMessageTest, Rfc5424StructuredDataWithEscapesAndSeveralElements) {
  const SyslogMessage m = Parse(
      "<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - "
      "[exampleSDID@32473 iut=\"3\" note=\"a \\\"quoted\\\" ] bracket\"][examplePriority@32473 "
      "class=\"high\"] %% It's time to make the do-nuts.");
  EXPECT_EQ(SyslogFormat::kRfc5424, m.format);
  EXPECT_EQ(-7 * 60, m.time->utc_offset_minutes);
  EXPECT_EQ(3000u, m.time->nanoseconds);
  EXPECT_EQ("192.0.2.1", m.host);
  EXPECT_EQ("myproc", m.app);
  EXPECT_EQ("8710", m.proc_id);
  EXPECT_EQ(
      "[exampleSDID@32473 iut=\"3\" note=\"a \\\"quoted\\\" ] bracket\"][examplePriority@32473 "
      "class=\"high\"]",
      m.structured_data);
  EXPECT_EQ("%% It's time to make the do-nuts.", m.text);
}

TEST(SyslogMessageTest, Rfc5424NilValuesAndNoMessage) {
  const SyslogMessage m = Parse("<14>1 - - - - - -");
  EXPECT_EQ(SyslogFormat::kRfc5424, m.format);
  EXPECT_FALSE(m.time.has_value());
  EXPECT_EQ("", m.host);
  EXPECT_EQ("", m.app);
  EXPECT_EQ("", m.text);
}

TEST(SyslogMessageTest, Rfc5424WithABrokenHeaderIsReadAsBsdSyslog) {
  // A timestamp without a zone is not RFC 5424; the line is kept, after its PRI.
  const SyslogMessage m = Parse("<13>1 2024-01-01T00:00:00 host app - - - text");
  EXPECT_EQ(SyslogFormat::kRfc3164, m.format);
  EXPECT_EQ(13, m.priority);
  EXPECT_EQ("1 2024-01-01T00:00:00 host app - - - text", m.text);
}

TEST(SyslogMessageTest, Rfc3164ExampleFromTheRfc) {
  const SyslogMessage m =
      Parse("<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8");
  EXPECT_EQ(SyslogFormat::kRfc3164, m.format);
  EXPECT_EQ(34, m.priority);
  ASSERT_TRUE(m.time.has_value());
  EXPECT_EQ((CivilTime{2025, 10, 11, 22, 14, 15}), m.time->civil);  // October is past in June
  EXPECT_FALSE(m.time->utc_offset_minutes.has_value());
  EXPECT_EQ("mymachine", m.host);
  EXPECT_EQ("su", m.app);
  EXPECT_EQ("'su root' failed for lonvick on /dev/pts/8", m.text);
}

TEST(SyslogMessageTest, Rfc3164TagWithPidAndSpacePaddedDay) {
  const SyslogMessage m =
      Parse("<11>Jun  5 08:00:01 node07 python3[4242]: torch.OutOfMemoryError: CUDA out of memory");
  EXPECT_EQ((CivilTime{2026, 6, 5, 8, 0, 1}), m.time->civil);
  EXPECT_EQ("node07", m.host);
  EXPECT_EQ("python3", m.app);
  EXPECT_EQ("4242", m.proc_id);
  EXPECT_EQ("torch.OutOfMemoryError: CUDA out of memory", m.text);
}

TEST(SyslogMessageTest, Rfc3164WithoutHostnameAsLibcSyslogWritesIt) {
  const SyslogMessage m = Parse("<13>Jun 15 11:59:00 trainer[77]: NCCL error");
  EXPECT_EQ("", m.host);
  EXPECT_EQ("trainer", m.app);
  EXPECT_EQ("77", m.proc_id);
  EXPECT_EQ("NCCL error", m.text);
  const SyslogMessage bare = Parse("<13>Jun 15 11:59:00 make: *** [all] Error 2");
  EXPECT_EQ("", bare.host);
  EXPECT_EQ("make", bare.app);
  EXPECT_EQ("*** [all] Error 2", bare.text);
}

TEST(SyslogMessageTest, Rfc3164WithAnRfc3339TimestampAsRsyslogForwards) {
  const SyslogMessage m = Parse("<13>2026-06-01T10:00:00.123456+02:00 ci-win-3 msbuild: LNK1181");
  EXPECT_EQ(SyslogFormat::kRfc3164, m.format);
  EXPECT_EQ((CivilTime{2026, 6, 1, 10, 0, 0}), m.time->civil);
  EXPECT_EQ(120, m.time->utc_offset_minutes);
  EXPECT_EQ("ci-win-3", m.host);
  EXPECT_EQ("msbuild", m.app);
  EXPECT_EQ("LNK1181", m.text);
}

// A year the message gives is kept, however far from now: only yearless timestamps are resolved.
TEST(SyslogMessageTest, Rfc3164WithAnRfc3339TimestampKeepsItsYearEvenWithoutAZone) {
  const SyslogMessage m = Parse("<130>2003-08-24T05:14:15.000 host app: t");
  ASSERT_TRUE(m.time.has_value());
  EXPECT_EQ(2003, m.time->civil.year);
  EXPECT_FALSE(m.time->year_inferred);
  EXPECT_FALSE(m.time->utc_offset_minutes.has_value());
}

TEST(SyslogMessageTest, Rfc3164WithoutTagKeepsTheWholeText) {
  const SyslogMessage m = Parse("<13>Jun 15 11:59:00 node1 just some words");
  EXPECT_EQ("node1", m.host);
  EXPECT_EQ("", m.app);
  EXPECT_EQ("just some words", m.text);
}

TEST(SyslogMessageTest, PriorityWithoutTimestampStillFindsTheTag) {
  const SyslogMessage m = Parse("<13>myapp: hello");
  EXPECT_EQ(SyslogFormat::kRfc3164, m.format);
  EXPECT_EQ("myapp", m.app);
  EXPECT_EQ("hello", m.text);
}

TEST(SyslogMessageTest, LineFromAFileWithoutPriority) {
  const SyslogMessage m = Parse("Jun 15 11:59:00 node1 kernel: NVRM: Xid 79");
  EXPECT_EQ(SyslogFormat::kRfc3164, m.format);
  EXPECT_EQ(SyslogMessage::kNoPriority, m.priority);
  EXPECT_EQ("node1", m.host);
  EXPECT_EQ("kernel", m.app);
  EXPECT_EQ("NVRM: Xid 79", m.text);
}

TEST(SyslogMessageTest, AnythingElseIsKeptWholeAsText) {
  for (const std::string_view text :
       {std::string_view("plain line, no header"), std::string_view("<192>Jun 15 11:59:00 x"),
        std::string_view("<>x"), std::string_view("<1234>x"), std::string_view(""),
        std::string_view("<13"), std::string_view("Jun 15 1:00:00 x")}) {
    const SyslogMessage m = Parse(text);
    EXPECT_EQ(SyslogFormat::kNone, m.format) << text;
    EXPECT_EQ(text, m.text);
    EXPECT_EQ("", m.host);
  }
}

TEST(SyslogMessageTest, FieldsAreBoundedAndPrintable) {
  const std::string long_host(256, 'h');
  const SyslogMessage too_long = Parse("<13>1 - " + long_host + " app - - - text");
  EXPECT_NE(SyslogFormat::kRfc5424, too_long.format);
  EXPECT_EQ("", too_long.host);
  const SyslogMessage control = Parse("<13>1 - ho\x01st app - - - text");
  EXPECT_NE(SyslogFormat::kRfc5424, control.format);
  const std::string long_tag(49, 't');
  const SyslogMessage tag = Parse("<13>Jun 15 11:59:00 node1 " + long_tag + ": text");
  EXPECT_EQ("", tag.app);
}

TEST(SyslogMessageTest, ImpossibleDatesAreNotTimestamps) {
  EXPECT_FALSE(Parse("<13>1 2026-02-30T00:00:00Z h a - - - t").time.has_value());
  EXPECT_FALSE(Parse("<13>Jun 31 00:00:00 h a: t").time.has_value());
  EXPECT_EQ("a", Parse("<13>Jun 31 00:00:00 h a: t").app);  // the header still parses
  EXPECT_FALSE(Parse("<13>Jun 15 24:00:00 h a: t").time.has_value());
}

// RFC 3164 has no year: December's messages read in the first seconds of January are last
// year's, and a sender a few seconds ahead across New Year is next year's.
TEST(SyslogYearTest, DecemberReadInJanuaryIsLastYear) {
  const CivilTime new_year{2027, 1, 1, 0, 0, 5};
  const SyslogMessage m = Parse("<13>Dec 31 23:59:59 node1 app: last words of 2026", new_year);
  ASSERT_TRUE(m.time.has_value());
  EXPECT_EQ((CivilTime{2026, 12, 31, 23, 59, 59}), m.time->civil);
  EXPECT_TRUE(m.time->year_inferred);
  EXPECT_EQ(2027, Parse("<13>Jan  1 00:00:01 node1 app: x", new_year).time->civil.year);
}

TEST(SyslogYearTest, JanuaryReadOnNewYearsEveFromAClockAheadIsNextYear) {
  const CivilTime eve{2026, 12, 31, 23, 59, 58};
  EXPECT_EQ(2027, Parse("<13>Jan  1 00:00:01 node1 app: x", eve).time->civil.year);
  EXPECT_EQ(2026, Parse("<13>Dec 31 23:59:57 node1 app: x", eve).time->civil.year);
}

TEST(SyslogYearTest, LogsComeFromThePast) {
  EXPECT_EQ(2025, ResolveYear(CivilTime{0, 11, 3, 0, 0, 0}, kMidYear));
  EXPECT_EQ(2026, ResolveYear(CivilTime{0, 6, 16, 11, 0, 0}, kMidYear));  // a day ahead: skew
  EXPECT_EQ(2026, ResolveYear(CivilTime{0, 1, 1, 0, 0, 0}, kMidYear));
}

TEST(SyslogYearTest, FebruaryTwentyNinthTakesTheLeapYear) {
  EXPECT_EQ(2028, ResolveYear(CivilTime{0, 2, 29, 12, 0, 0}, CivilTime{2028, 3, 1, 0, 0, 0}));
  EXPECT_EQ(2028, ResolveYear(CivilTime{0, 2, 29, 12, 0, 0}, CivilTime{2029, 1, 10, 0, 0, 0}));
  EXPECT_FALSE(ResolveYear(CivilTime{0, 2, 29, 12, 0, 0}, kMidYear).has_value());
}

}  // namespace
}  // namespace faultline
