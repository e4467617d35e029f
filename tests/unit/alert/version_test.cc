#include "agent/alert/version.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace faultline {
namespace {

// Checks that `ordered` is strictly increasing under `scheme`, pair by pair and across.
void ExpectStrictlyIncreasing(const std::vector<std::string>& ordered, VersionScheme scheme) {
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    for (std::size_t j = 0; j < ordered.size(); ++j) {
      const auto order = CompareVersions(ordered[i], ordered[j], scheme);
      ASSERT_TRUE(order.has_value()) << ordered[i] << " vs " << ordered[j];
      EXPECT_EQ(i < j, *order == std::strong_ordering::less) << ordered[i] << " vs " << ordered[j];
      EXPECT_EQ(i == j, *order == std::strong_ordering::equal) << ordered[i] << " vs " << ordered[j];
    }
  }
}

TEST(VersionTest, Pep440OrdersAsPackagingDoes) {
  // The ordering example of PEP 440 ("Summary of permitted suffixes and relative ordering").
  ExpectStrictlyIncreasing({"1.0.dev456", "1.0a1", "1.0a2.dev456", "1.0a12.dev456", "1.0a12",
                            "1.0b1.dev456", "1.0b2", "1.0b2.post345.dev456", "1.0b2.post345",
                            "1.0rc1.dev456", "1.0rc1", "1.0", "1.0+abc.5", "1.0+abc.7", "1.0+5",
                            "1.0.post456.dev34", "1.0.post456", "1.0.15", "1.1.dev1"},
                           VersionScheme::kPep440);
}

TEST(VersionTest, LocalVersionsAndReleaseCandidatesOfRealPackages) {
  EXPECT_TRUE(IsNewerVersion("0.14.0+cu121", "0.14.0"));
  EXPECT_TRUE(IsNewerVersion("0.14.1", "0.14.0+cu121"));
  EXPECT_TRUE(IsNewerVersion("2.3.1+cu121", "2.3.0+cu121"));
  EXPECT_TRUE(IsNewerVersion("0.15.0", "0.15.0rc1"));
  EXPECT_TRUE(IsNewerVersion("0.15.0rc1", "0.14.2"));
  EXPECT_TRUE(IsNewerVersion("0.15.1", "0.15.0"));
  EXPECT_FALSE(IsNewerVersion("0.14.2", "0.15.0"));
}

TEST(VersionTest, Pep440SpellingsNormalise) {
  for (const char* same : {"0.15.0rc1", "0.15.0-rc.1", "0.15.0RC1", "0.15.0c1", "v0.15.0rc1",
                           "0.15.0.rc1", "0.15.0_rc_1", "0.15rc1", " 0.15.0rc1 "}) {
    EXPECT_EQ(CompareVersions(same, "0.15.0rc1"), std::strong_ordering::equal) << same;
  }
  EXPECT_EQ(CompareVersions("1.0", "1.0.0.0"), std::strong_ordering::equal);
  EXPECT_EQ(CompareVersions("1.0alpha2", "1.0a2"), std::strong_ordering::equal);
  EXPECT_EQ(CompareVersions("1.0-1", "1.0.post1"), std::strong_ordering::equal);
  EXPECT_EQ(CompareVersions("1.0.r1", "1.0.post1"), std::strong_ordering::equal);
  EXPECT_EQ(CompareVersions("1!0.1", "1!0.1.0"), std::strong_ordering::equal);
  EXPECT_TRUE(IsNewerVersion("1!0.1", "2.0"));  // the epoch wins
}

TEST(VersionTest, MonotonicBuildNumbersAreOneSegmentReleases) {
  EXPECT_TRUE(IsNewerVersion("4712", "4711"));
  EXPECT_TRUE(IsNewerVersion("10", "9"));
}

TEST(VersionTest, SemverOrdersAsTheSpecDoes) {
  // Semantic Versioning 2.0.0, item 11.
  ExpectStrictlyIncreasing({"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
                            "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1",
                            "1.1.0", "2.0.0"},
                           VersionScheme::kSemver);
  EXPECT_EQ(CompareVersions("1.0.0+build.1", "1.0.0+build.2", VersionScheme::kSemver),
            std::strong_ordering::equal);
}

TEST(VersionTest, AutoFallsBackToSemverForWhatPep440DoesNotTake) {
  EXPECT_FALSE(IsVersion("1.0.0-alpha.beta", VersionScheme::kPep440));
  EXPECT_TRUE(IsVersion("1.0.0-alpha.beta"));
  EXPECT_TRUE(IsNewerVersion("1.0.0-beta", "1.0.0-alpha.beta"));
  // PEP 440 first: for a Python package, "-1" is a post-release, newer than the release.
  EXPECT_TRUE(IsNewerVersion("1.0.0-1", "1.0.0"));
  EXPECT_TRUE(IsNewerVersion("1.0.0", "1.0.0-1", VersionScheme::kSemver));
}

TEST(VersionTest, UnparseableVersionsAreNeverNewerNorOlder) {
  for (const char* odd : {"unknown", "abc1234f", "", "1.0.0.", "1..0", "master",
                          "1.0+", "99999999999999999999.0"}) {
    EXPECT_FALSE(CompareVersions(odd, "1.0").has_value()) << odd;
    EXPECT_FALSE(IsNewerVersion(odd, "1.0")) << odd;
    EXPECT_FALSE(IsNewerVersion("1.0", odd)) << odd;
  }
  EXPECT_FALSE(IsVersion("unknown"));
}

}  // namespace
}  // namespace faultline
