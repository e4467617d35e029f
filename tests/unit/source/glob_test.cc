#include "agent/source/glob.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace faultline {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

class GlobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("faultline_glob_" + std::string(
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "a" / "b");
    for (const char* f : {"top.log", "top.txt", "a/one.log", "a/b/two.log"}) {
      std::ofstream(root_ / f) << "x\n";
    }
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string P(const std::string& rel) const { return (root_ / rel).string(); }
  fs::path root_;
};

TEST_F(GlobTest, StarMatchesWithinOneFolder) {
  EXPECT_THAT(ExpandGlob(P("*.log")), ElementsAre(P("top.log")));
}

TEST_F(GlobTest, DoubleStarMatchesAnyDepthIncludingNone) {
  EXPECT_THAT(ExpandGlob(P("**/*.log")), ElementsAre(P("a/b/two.log"), P("a/one.log"),
                                                     P("top.log")));
}

TEST_F(GlobTest, UnreadableFolderIsSkippedNotTheEndOfTheWalk) {
  fs::create_directories(root_ / "0locked");
  fs::permissions(root_ / "0locked", fs::perms::none);
  const auto files = ExpandGlob(P("**/*.log"));
  fs::permissions(root_ / "0locked", fs::perms::owner_all);
  // As root the folder may still be readable; either way the others are all found.
  EXPECT_THAT(files, ::testing::IsSupersetOf({P("a/b/two.log"), P("a/one.log"), P("top.log")}));
}

TEST_F(GlobTest, PlainPathMatchesItself) {
  EXPECT_THAT(ExpandGlob(P("top.txt")), ElementsAre(P("top.txt")));
  EXPECT_TRUE(ExpandGlob(P("missing.log")).empty());
}

TEST_F(GlobTest, WatchDirsCoverEveryFolderARecursiveGlobReaches) {
  EXPECT_THAT(GlobWatchDirs(P("**/*.log")), ElementsAre(root_.string(), P("a"), P("a/b")));
  EXPECT_THAT(GlobWatchDirs(P("a/*.log")), ElementsAre(P("a")));
}

}  // namespace
}  // namespace faultline
