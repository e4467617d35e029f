#include "agent/source/line_times.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

TEST(LineTimesTest, ALineHasTheTimeOfTheRunItIsIn) {
  LineTimes times;
  EXPECT_EQ(std::nullopt, times.At(1));
  times.Begin(1, 1000);
  times.Begin(3, 1000);  // the same time: the run goes on
  times.Begin(5, std::nullopt);
  times.Begin(6, 2000);
  EXPECT_EQ(3u, times.runs());
  EXPECT_EQ(1000, times.At(1));
  EXPECT_EQ(1000, times.At(4));
  EXPECT_EQ(std::nullopt, times.At(5));
  EXPECT_EQ(2000, times.At(6));
  EXPECT_EQ(2000, times.At(100));  // the last run lasts until the next one
  times.Clear();
  EXPECT_TRUE(times.empty());
  EXPECT_EQ(std::nullopt, times.At(6));
}

TEST(LineTimesTest, ARunThatHeldNoLineIsReplaced) {
  LineTimes times;
  times.Begin(1, 1000);
  times.Begin(1, 2000);
  EXPECT_EQ(1u, times.runs());
  EXPECT_EQ(2000, times.At(1));
  // Before any run, a line without a time costs nothing.
  LineTimes none;
  none.Begin(1, std::nullopt);
  EXPECT_TRUE(none.empty());
}

TEST(LineTimesTest, BeyondMaxRunsTheOldestHalfIsForgotten) {
  LineTimes times;
  for (uint64_t line = 1; line <= LineTimes::kMaxRuns + 1; ++line) {
    times.Begin(line, static_cast<int64_t>(line) * 1000);
  }
  EXPECT_EQ(LineTimes::kMaxRuns / 2 + 1, times.runs());
  EXPECT_EQ(std::nullopt, times.At(LineTimes::kMaxRuns / 2));
  EXPECT_EQ(static_cast<int64_t>(LineTimes::kMaxRuns / 2 + 1) * 1000,
            times.At(LineTimes::kMaxRuns / 2 + 1));
  EXPECT_EQ(static_cast<int64_t>(LineTimes::kMaxRuns + 1) * 1000,
            times.At(LineTimes::kMaxRuns + 1));
}

}  // namespace
}  // namespace faultline
