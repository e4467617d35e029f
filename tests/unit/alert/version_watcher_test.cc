#include "agent/alert/version_watcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

using Hit = VersionWatcher::Hit;

// The shipped version files and one rule with resolved_by.
std::unique_ptr<VersionWatcher> PackWatcher() {
  Result<std::vector<VersionPattern>> versions =
      LoadVersionPatterns({std::string(FAULTLINE_SOURCE_DIR) + "/rules"});
  EXPECT_TRUE(versions.ok()) << (versions.ok() ? "" : FormatErrors(versions.errors()));
  Rule rule;
  rule.id = "deepspeed.async_io.windows_link";
  rule.resolved_by = {R"(async_io \.+ \[OKAY\])"};
  Result<std::unique_ptr<VersionWatcher>> watcher = VersionWatcher::Build(versions.value(), {rule});
  EXPECT_TRUE(watcher.ok());
  return std::move(watcher).value();
}

std::vector<Hit> Scan(const VersionWatcher& w, const std::vector<std::string>& lines) {
  LineBatch batch;
  for (const std::string& l : lines) batch.Append(l);
  std::vector<Hit> hits;
  w.Scan(batch, 101, &hits);
  return hits;
}

std::vector<std::string> Versions(const std::vector<Hit>& hits) {
  std::vector<std::string> out;
  for (const Hit& h : hits) {
    if (h.kind == Hit::Kind::kVersion) {
      out.push_back(std::to_string(h.line_number) + " " + h.package + " " + h.version);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(VersionWatcherTest, LearnsVersionsFromTheLinesToolsPrint) {
  const auto w = PackWatcher();
  const std::vector<std::string> lines = {
      "Collecting deepspeed==0.15.1",
      "  Downloading deepspeed-0.14.2.tar.gz (1.3 MB)",
      "Successfully installed deepspeed-0.14.2 hjson-3.1.0 nvidia-cublas-cu12-12.1.3.1 "
      "torch-2.3.1+cu121",
      "deepspeed info ................... 0.14.2+abc1234, abc1234, master",
      "torch version .................... 2.3.1+cu121",
      "[2024-05-01 10:00:00,123] [INFO] DeepSpeed info: version=0.15.0, git-hash=unknown",
      "Requirement already satisfied: DeepSpeed in ./venv/lib/python3.10/site-packages (0.14.2)",
      "torch 2.3.1+cu121",
      "nothing to see here",
  };
  EXPECT_EQ((std::vector<std::string>{
                "101 deepspeed 0.15.1", "102 deepspeed 0.14.2", "103 deepspeed 0.14.2",
                "103 hjson 3.1.0", "103 nvidia-cublas-cu12 12.1.3.1", "103 torch 2.3.1+cu121",
                "104 deepspeed 0.14.2+abc1234", "105 torch 2.3.1+cu121", "106 deepspeed 0.15.0",
                "107 deepspeed 0.14.2", "108 torch 2.3.1+cu121"}),
            Versions(Scan(*w, lines)));
}

TEST(VersionWatcherTest, ResolvedByLinesNameTheirRule) {
  const auto w = PackWatcher();
  const std::vector<Hit> hits = Scan(*w, {"x", "async_io ............. [OKAY]", "y"});
  ASSERT_EQ(1u, hits.size());
  EXPECT_EQ(Hit::Kind::kResolved, hits[0].kind);
  EXPECT_EQ(102u, hits[0].line_number);
  EXPECT_EQ("deepspeed.async_io.windows_link", hits[0].rule_id);
}

TEST(VersionWatcherTest, ABatchWithoutAnyPatternGivesNothing) {
  const auto w = PackWatcher();
  EXPECT_TRUE(Scan(*w, {"epoch 1 loss 0.5", "LNK1181 aio.lib"}).empty());
}

TEST(VersionWatcherTest, BadPatternFilesAreReportedWithFileLineAndKey) {
  Result<std::vector<VersionPattern>> r = ParseVersionPatterns(
      "- id: a\n  match: '(unclosed'\n- id: b\n  match: 'no groups'\n- id: c\n  mtach: x\n",
      "my.versions.yaml");
  ASSERT_FALSE(r.ok());
  const std::string errors = FormatErrors(r.errors());
  EXPECT_NE(errors.find("my.versions.yaml:2"), std::string::npos) << errors;
  EXPECT_NE(errors.find("missing )"), std::string::npos) << errors;
  EXPECT_NE(errors.find("(?P<version>"), std::string::npos) << errors;
  EXPECT_NE(errors.find("[2].mtach"), std::string::npos) << errors;
}

// The versions file is read by the loaders' one field reader (core/yaml_fields.h): the same
// messages, lines and key paths as a config or rule file.
TEST(VersionWatcherTest, VersionFilesReportKeysAsTheOtherLoadersDo) {
  Result<std::vector<VersionPattern>> r = ParseVersionPatterns(
      "- id: a\n  match: 'v(?P<version>\\S+)'\n  package: p\n  pakage: q\n"
      "- id: b\n  match: 'v(?P<version>\\S+)'\n  package: p\n  package: q\n"
      "- id: c\n  match: [x]\n- just a string\n",
      "my.versions.yaml");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(4u, r.errors().size()) << FormatErrors(r.errors());
  EXPECT_EQ("my.versions.yaml:4: key '[0].pakage': unknown key; allowed here: id, match, each, "
            "package",
            r.errors()[0].ToString());
  EXPECT_EQ(8, r.errors()[1].line);
  EXPECT_EQ("duplicate key; first set on line 7", r.errors()[1].message);
  EXPECT_EQ("[2].match", r.errors()[2].key);
  EXPECT_EQ("expected a single value, got a list", r.errors()[2].message);
  EXPECT_EQ("[3]", r.errors()[3].key);
  EXPECT_EQ("expected a map, got a single value", r.errors()[3].message);
}

TEST(VersionWatcherTest, RuleLoadsSkipVersionFiles) {
  EXPECT_TRUE(IsVersionPatternFile("rules/versions/python.versions.yaml"));
  EXPECT_FALSE(IsVersionPatternFile("rules/deepspeed/async_io_windows_link.yaml"));
  EXPECT_EQ("deep-speed", NormalizePackageName("Deep__Speed"));
  EXPECT_EQ("nvidia-cublas-cu12", NormalizePackageName("nvidia_cublas.cu12"));
}

}  // namespace
}  // namespace faultline
