// Docker's json-file log records: the decoder (docker_json_record.h) and the framer reading them
// as the lines a program printed (line_framer.h), in the docker and auto formats. Records are
// written by nlohmann::json, as an independent JSON writer stands in for Docker's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/framing/docker_json_record.h"
#include "agent/framing/framing_options.h"
#include "agent/framing/line_framer.h"
#include "tests/unit/framing/record_stream_check.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;
using DockerStrings = std::vector<std::string>;

// One record as the json-file driver writes it: "log" first, then "stream" and "time".
std::string DockerRecord(const std::string& log, std::string_view stream = "stderr") {
  nlohmann::ordered_json record;
  record["log"] = log;
  record["stream"] = stream;
  record["time"] = "2024-05-01T12:00:00.123456789Z";
  return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

DockerStrings DockerLines(const LineBatch& batch) {
  DockerStrings out;
  for (size_t i = 0; i < batch.size(); ++i) out.emplace_back(batch.line(i));
  return out;
}

DockerStrings DockerFrame(std::string_view bytes, LineFormat format = LineFormat::kDocker,
                          size_t max = kDefaultMaxLineBytes) {
  LineFramer framer(max, format);
  LineBatch batch;
  framer.Feed(bytes, batch);
  framer.Finish(batch);
  return DockerLines(batch);
}

// Decodes one record (without its "\n") with the decoder alone.
std::pair<std::string, bool> Decode(std::string_view record) {
  DockerJsonRecord decoder;
  decoder.Begin();
  std::string out;
  decoder.Feed(record, out);
  const bool ended = decoder.End(out);
  return {out, ended};
}

TEST(DockerJsonRecord, TheLogStringIsTheMessageAndItsNewlineEndsIt) {
  EXPECT_EQ(
      std::make_pair(std::string("Traceback (most recent call last):"), true),
      Decode(R"({"log":"Traceback (most recent call last):\n","stream":"stderr","time":"t"})"));
  // Split by the driver: no "\n", the next record goes on.
  EXPECT_EQ(std::make_pair(std::string("RuntimeError: CUDA out"), false),
            Decode(R"({"log":"RuntimeError: CUDA out","stream":"stderr","time":"t"})"));
  EXPECT_EQ(std::make_pair(std::string("dir C:\\build"), true),
            Decode(R"({"log":"dir C:\\build\r\n","stream":"stdout","time":"t"})"));
}

TEST(DockerJsonRecord, EscapesAreDecoded) {
  EXPECT_EQ("\"q\" \\ / \t \x1b[31mred \xc3\xa9 \xf0\x9f\x98\x80 \x7f",
            Decode(R"({"log":"\"q\" \\ \/ \t \u001b[31mred \u00e9 \ud83d\ude00 \u007f\n"})").first);
  // A lone surrogate half, or a broken \u, is replaced rather than passed on as invalid UTF-8.
  EXPECT_EQ(
      "a\xef\xbf\xbd"
      "b",
      Decode(R"({"log":"a\ud83db\n"})").first);
  EXPECT_EQ(
      "a\xef\xbf\xbd"
      "b",
      Decode(R"({"log":"a\ude00b\n"})").first);
  EXPECT_EQ("a\xef\xbf\xbdzz", Decode(R"({"log":"a\u12zz\n"})").first);
  // A newline the driver would never leave inside a line keeps the message one line.
  EXPECT_EQ("one two three", Decode(R"({"log":"one\ntwo\r\nthree\n"})").first);
  EXPECT_EQ("10%\r100%", Decode(R"({"log":"10%\r100%\n"})").first);
}

TEST(DockerJsonRecord, WhatIsNotARecordIsKeptAsItIs) {
  EXPECT_EQ(std::make_pair(std::string("plain text"), true), Decode("plain text"));
  EXPECT_EQ(std::make_pair(std::string("{\"lo"), true), Decode("{\"lo"));
  EXPECT_EQ(std::make_pair(std::string("{\"level\":\"error\"}"), true),
            Decode("{\"level\":\"error\"}"));
  // Cut inside its string: what it holds is the message.
  EXPECT_EQ(std::make_pair(std::string("cut"), true), Decode(R"({"log":"cut)"));
}

TEST(DockerFraming, RecordsAreTheLinesTheProgramPrintedAndBeginWhereTheirRecordBegins) {
  const std::string a = DockerRecord("Traceback (most recent call last):\n");
  const std::string b = DockerRecord("\x1b[31mValueError: bad input\x1b[0m\n", "stdout");
  LineFramer framer(kDefaultMaxLineBytes, LineFormat::kDocker);
  LineBatch batch;
  framer.Feed(a + b, batch);
  framer.Finish(batch);
  EXPECT_THAT(DockerLines(batch),
              ElementsAre("Traceback (most recent call last):", "ValueError: bad input"));
  EXPECT_EQ(0u, batch.stream_begin(0));
  EXPECT_EQ(a.size(), batch.stream_begin(1));
}

TEST(DockerFraming, ALineTheDriverSplitIsJoinedAndCutOnceOverTheLimit) {
  const std::string split = DockerRecord("RuntimeError: CUDA out") + DockerRecord(" of memory.") +
                            DockerRecord(" Tried to allocate 2.00 GiB\n") + DockerRecord("next\n");
  EXPECT_EQ((DockerStrings{"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", "next"}),
            DockerFrame(split));
  LineFramer framer(16, LineFormat::kDocker);
  LineBatch batch;
  framer.Feed(DockerRecord("0123456789") + DockerRecord("abcdefghij") + DockerRecord("KLM\n") +
                  DockerRecord("after\n"),
              batch);
  framer.Finish(batch);
  EXPECT_THAT(DockerLines(batch), ElementsAre("0123456789abcdef", "after"));
  EXPECT_EQ(1u, framer.truncated_lines());
}

TEST(DockerFraming, AHugeRecordIsCutAtTheLimitAndTheNextOneRead) {
  constexpr size_t kMax = 4096;
  LineFramer framer(kMax, LineFormat::kDocker);
  LineBatch batch;
  framer.Feed(DockerRecord(std::string(8 << 20, 'x') + "\n") + DockerRecord("after\n"), batch);
  framer.Finish(batch);
  ASSERT_EQ(2u, batch.size());
  EXPECT_EQ(kMax, batch.line(0).size());
  EXPECT_EQ("after", batch.line(1));
}

TEST(DockerFraming, AFlushedMessageIsALineOnceAndTheRestOfItIsSkipped) {
  LineFramer framer(kDefaultMaxLineBytes, LineFormat::kDocker);
  LineBatch batch;
  framer.Feed(DockerRecord("Killed by"), batch);
  EXPECT_TRUE(framer.has_partial());
  framer.FlushPartial(batch);
  EXPECT_FALSE(framer.has_partial());
  framer.Feed(DockerRecord(" signal 9\n") + DockerRecord("next\n"), batch);
  framer.Finish(batch);
  EXPECT_THAT(DockerLines(batch), ElementsAre("Killed by", "next"));
}

TEST(DockerFraming, AutoReadsADockerLogAsDockerAndAJsonAppLogAsPlain) {
  LineFramer docker(kDefaultMaxLineBytes, LineFormat::kAuto);
  LineBatch batch;
  docker.Feed(DockerRecord("a\n") + "not a record\n" + DockerRecord("b\n"), batch);
  EXPECT_EQ(LineFormat::kDocker, docker.format());
  EXPECT_THAT(DockerLines(batch), ElementsAre("a", "not a record", "b"));
  // An application's own JSON lines are not Docker records: they stay as they are.
  EXPECT_EQ((DockerStrings{R"({"level":"error","msg":"x"})"}),
            DockerFrame(R"({"level":"error","msg":"x"})"
                        "\n",
                        LineFormat::kAuto));
}

// Random records fed in random pieces, stopped anywhere and resumed at resume_point(), give the
// lines of one framer over the whole stream (record_stream_check.h).
TEST(DockerFraming, PiecesAndResumesAnywhereFrameEveryMessageOnce) {
  const std::vector<std::string> messages = {"",
                                             "a",
                                             "Traceback",
                                             "x\ry",
                                             "\x1b[31mred\x1b[0m",
                                             "long long long long",
                                             "\"q\\\"",
                                             "\xc3\xa9\t\x01"};
  for (const LineFormat format : {LineFormat::kDocker, LineFormat::kAuto}) {
    testing::ExpectEveryMessageFramedOnce(
        format,
        [](const std::string& m, bool partial) { return DockerRecord(partial ? m : m + "\n"); },
        messages, 20261205);
  }
}

}  // namespace
}  // namespace faultline
