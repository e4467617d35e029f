// ExpectEveryMessageFramedOnce: the property both container record formats (CRI, Docker) must
// have, checked on random streams: records of random messages, some split over several records,
// fed in random pieces, stopped anywhere and resumed at resume_point(), give exactly the lines of
// one framer over the whole stream, each beginning at a record's start, and the same cut count.
// Test-only; gtest assertions; single-threaded.
#ifndef FAULTLINE_TESTS_UNIT_FRAMING_RECORD_STREAM_CHECK_H_
#define FAULTLINE_TESTS_UNIT_FRAMING_RECORD_STREAM_CHECK_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "agent/framing/framing_options.h"
#include "agent/framing/line_framer.h"

namespace faultline::testing {

// `record(message, partial)`: one record holding `message`, whose message goes on in the next
// record when `partial`.
using RecordWriter = std::function<std::string(const std::string& message, bool partial)>;

inline std::vector<std::string> FramedLines(const LineBatch& batch) {
  std::vector<std::string> out;
  for (size_t i = 0; i < batch.size(); ++i) out.emplace_back(batch.line(i));
  return out;
}

inline void ExpectEveryMessageFramedOnce(LineFormat format, const RecordWriter& record,
                                         const std::vector<std::string>& messages,
                                         uint32_t seed) {
  std::mt19937 rng(seed);
  constexpr size_t kMaxLine = 12;
  const auto feed_in_pieces = [&rng](LineFramer& framer, std::string_view bytes,
                                     LineBatch& batch) {
    while (!bytes.empty()) {
      const size_t n = std::uniform_int_distribution<size_t>(0, 40)(rng);
      framer.Feed(bytes.substr(0, n), batch);
      bytes.remove_prefix(std::min(n, bytes.size()));
    }
  };
  for (int round = 0; round < 2000; ++round) {
    std::string stream;
    std::vector<uint64_t> record_starts;
    const int n = std::uniform_int_distribution<int>(1, 12)(rng);
    for (int i = 0; i < n; ++i) {
      record_starts.push_back(stream.size());
      const bool partial = i + 1 < n && std::uniform_int_distribution<int>(0, 2)(rng) == 0;
      stream += record(
          messages[std::uniform_int_distribution<size_t>(0, messages.size() - 1)(rng)], partial);
    }
    LineFramer whole(kMaxLine, format);
    LineBatch expected;
    whole.Feed(stream, expected);
    whole.Finish(expected);
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_THAT(record_starts, ::testing::Contains(expected.stream_begin(i)));
    }

    const size_t stop = std::uniform_int_distribution<size_t>(0, stream.size())(rng);
    LineFramer first(kMaxLine, format);
    LineBatch got;
    feed_in_pieces(first, std::string_view(stream).substr(0, stop), got);
    const FramerPosition at = first.resume_point();
    ASSERT_LE(at.offset, stop);
    LineFramer second(kMaxLine, format);
    second.Resume(at);
    feed_in_pieces(second, std::string_view(stream).substr(at.offset), got);
    second.Finish(got);
    ASSERT_EQ(FramedLines(expected), FramedLines(got))
        << "format " << LineFormatName(format) << " round " << round << " stop " << stop;
    ASSERT_EQ(whole.truncated_lines(), first.truncated_lines() + second.truncated_lines());
  }
}

}  // namespace faultline::testing

#endif  // FAULTLINE_TESTS_UNIT_FRAMING_RECORD_STREAM_CHECK_H_
