#include "agent/source/glob.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace faultline {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using FolderMatch = Glob::FolderMatch;

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
  std::vector<std::string> Expand(const std::string& rel) const { return ExpandGlob(Glob(P(rel))); }
  fs::path root_;
};

TEST_F(GlobTest, StarMatchesWithinOneFolder) {
  EXPECT_THAT(Expand("*.log"), ElementsAre(P("top.log")));
}

TEST_F(GlobTest, DoubleStarMatchesAnyDepthIncludingNone) {
  EXPECT_THAT(Expand("**/*.log"), ElementsAre(P("a/b/two.log"), P("a/one.log"), P("top.log")));
  EXPECT_THAT(Expand("**"), ElementsAre(P("a/b/two.log"), P("a/one.log"), P("top.log"),
                                        P("top.txt")));
}

TEST_F(GlobTest, UnreadableFolderIsSkippedNotTheEndOfTheWalk) {
  fs::create_directories(root_ / "0locked");
  fs::permissions(root_ / "0locked", fs::perms::none);
  const auto files = Expand("**/*.log");
  fs::permissions(root_ / "0locked", fs::perms::owner_all);
  // As root the folder may still be readable; either way the others are all found.
  EXPECT_THAT(files, ::testing::IsSupersetOf({P("a/b/two.log"), P("a/one.log"), P("top.log")}));
}

TEST_F(GlobTest, PlainPathMatchesItself) {
  EXPECT_THAT(Expand("top.txt"), ElementsAre(P("top.txt")));
  EXPECT_TRUE(Expand("missing.log").empty());
  const Glob literal(P("top.txt"));
  EXPECT_TRUE(literal.literal());
  EXPECT_EQ(root_.string(), literal.root());
  EXPECT_TRUE(literal.Matches(P("top.txt")));
  EXPECT_FALSE(literal.Matches(P("top.txt.1")));
}

TEST_F(GlobTest, RootIsTheLiteralFolderBeforeTheFirstWildcard) {
  EXPECT_EQ(root_.string(), Glob(P("*/logs/*.log")).root());
  EXPECT_EQ(P("a"), Glob(P("a/**/*.log")).root());
  EXPECT_EQ(".", Glob("*.log").root());
}

TEST_F(GlobTest, MatchesNamesWithoutTouchingTheFileSystem) {
  const Glob glob(P("pods/*/*/*.log"));
  EXPECT_TRUE(glob.Matches(P("pods/uid/c/0.log")));
  EXPECT_FALSE(glob.Matches(P("pods/uid/0.log")));
  EXPECT_FALSE(glob.Matches(P("pods/uid/c/d/0.log")));
  EXPECT_FALSE(glob.Matches(P("pods/uid/c/.hidden.log")));
  EXPECT_FALSE(glob.Matches(P("other/uid/c/0.log")));
  const Glob recursive(P("**/*.log"));
  EXPECT_TRUE(recursive.Matches(P("x.log")));
  EXPECT_TRUE(recursive.Matches(P("a/b/c/x.log")));
  EXPECT_FALSE(recursive.Matches(P("a/.git/x.log")));
  EXPECT_FALSE(recursive.Matches(P("a/b/c/x.txt")));
}

TEST_F(GlobTest, FolderMatchSaysWhereMatchesCanLie) {
  const Glob glob(P("pods/*/*/*.log"));
  EXPECT_EQ(FolderMatch::kExplicit, glob.MatchFolder(P("pods")));
  EXPECT_EQ(FolderMatch::kExplicit, glob.MatchFolder(P("pods/uid")));
  EXPECT_EQ(FolderMatch::kExplicit, glob.MatchFolder(P("pods/uid/c")));
  EXPECT_EQ(FolderMatch::kNo, glob.MatchFolder(P("pods/uid/c/d")));
  EXPECT_EQ(FolderMatch::kNo, glob.MatchFolder(P("other")));
  const Glob recursive(P("a/**/*.log"));
  EXPECT_EQ(FolderMatch::kExplicit, recursive.MatchFolder(P("a")));
  EXPECT_EQ(FolderMatch::kUnderDoubleStar, recursive.MatchFolder(P("a/b/c")));
  EXPECT_EQ(FolderMatch::kNo, recursive.MatchFolder(P("a/.cache")));
}

TEST_F(GlobTest, WalkReportsEveryFolderThatCanHoldMatches) {
  std::vector<std::string> folders;
  std::vector<std::string> files;
  WalkGlob(
      Glob(P("**/*.log")), root_.string(),
      [&](const std::string& dir) {
        folders.push_back(dir);
        return true;
      },
      [&](const std::string& path) { files.push_back(path); });
  std::sort(folders.begin(), folders.end());
  EXPECT_THAT(folders, ElementsAre(P("a"), P("a/b")));
  EXPECT_EQ(3u, files.size());
}

TEST_F(GlobTest, LinksToFilesMatchAndLinksToFoldersAreFollowedOnlyAtExplicitLevels) {
  fs::create_symlink(root_ / "a" / "one.log", root_ / "link.log");
  fs::create_symlink(root_ / "missing" / "0.log", root_ / "dangling.log");
  fs::create_directories(root_ / "c");
  fs::create_directory_symlink(root_ / "a", root_ / "c" / "loop");
  EXPECT_THAT(Expand("*.log"), ElementsAre(P("dangling.log"), P("link.log"), P("top.log")));
  EXPECT_THAT(Expand("c/*/*.log"), ElementsAre(P("c/loop/one.log")));
  // Under `**` a link to a folder is not followed: c/loop/one.log would be a.log read twice.
  EXPECT_THAT(Expand("c/**/*.log"), ElementsAre());
}

}  // namespace
}  // namespace faultline
