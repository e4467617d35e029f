#include "agent/syslog/syslog_framer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace faultline {
namespace {

using ::testing::ElementsAre;

class Collect : public SyslogFramer::Sink {
 public:
  void OnMessage(std::string_view message) override { messages.emplace_back(message); }
  std::vector<std::string> messages;
};

// Feeds `stream` one byte at a time and all at once; both must give the same messages.
std::vector<std::string> Frame(std::string_view stream, size_t max = 1024,
                               uint64_t* truncated = nullptr) {
  Collect whole;
  SyslogFramer at_once(max);
  at_once.Feed(stream, whole);
  at_once.Finish(whole);
  Collect bytes;
  SyslogFramer byte_by_byte(max);
  for (char c : stream) byte_by_byte.Feed(std::string_view(&c, 1), bytes);
  byte_by_byte.Finish(bytes);
  EXPECT_EQ(whole.messages, bytes.messages) << stream;
  EXPECT_EQ(at_once.truncated_messages(), byte_by_byte.truncated_messages());
  if (truncated != nullptr) *truncated = at_once.truncated_messages();
  return whole.messages;
}

TEST(SyslogFramerTest, OctetCountedMessagesMayHoldNewlines) {
  EXPECT_THAT(Frame("10 <13>a: b\nc9 <13>x: yz\n"), ElementsAre("<13>a: b\nc", "<13>x: yz"));
}

TEST(SyslogFramerTest, LfFramedMessagesEndAtLfWithCrDropped) {
  EXPECT_THAT(Frame("<13>a: one\r\n<13>a: two\n\n<13>a: three"),
              ElementsAre("<13>a: one", "<13>a: two", "<13>a: three"));
}

TEST(SyslogFramerTest, FramingIsDecidedPerMessage) {
  EXPECT_THAT(Frame("<13>lf one\n7 counted<13>lf two\n"),
              ElementsAre("<13>lf one", "counted", "<13>lf two"));
}

TEST(SyslogFramerTest, DigitsWithoutASpaceBeginAPlainLine) {
  EXPECT_THAT(Frame("2024-06-01 12:00:00 build failed\n1234567890 ten digits\n"),
              ElementsAre("2024-06-01 12:00:00 build failed", "1234567890 ten digits"));
}

TEST(SyslogFramerTest, LongMessagesAreCutAndCounted) {
  uint64_t truncated = 0;
  EXPECT_THAT(Frame("20 0123456789abcdefghij<13>" + std::string(30, 'x') + "\nok\n", 8, &truncated),
              ElementsAre("01234567", "<13>xxxx", "ok"));
  EXPECT_EQ(2u, truncated);
}

// Digits that turn out not to be a count are the line's first bytes, cut at the limit like any
// others (the fuzzer found them kept whole).
TEST(SyslogFramerTest, DigitsThatAreNotACountAreCutAtTheLimitToo) {
  uint64_t truncated = 0;
  EXPECT_THAT(Frame("1234567:x\n12345\n123456789012\n", 4, &truncated),
              ElementsAre("1234", "1234", "1234"));
  EXPECT_EQ(3u, truncated);
  EXPECT_THAT(Frame("987654", 3, &truncated), ElementsAre("987"));  // and at the end
  EXPECT_EQ(1u, truncated);
}

// A line is its bytes before LF less one CR, then cut; a CR inside it is kept. The same however
// the reads split it (Frame also feeds byte by byte; the fuzzer found a cut line losing its CR
// only when split).
TEST(SyslogFramerTest, CrBeforeLfIsDroppedBeforeTheCutAndKeptElsewhere) {
  uint64_t truncated = 0;
  EXPECT_THAT(Frame("abc\r\n", 3, &truncated), ElementsAre("abc"));
  EXPECT_EQ(0u, truncated);
  EXPECT_THAT(Frame(std::string("\0P\r\xff\0\xff\n", 7), 3, &truncated),
              ElementsAre(std::string("\0P\r", 3)));
  EXPECT_EQ(1u, truncated);
  EXPECT_THAT(Frame("ab\r\r\nc\rd\ne\r"), ElementsAre("ab\r", "c\rd", "e"));
}

TEST(SyslogFramerTest, AFrameCutShortByTheEndOfTheStreamIsStillAMessage) {
  EXPECT_THAT(Frame("<13>no newline"), ElementsAre("<13>no newline"));
  EXPECT_THAT(Frame("100 only part"), ElementsAre("only part"));
  EXPECT_THAT(Frame("42"), ElementsAre("42"));
  EXPECT_THAT(Frame(""), ElementsAre());
}

}  // namespace
}  // namespace faultline
