// The one definition of a rule-pack file (ClassifyRulePackFile): what the rule load reads, what
// the versions load reads, and what reload.watch reacts to.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

TEST(RulePackFile, ClassifiesByName) {
  EXPECT_EQ(RulePackFile::kRules, ClassifyRulePackFile("rules/deepspeed/aio.yaml"));
  EXPECT_EQ(RulePackFile::kRules, ClassifyRulePackFile("aio.yml"));
  EXPECT_EQ(RulePackFile::kRules, ClassifyRulePackFile("rules/.hidden.yaml"));
  EXPECT_EQ(RulePackFile::kVersionPatterns,
            ClassifyRulePackFile("rules/versions/python.versions.yaml"));
  EXPECT_EQ(RulePackFile::kVersionPatterns, ClassifyRulePackFile("python.versions.yml"));
  EXPECT_EQ(RulePackFile::kOther, ClassifyRulePackFile("rules/.aio.yaml.swp"));
  EXPECT_EQ(RulePackFile::kOther, ClassifyRulePackFile("rules/README.md"));
  EXPECT_EQ(RulePackFile::kOther, ClassifyRulePackFile("rules/4913"));   // vim's write test
  EXPECT_EQ(RulePackFile::kOther, ClassifyRulePackFile("rules/.yaml"));  // no name before it
  EXPECT_EQ(RulePackFile::kOther, ClassifyRulePackFile("rules.yaml/README"));
}

TEST(RulePackFile, TheLoadReadsRuleFilesOnly) {
  std::string pattern = (fs::path(::testing::TempDir()) / "rule_pack_file_XXXXXX").string();
  ASSERT_NE(nullptr, mkdtemp(pattern.data()));
  const fs::path dir = pattern;
  const std::string rule =
      "id: t.{}\ntitle: t\nseverity: error\ncategory: memory\nmatch: ['x']\n"
      "root_cause: r\nfix: f\n";
  const auto write = [&](const std::string& name, const std::string& id) {
    std::string text = rule;
    text.replace(text.find("{}"), 2, id);
    std::ofstream(dir / name) << text;
  };
  write("a.yaml", "a");
  write("b.yml", "b");
  write("c.yaml.swp", "c");       // not read: would be a rule if it were
  write("d.versions.yaml", "d");  // not read as rules: not a rule document either
  Result<std::vector<Rule>> rules = LoadRules({dir.string()});
  fs::remove_all(dir);
  ASSERT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  ASSERT_EQ(2u, rules.value().size());
  EXPECT_EQ("t.a", rules.value()[0].id);
  EXPECT_EQ("t.b", rules.value()[1].id);
}

}  // namespace
}  // namespace faultline
