#include "agent/rules/rule_loader.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace faultline {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

constexpr char kValid[] = R"(id: deepspeed.async_io.windows_link
title: DeepSpeed async_io cannot link aio.lib
severity: error
category: build
tags: [deepspeed, windows]
match:
  - 'LNK1181\b.*\baio\.lib\b'
  - sequence: ['NVRM: The NVIDIA GPU', 'fallen off the bus']
    within_lines: 3
context:
  within_lines: 100
  requires_any: ['Unable to pre-compile async_io']
  unconfirmed_severity: warning
  downgrade_if_followed_by: ['Successfully installed deepspeed']
labels:
  lib: '(\w+)\.lib'
max_label_values: 5
resolved_by: ['async_io \.+ \[OKAY\]']
root_cause: async_io needs libaio, which exists only on Linux.
fix: Build with DS_BUILD_AIO=0.
fix_command: DS_BUILD_AIO=0 pip install deepspeed
references: [https://github.com/deepspeedai/DeepSpeed/issues/1]
examples:
  match: ["LINK : fatal error LNK1181: cannot open input file 'aio.lib'"]
  no_match: ["async_io ..... [OKAY]"]
)";

TEST(ParseRules, LoadsEveryKey) {
  Result<std::vector<Rule>> rules = ParseRules(kValid, "pack/aio.yaml");
  ASSERT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  ASSERT_THAT(rules.value(), SizeIs(1));
  const Rule& r = rules.value()[0];
  EXPECT_EQ("deepspeed.async_io.windows_link", r.id);
  EXPECT_EQ(Severity::kError, r.severity);
  EXPECT_EQ("build", r.category);
  EXPECT_THAT(r.match_lines, SizeIs(1));
  ASSERT_THAT(r.sequences, SizeIs(1));
  EXPECT_EQ(3, r.sequences[0].within_lines);
  ASSERT_TRUE(r.context.has_value());
  EXPECT_EQ(100, r.context->within_lines);
  EXPECT_EQ(Severity::kWarning, r.context->unconfirmed_severity);
  ASSERT_THAT(r.labels, SizeIs(1));
  EXPECT_EQ("lib", r.labels[0].name);
  EXPECT_EQ(5, r.max_label_values);
  EXPECT_EQ("DS_BUILD_AIO=0 pip install deepspeed", r.fix_command);
  EXPECT_EQ(1, r.line);
  EXPECT_EQ("pack/aio.yaml", r.file);
}

TEST(ParseRules, ClassDefaultsToTheIdAndRoleToRoot) {
  Result<std::vector<Rule>> rules = ParseRules(kValid, "pack/aio.yaml");
  ASSERT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  EXPECT_EQ("deepspeed.async_io.windows_link", rules.value()[0].failure_class);
  EXPECT_EQ(RuleRole::kRoot, rules.value()[0].role);
  EXPECT_EQ("", rules.value()[0].verify_command);
}

TEST(ParseRules, ClassVerifyCommandAndConsequences) {
  const std::string yaml = std::string(kValid) +
                           "class: deepspeed.async_io\n"
                           "verify_command: ds_report\n"
                           "consequence_of: [gpu.oom, 'nccl.', 'category:memory']\n"
                           "generic: true\n";
  Result<std::vector<Rule>> rules = ParseRules(yaml, "r.yaml");
  ASSERT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  const Rule& r = rules.value()[0];
  EXPECT_EQ("deepspeed.async_io", r.failure_class);
  EXPECT_EQ("ds_report", r.verify_command);
  EXPECT_EQ(RuleRole::kSymptom, r.role);  // consequence_of implies a symptom
  EXPECT_TRUE(r.generic);
  EXPECT_THAT(r.consequence_of, ::testing::ElementsAre("gpu.oom", "nccl.", "category:memory"));
}

TEST(ParseRules, BadRoleAndConsequenceAreErrorsWithTheirKeys) {
  const std::string yaml = std::string(kValid) + "role: effect\nconsequence_of: ['Not An Id']\n";
  Result<std::vector<Rule>> rules = ParseRules(yaml, "r.yaml");
  ASSERT_FALSE(rules.ok());
  ASSERT_THAT(rules.errors(), SizeIs(2));
  EXPECT_EQ("role", rules.errors()[0].key);
  EXPECT_EQ("consequence_of[0]", rules.errors()[1].key);
}

TEST(ParseRules, UnknownKeyIsAnErrorWithFileLineAndKey) {
  const std::string yaml = std::string(kValid) + "contxt: {}\n";
  Result<std::vector<Rule>> rules = ParseRules(yaml, "r.yaml");
  ASSERT_FALSE(rules.ok());
  ASSERT_THAT(rules.errors(), SizeIs(1));
  const Error& e = rules.errors()[0];
  EXPECT_EQ("r.yaml", e.file);
  EXPECT_EQ(26, e.line);
  EXPECT_EQ("deepspeed.async_io.windows_link", e.rule_id);
  EXPECT_EQ("contxt", e.key);
  EXPECT_THAT(e.ToString(), HasSubstr("r.yaml:26: rule 'deepspeed.async_io.windows_link': "
                                      "key 'contxt': unknown key"));
}

