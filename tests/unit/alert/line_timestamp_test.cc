#include "agent/alert/line_timestamp.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace faultline {
namespace {

constexpr int64_t kLineNow = 1790769605000;  // 2026-09-30T12:00:05Z

TEST(LineTimestampTest, IsoWithOffsetsAndFractions) {
  EXPECT_EQ(1790769602000, ParseLineTimestamp("2026-09-30T12:00:02Z error", kLineNow));
  EXPECT_EQ(1790769602123, ParseLineTimestamp("2026-09-30T12:00:02.123Z error", kLineNow));
  EXPECT_EQ(1790769602000 - 2 * 3600 * 1000,
            ParseLineTimestamp("2026-09-30T12:00:02+02:00 x", kLineNow));
  EXPECT_EQ(1790769602000 + 3600 * 1000, ParseLineTimestamp("2026-09-30T12:00:02-0100 x", kLineNow));
  EXPECT_EQ(1790769602000, ParseLineTimestamp("[rank0]: 2026-09-30 12:00:02Z LNK1181", kLineNow));
}

TEST(LineTimestampTest, NoOffsetMeansLocalTime) {
  setenv("TZ", "Europe/Berlin", 1);
  tzset();
  // Berlin is UTC+2 at the end of September.
  EXPECT_EQ(1790769602000 - 2 * 3600 * 1000,
            ParseLineTimestamp("[2026-09-30 12:00:02,000] [INFO] [logging.py:96]", kLineNow));
  setenv("TZ", "UTC", 1);
  tzset();
  EXPECT_EQ(1790769602500, ParseLineTimestamp("2026/09/30 12:00:02.5 w", kLineNow));
}

TEST(LineTimestampTest, SyslogTakesTheCurrentYearUnlessThatIsTheFuture) {
  setenv("TZ", "UTC", 1);
  tzset();
  EXPECT_EQ(1790769602000, ParseLineTimestamp("Sep 30 12:00:02 node7 kernel: NVRM: Xid", kLineNow));
  // In late September, "Dec 31" is last year's.
  const auto last_year = ParseLineTimestamp("Dec 31 23:59:59 node7 x", kLineNow);
  ASSERT_TRUE(last_year.has_value());
  EXPECT_LT(*last_year, kLineNow);
  EXPECT_GT(*last_year, kLineNow - 300LL * 24 * 3600 * 1000);
}

TEST(LineTimestampTest, LinesWithoutTimestampsOrWithImpossibleOnes) {
  EXPECT_FALSE(ParseLineTimestamp("LINK : fatal error LNK1181", kLineNow).has_value());
  EXPECT_FALSE(ParseLineTimestamp("2026-13-30T12:00:02Z", kLineNow).has_value());
  EXPECT_FALSE(ParseLineTimestamp("2026-09-30T25:00:02Z", kLineNow).has_value());
  EXPECT_FALSE(ParseLineTimestamp("version 12026-09-30T12:00:02Z", kLineNow).has_value());
  EXPECT_FALSE(ParseLineTimestamp(std::string(80, 'x') + "2026-09-30T12:00:02Z", kLineNow).has_value());
}

}  // namespace
}  // namespace faultline
