#include "agent/core/clock.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

TEST(Clock, UnixMillisecondsRoundTrip) {
  EXPECT_EQ(0, UnixMs(FromUnixMs(0)));
  EXPECT_EQ(1'700'000'000'123, UnixMs(FromUnixMs(1'700'000'000'123)));
  EXPECT_EQ(std::chrono::seconds(1'700'000'000), FromUnixMs(1'700'000'000'000).time_since_epoch());
}

TEST(Clock, UnixMsDropsWhatIsFinerThanAMillisecond) {
  const WallTime t = FromUnixMs(42) + std::chrono::microseconds(999);
  EXPECT_EQ(42, UnixMs(t));
}

TEST(Clock, SystemNowIsTheSystemClock) {
  const WallTime before = std::chrono::system_clock::now();
  const WallTime now = SystemNow();
  EXPECT_LE(before, now);
  EXPECT_LE(now, std::chrono::system_clock::now());
}

}  // namespace
}  // namespace faultline
