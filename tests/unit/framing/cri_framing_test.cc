// The CRI container log format: the record prefix (cri_record.h) and the framer reading records
// as the lines a program printed (line_framer.h), in the cri and auto formats.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/framing/cri_record.h"
#include "agent/framing/framing_options.h"
#include "agent/framing/line_framer.h"
#include "tests/unit/framing/record_stream_check.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;
using CriStrings = std::vector<std::string>;

constexpr std::string_view kTime = "2024-05-01T12:00:00.123456789Z";

// One record as containerd writes it: "<time> <stream> <P|F> <message>\n".
std::string CriRecord(std::string_view message, bool partial = false,
                      std::string_view stream = "stderr") {
  return std::string(kTime) + " " + std::string(stream) + (partial ? " P " : " F ") +
         std::string(message) + "\n";
}

CriStrings CriLines(const LineBatch& batch) {
  CriStrings out;
  for (size_t i = 0; i < batch.size(); ++i) out.emplace_back(batch.line(i));
  return out;
}

CriStrings CriFrame(std::string_view bytes, LineFormat format, size_t max = kDefaultMaxLineBytes) {
  LineFramer framer(max, format);
  LineBatch batch;
  framer.Feed(bytes, batch);
  framer.Finish(batch);
  return CriLines(batch);
}

TEST(CriPrefix, ReadsTheTimeStreamAndTag) {
  const std::string record = CriRecord("Traceback (most recent call last):");
  const CriPrefix prefix = ParseCriPrefix(record.substr(0, record.size() - 1));
  ASSERT_TRUE(prefix.valid);
  EXPECT_FALSE(prefix.partial);
  EXPECT_EQ("Traceback (most recent call last):",
            record.substr(prefix.content_offset, record.size() - 1 - prefix.content_offset));
  EXPECT_TRUE(ParseCriPrefix("2024-05-01T12:00:00Z stdout P x").partial);
}

TEST(CriPrefix, AcceptsTheTimesAndTagsRuntimesWrite) {
  for (const std::string_view head : {
           "2024-05-01T12:00:00Z stdout F x",                 // no fraction
           "2024-05-01T12:00:00.1Z stdout F x",               // Go trims trailing zeros
           "2024-05-01T12:00:00.123456789+07:00 stderr F x",  // CRI-O writes local offsets
           "2024-05-01T12:00:00.5-05:30 stdout F x",
           "2024-05-01T12:00:00Z stdout F:extra x",  // further tags after the first
           "2024-05-01T12:00:00Z stdout F",          // an empty message
       }) {
    EXPECT_TRUE(ParseCriPrefix(head).valid) << head;
  }
  EXPECT_EQ(29u, ParseCriPrefix("2024-05-01T12:00:00Z stdout F").content_offset);
}

TEST(CriPrefix, RejectsWhatIsNotARecord) {
  for (const std::string_view head : {
           "", "Traceback (most recent call last):",
           "2024-05-01 12:00:00 stdout F x",              // not RFC 3339
           "2024-05-01T12:00:00 stdout F x",              // no zone
           "2024-05-01T12:00:00.Z stdout F x",            // a dot without digits
           "2024-05-01T12:00:00.1234567890Z stdout F x",  // more than nanoseconds
           "2024-05-01T12:00:00Z stdin F x",              // no such stream
           "2024-05-01T12:00:00Z stdout X x",             // neither P nor F
           "2024-05-01T12:00:00Z stdout Fx",              // no space before the message
           "2024-05-01T12:00:00Z  stdout F x",
           "2024-05-01T12:00:00+0700 stdout F x",  // an offset without its colon
       }) {
    EXPECT_FALSE(ParseCriPrefix(head).valid) << head;
  }
}