TEST(ParseRules, DraftPlaceholdersForRootCauseAndFixAreRejected) {
  std::string yaml = kValid;
  yaml.replace(yaml.find("root_cause: async_io"), std::string("root_cause: async_io").size(),
               "root_cause: 'FILL IN: what fails, and why' #");
  yaml.replace(yaml.find("fix: Build"), std::string("fix: Build").size(),
               "fix: 'FILL IN: how to fix it' #");
  Result<std::vector<Rule>> rules = ParseRules(yaml, "drafts/x.yaml");
  ASSERT_FALSE(rules.ok());
  ASSERT_EQ(2u, rules.errors().size()) << FormatErrors(rules.errors());
  EXPECT_EQ("root_cause", rules.errors()[0].key);
  EXPECT_EQ("fix", rules.errors()[1].key);
  EXPECT_EQ("deepspeed.async_io.windows_link", rules.errors()[0].rule_id);
  EXPECT_THAT(rules.errors()[0].message, HasSubstr("placeholder"));
  EXPECT_GT(rules.errors()[0].line, 0);
  // Mentioning the words elsewhere is fine; only a text that still starts with them is a draft.
  std::string written = kValid;
  written.replace(written.find("fix: Build"), std::string("fix: Build").size(),
                  "fix: 'Never leave FILL IN: placeholders; build' #");
  EXPECT_TRUE(ParseRules(written, "x.yaml").ok());
}

TEST(ParseRules, UnknownNestedKeyNamesItsPath) {
  const char yaml[] = R"(id: a.b
title: t
severity: error
category: build
match: ['x']
context:
  requires_any: ['y']
  within: 3
root_cause: r
fix: f
)";
  Result<std::vector<Rule>> rules = ParseRules(yaml, "r.yaml");
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ("context.within", rules.errors()[0].key);
  EXPECT_EQ(8, rules.errors()[0].line);
}

TEST(ParseRules, BadPatternReportsRe2ErrorArg) {
  const char yaml[] = R"(id: a.b
title: t
severity: error
category: build
match:
  - 'ok'
  - 'broken (group'
root_cause: r
fix: f
)";
  Result<std::vector<Rule>> rules = ParseRules(yaml, "r.yaml");
  ASSERT_FALSE(rules.ok());
  ASSERT_THAT(rules.errors(), SizeIs(1));
  EXPECT_EQ("match[1]", rules.errors()[0].key);
  EXPECT_EQ(7, rules.errors()[0].line);
  EXPECT_THAT(rules.errors()[0].message, HasSubstr("missing )"));
  EXPECT_THAT(rules.errors()[0].message, HasSubstr("broken (group"));
}

TEST(ParseRules, EveryErrorOfALoadIsReported) {
  const char yaml[] = R"(id: Not-Dotted
title: t
severity: fatal
category: weather
match: []
fix: f
)";
  Result<std::vector<Rule>> rules = ParseRules(yaml, "r.yaml");
  ASSERT_FALSE(rules.ok());
  std::vector<std::string> keys;
  for (const Error& e : rules.errors()) keys.push_back(e.key);
  EXPECT_THAT(keys, ::testing::UnorderedElementsAre("id", "severity", "category", "match",
                                                    "root_cause"));
}

TEST(ParseRules, PatternMatchingEmptyStringIsRejected) {
  const char yaml[] = "id: a.b\ntitle: t\nseverity: info\ncategory: build\nmatch: ['x*']\n"
                      "root_cause: r\nfix: f\n";
  Result<std::vector<Rule>> rules = ParseRules(yaml, "r.yaml");
  ASSERT_FALSE(rules.ok());
  EXPECT_THAT(rules.errors()[0].message, HasSubstr("empty string"));
}

TEST(ParseRules, LabelNeedsExactlyOneCaptureGroup) {
  const char yaml[] = "id: a.b\ntitle: t\nseverity: info\ncategory: build\nmatch: ['x']\n"
                      "labels: {lib: 'no group'}\nroot_cause: r\nfix: f\n";
  Result<std::vector<Rule>> rules = ParseRules(yaml, "r.yaml");
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ("labels.lib", rules.errors()[0].key);
}

TEST(ParseRules, YamlSyntaxErrorNamesTheLine) {
  Result<std::vector<Rule>> rules = ParseRules("id: a.b\ntitle: [unclosed\n", "r.yaml");
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ("r.yaml", rules.errors()[0].file);
  EXPECT_GT(rules.errors()[0].line, 0);
}

