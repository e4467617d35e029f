#include "agent/source/rotated_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace faultline {
namespace {

using ::testing::Contains;
using ::testing::IsEmpty;

TEST(ExcludeListTest, MatchesTheNameOrWithASlashTheWholePath) {
  const ExcludeList exclude({"*.gz", "*.[0-9]", "/var/log/skip/*"});
  EXPECT_TRUE(exclude.Excludes("/var/log/app.log.2.gz"));
  EXPECT_TRUE(exclude.Excludes("/var/log/app.log.1"));
  EXPECT_TRUE(exclude.Excludes("/var/log/skip/app.log"));
  EXPECT_FALSE(exclude.Excludes("/var/log/app.log"));
  EXPECT_FALSE(exclude.Excludes("/var/log/worker.0.log"));
  EXPECT_FALSE(exclude.Excludes("/var/log/skip/deeper/app.log"));
}

TEST(RotatedNamesTest, GlobsThatReachPastTheLiveNameMatchRotatedNames) {
  EXPECT_THAT(RotatedNamesMatchedBy(Glob("/logs/app.log*")), Contains("/logs/app.log.1"));
  EXPECT_THAT(RotatedNamesMatchedBy(Glob("/logs/app.log*")), Contains("/logs/app.log.1.gz"));
  EXPECT_THAT(RotatedNamesMatchedBy(Glob("/logs/*")), Contains("/logs/app-20240131"));
  EXPECT_THAT(RotatedNamesMatchedBy(Glob("/pods/*/*/*.log*")),
              Contains("/pods/app/app/app.log.20240131-120000"));
}

TEST(RotatedNamesTest, GlobsOfLiveNamesAndLiteralPathsMatchNone) {
  EXPECT_THAT(RotatedNamesMatchedBy(Glob("/logs/*.log")), IsEmpty());
  EXPECT_THAT(RotatedNamesMatchedBy(Glob("/logs/**/*.log")), IsEmpty());
  EXPECT_THAT(RotatedNamesMatchedBy(Glob("/logs/app.log.1")), IsEmpty());
}

TEST(RotatedNamesTest, RotatedCopiesAreNamedAfterTheirOriginal) {
  EXPECT_TRUE(IsRotatedNameOf("/logs/app.log.1", "/logs/app.log"));
  EXPECT_TRUE(IsRotatedNameOf("/old/app.log-20240131", "/logs/app.log"));
  EXPECT_TRUE(IsRotatedNameOf("/logs/app-20240131.log", "/logs/app.log"));
  EXPECT_TRUE(IsRotatedNameOf("/p/0.log.20240131-120000", "/p/0.log"));
  EXPECT_FALSE(IsRotatedNameOf("/logs/app.log", "/logs/app.log"));
  EXPECT_FALSE(IsRotatedNameOf("/logs/build-124.log", "/logs/build-123.log"));
  EXPECT_FALSE(IsRotatedNameOf("/logs/worker1.log", "/logs/worker0.log"));
  EXPECT_FALSE(IsRotatedNameOf("/logs/app-20240131.txt", "/logs/app.log"));
}

}  // namespace
}  // namespace faultline