TEST(CriPrefix, APrefixThatDoesNotEndWithinItsBoundIsNotOne) {
  // A reader holds only the first kMaxCriPrefixBytes bytes of a record before it decides, so the
  // whole record must be decided the same way.
  const std::string record = "2024-05-01T12:00:00Z stdout F:" + std::string(40, 't') + " message";
  EXPECT_FALSE(ParseCriPrefix(record).valid);
  EXPECT_FALSE(ParseCriPrefix(record.substr(0, kMaxCriPrefixBytes)).valid);
  const std::string empty = "2024-05-01T12:00:00Z stdout F:" + std::string(34, 't');
  ASSERT_EQ(kMaxCriPrefixBytes, empty.size());
  EXPECT_FALSE(ParseCriPrefix(empty).valid);
  EXPECT_TRUE(ParseCriPrefix(empty.substr(0, kMaxCriPrefixBytes - 1)).valid);
}

TEST(CriFraming, TheMessageIsTheLineAndItBeginsWhereItsRecordBegins) {
  const std::string a = CriRecord("Traceback (most recent call last):");
  const std::string b = CriRecord("ValueError: bad input", false, "stdout");
  LineFramer framer(kDefaultMaxLineBytes, LineFormat::kCri);
  LineBatch batch;
  framer.Feed(a + b, batch);
  framer.Finish(batch);
  EXPECT_THAT(CriLines(batch),
              ElementsAre("Traceback (most recent call last):", "ValueError: bad input"));
  EXPECT_EQ(0u, batch.stream_begin(0));
  EXPECT_EQ(a.size(), batch.stream_begin(1));
}

TEST(CriFraming, PartialRecordsAreJoinedIntoTheLineTheProgramPrinted) {
  const std::string bytes = CriRecord("RuntimeError: CUDA out", true) +
                            CriRecord(" of memory", true) +
                            CriRecord(". Tried to allocate 2.00 GiB") + CriRecord("next");
  EXPECT_EQ((CriStrings{"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", "next"}),
            CriFrame(bytes, LineFormat::kCri));
}

TEST(CriFraming, ALineWithoutThePrefixIsKeptWhole) {
  // A file that mixes formats (a runtime's own notice, a hand-appended line) loses nothing.
  EXPECT_EQ((CriStrings{"x", "not a record", "y"}),
            CriFrame(CriRecord("x") + "not a record\n" + CriRecord("y"), LineFormat::kCri));
}

TEST(CriFraming, ACarriageReturnInsideAMessageDoesNotEndIt) {
  // Only "\n" ends a record; a progress bar's "\r" is part of what the program printed.
  EXPECT_EQ((CriStrings{"10%\r100%", "done"}),
            CriFrame(CriRecord("10%\r100%") + CriRecord("done"), LineFormat::kCri));
}

TEST(CriFraming, ColourIsRemovedFromTheMessage) {
  EXPECT_EQ((CriStrings{"ERROR: failed"}),
            CriFrame(CriRecord("\x1b[31mERROR: failed\x1b[0m"), LineFormat::kCri));
}

TEST(CriFraming, AnEmptyMessageIsAnEmptyLine) {
  EXPECT_EQ((CriStrings{"a", "", "b"}),
            CriFrame(CriRecord("a") + std::string(kTime) + " stdout F\n" + CriRecord("b"),
                     LineFormat::kCri));
}

TEST(CriFraming, AMessageOverTheLimitIsCutOnceAcrossItsRecords) {
  LineFramer framer(16, LineFormat::kCri);
  LineBatch batch;
  framer.Feed(CriRecord("0123456789", true) + CriRecord("abcdefghij", true) + CriRecord("KLMNOP") +
                  CriRecord("after"),
              batch);
  framer.Finish(batch);
  EXPECT_THAT(CriLines(batch), ElementsAre("0123456789abcdef", "after"));
  EXPECT_EQ(1u, framer.truncated_lines());
}

TEST(CriFraming, AFlushedMessageIsALineOnceAndTheRestOfItIsSkipped) {
  LineFramer framer(kDefaultMaxLineBytes, LineFormat::kCri);
  LineBatch batch;
  framer.Feed(CriRecord("Killed by", true), batch);
  EXPECT_TRUE(framer.has_partial());
  framer.FlushPartial(batch);
  EXPECT_FALSE(framer.has_partial());
  framer.Feed(CriRecord(" signal 9") + CriRecord("next"), batch);
  framer.Finish(batch);
  EXPECT_THAT(CriLines(batch), ElementsAre("Killed by", "next"));
  EXPECT_EQ(0u, framer.truncated_lines());
}