TEST(ParseRules, SeveralDocumentsInOneFile) {
  const std::string one = "id: a.one\ntitle: t\nseverity: info\ncategory: build\n"
                          "match: ['x']\nroot_cause: r\nfix: f\n";
  const std::string two = "id: a.two\ntitle: t\nseverity: info\ncategory: build\n"
                          "match: ['y']\nroot_cause: r\nfix: f\n";
  Result<std::vector<Rule>> rules = ParseRules(one + "---\n" + two, "r.yaml");
  ASSERT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  ASSERT_THAT(rules.value(), SizeIs(2));
  EXPECT_EQ(9, rules.value()[1].line);
}

// The errors of a document without an id carry no rule id, not the id of the rule before it.
TEST(ParseRules, DocumentWithoutIdIsNotBlamedOnThePreviousRule) {
  const std::string good = "id: a.good\ntitle: t\nseverity: info\ncategory: build\n"
                           "match: ['x']\nroot_cause: r\nfix: f\n";
  Result<std::vector<Rule>> rules =
      ParseRules(good + "---\ntitle: t\nbogus: 1\n---\n- not a mapping\n", "r.yaml");
  ASSERT_FALSE(rules.ok());
  ASSERT_THAT(rules.errors(), Not(IsEmpty()));
  for (const Error& e : rules.errors()) {
    EXPECT_EQ("", e.rule_id) << e.ToString();
    EXPECT_GE(e.line, 9) << e.ToString();  // all in the documents after the good rule
  }
}

std::string RuleWithWithinLines(const std::string& within_lines) {
  return "id: a.b\ntitle: t\nseverity: info\ncategory: build\nmatch: ['x']\n"
         "context:\n  within_lines: " + within_lines + "\n  requires_any: ['y']\n"
         "root_cause: r\nfix: f\n";
}

// As in the config: `010` is ten, not YAML 1.1's octal eight, and hex, octal and other spellings
// are errors rather than numbers the author did not write.
TEST(ParseRules, IntegersAreDecimal) {
  Result<std::vector<Rule>> rules = ParseRules(RuleWithWithinLines("010"), "r.yaml");
  ASSERT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  EXPECT_EQ(10, rules.value()[0].context->within_lines);
  for (const char* spelling : {"0x10", "0o10", "1_000", "1e2", "+5", "10.0", "ten", "''"}) {
    Result<std::vector<Rule>> bad = ParseRules(RuleWithWithinLines(spelling), "r.yaml");
    ASSERT_FALSE(bad.ok()) << spelling;
    EXPECT_EQ("context.within_lines", bad.errors()[0].key) << spelling;
    EXPECT_EQ(7, bad.errors()[0].line) << spelling;
    EXPECT_THAT(bad.errors()[0].message, HasSubstr("must be a whole number from 1 to")) << spelling;
  }
}

TEST(ParseRules, IntegerBeyond64BitsIsAnErrorNotAWrappedValue) {
  Result<std::vector<Rule>> rules =
      ParseRules(RuleWithWithinLines("18446744073709551626"), "r.yaml");
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ("context.within_lines", rules.errors()[0].key);
}

class LoadRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("faultline_rules_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "sub");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(LoadRulesTest, DuplicateIdsAcrossFilesFailTheLoad) {
  const std::string rule = "id: a.same\ntitle: t\nseverity: info\ncategory: build\n"
                           "match: ['x']\nroot_cause: r\nfix: f\n";
  Write("one.yaml", rule);
  Write("sub/two.yml", rule);
  Write("README.md", "not a rule");
  Result<std::vector<Rule>> rules = LoadRules({dir_.string()});
  ASSERT_FALSE(rules.ok());
  EXPECT_THAT(rules.errors()[0].message, HasSubstr("duplicate rule id"));
}

TEST_F(LoadRulesTest, ErrorsFromSeveralFilesAreAllReported) {
  Write("a.yaml", "id: a.a\n");
  Write("b.yaml", "id: b.b\n");
  Result<std::vector<Rule>> rules = LoadRules({dir_.string()});
  ASSERT_FALSE(rules.ok());
  bool saw_a = false;
  bool saw_b = false;
  for (const Error& e : rules.errors()) {
    saw_a |= e.file.ends_with("a.yaml");
    saw_b |= e.file.ends_with("b.yaml");
  }
  EXPECT_TRUE(saw_a);
  EXPECT_TRUE(saw_b);
}

TEST_F(LoadRulesTest, MissingFolderIsAnError) {
  Result<std::vector<Rule>> rules = LoadRules({(dir_ / "nope").string()});
  ASSERT_FALSE(rules.ok());
  EXPECT_THAT(rules.errors()[0].message, HasSubstr("no such rule file or folder"));
}

TEST(BundledPack, LoadsWithoutErrors) {
  Result<std::vector<Rule>> rules = LoadRules({std::string(FAULTLINE_SOURCE_DIR) + "/rules"});
  ASSERT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  EXPECT_GE(rules.value().size(), 40u);
}

}  // namespace
}  // namespace faultline