TEST(CriFraming, AutoReadsAContainerLogAsCriAndAnythingElseAsPlain) {
  LineFramer cri(kDefaultMaxLineBytes, LineFormat::kAuto);
  LineBatch batch;
  cri.Feed(CriRecord("a") + CriRecord("b"), batch);
  EXPECT_EQ(LineFormat::kCri, cri.format());
  EXPECT_THAT(CriLines(batch), ElementsAre("a", "b"));

  LineFramer plain(kDefaultMaxLineBytes, LineFormat::kAuto);
  LineBatch plain_batch;
  // A plain log's later line that looks like a record stays as it is.
  plain.Feed("epoch 1\n" + CriRecord("x"), plain_batch);
  EXPECT_EQ(LineFormat::kPlain, plain.format());
  EXPECT_THAT(CriLines(plain_batch),
              ElementsAre("epoch 1", CriRecord("x").substr(0, CriRecord("x").size() - 1)));
}

TEST(CriFraming, AutoDecidesAtTheFirstTerminatorOrOnceAPrefixWouldHaveEnded) {
  LineFramer framer(kDefaultMaxLineBytes, LineFormat::kAuto);
  LineBatch batch;
  framer.Feed("epoch", batch);  // too short to tell
  EXPECT_EQ(LineFormat::kAuto, framer.format());
  EXPECT_TRUE(framer.has_partial());
  EXPECT_EQ(5u, framer.bytes_fed());
  framer.Feed(" 1\rloss", batch);  // a progress bar's redraw is a line at once
  EXPECT_EQ(LineFormat::kPlain, framer.format());
  EXPECT_THAT(CriLines(batch), ElementsAre("epoch 1"));

  LineFramer long_line(kDefaultMaxLineBytes, LineFormat::kAuto);
  LineBatch long_batch;
  long_line.Feed(std::string(kMaxCriPrefixBytes, 'x'), long_batch);
  EXPECT_EQ(LineFormat::kPlain, long_line.format());
}

TEST(CriFraming, AutoDecidesOnWhatItHoldsWhenTheStreamEndsOrGoesQuiet) {
  EXPECT_EQ((CriStrings{"short"}), CriFrame("short", LineFormat::kAuto));
  LineFramer framer(kDefaultMaxLineBytes, LineFormat::kAuto);
  LineBatch batch;
  framer.Feed(std::string(kTime) + " stdout P Loading", batch);
  framer.FlushPartial(batch);
  EXPECT_EQ(LineFormat::kCri, framer.format());
  EXPECT_THAT(CriLines(batch), ElementsAre("Loading"));
}

// Random records fed in random pieces, stopped anywhere and resumed at resume_point(), give the
// lines of one framer over the whole stream (record_stream_check.h).
TEST(CriFraming, PiecesAndResumesAnywhereFrameEveryMessageOnce) {
  const std::vector<std::string> messages = {
      "", "a", "Traceback", "x\ry", "\x1b[31mred\x1b[0m", "longlonglonglonglong", "\xff"};
  for (const LineFormat format : {LineFormat::kCri, LineFormat::kAuto}) {
    testing::ExpectEveryMessageFramedOnce(
        format, [](const std::string& m, bool partial) { return CriRecord(m, partial); }, messages,
        20261204);
  }
}

TEST(FramingOptions, FormatNamesRoundTrip) {
  for (const LineFormat format :
       {LineFormat::kAuto, LineFormat::kPlain, LineFormat::kCri, LineFormat::kDocker}) {
    EXPECT_EQ(format, ParseLineFormat(LineFormatName(format)));
  }
  EXPECT_EQ(std::nullopt, ParseLineFormat("json"));
  EXPECT_EQ(std::nullopt, ParseLineFormat("CRI"));
}

}  // namespace
}  // namespace faultline
