// Every YAML reader (the shared parser, the rule loader, the config loader) on the inputs that
// made yaml-cpp 0.7 hang or accept garbage. This executable runs with a short ctest TIMEOUT, so a
// regression fails instead of hanging the test run.
#include "agent/core/yaml_document.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/config/config_loader.h"
#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// Each of these sent yaml-cpp 0.7's LoadAll into an endless loop that allocates.
const std::vector<std::string> kLoadAllHangs = {",", ",a", "\"a\",", "!x ,", "&a ,", "|\n,",
                                                "key: value\n---\n,"};

TEST(ParseYamlDocuments, InputsThatHungYamlCpp07AreSyntaxErrors) {
  for (const std::string& text : kLoadAllHangs) {
    Result<std::vector<YAML::Node>> docs = ParseYamlDocuments(text, "in.yaml");
    ASSERT_FALSE(docs.ok()) << text;
    ASSERT_THAT(docs.errors(), SizeIs(1)) << text;
    EXPECT_EQ("in.yaml", docs.errors()[0].file);
    EXPECT_GT(docs.errors()[0].line, 0) << text;
    EXPECT_THAT(docs.errors()[0].message, HasSubstr("invalid YAML at column")) << text;
  }
}

TEST(ParseYamlDocuments, CommaAloneSaysWhatIsWrongAndWhere) {
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments("a: 1\n---\n,\n", "in.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(3, docs.errors()[0].line);
  EXPECT_EQ("invalid YAML at column 1: did not find expected node content (while parsing a "
            "block node)",
            docs.errors()[0].message);
}

// Found by fuzzing: libyaml reads `&a?x, y` as the scalar "?x, y" anchored `a`, while yaml-cpp
// ends the anchor name at the comma (`a?x`) and then loops on the comma as above.
TEST(ParseYamlDocuments, TextYamlCppReadsDifferentlyFromLibyamlIsAnErrorNotAHang) {
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments("&a?x, y", "in.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(1, docs.errors()[0].line);
  EXPECT_THAT(docs.errors()[0].message, HasSubstr("yaml-cpp 0.7 reads this YAML differently"));
}

// Found by fuzzing: one document to libyaml, two to yaml-cpp. Loading it would silently read
// something else than the text says.
TEST(ParseYamlDocuments, StructureYamlCppReadsDifferentlyIsAnError) {
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments("&Ex:&p p\n0[3a 0", "in.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_THAT(docs.errors()[0].message, HasSubstr("yaml-cpp 0.7 reads this YAML differently"));
}

// yaml-cpp 0.7's Load read these as an empty or a one-character document without a word.
TEST(ParseYamlDocument, GarbageIsAnErrorNotAnEmptyDocument) {
  for (const char* text : {",", "\"", "'", ",a"}) {
    EXPECT_FALSE(ParseYamlDocument(text, "in.yaml").ok()) << text;
  }
}

TEST(ParseYamlDocuments, KeepsEveryDocumentInOrderAndEmptyOnesAsNull) {
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments("a: 1\n---\n---\n- b\n", "in.yaml");
  ASSERT_TRUE(docs.ok()) << FormatErrors(docs.errors());
  ASSERT_THAT(docs.value(), SizeIs(3));
  EXPECT_EQ("1", docs.value()[0]["a"].Scalar());
  EXPECT_TRUE(docs.value()[1].IsNull());
  EXPECT_EQ("b", docs.value()[2][0].Scalar());
  EXPECT_EQ(3, docs.value()[2].Mark().line);  // yaml-cpp's marks, which loaders report, survive
}

TEST(ParseYamlDocuments, EmptyTextHasNoDocuments) {
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments("# only a comment\n", "in.yaml");
  ASSERT_TRUE(docs.ok());
  EXPECT_THAT(docs.value(), SizeIs(0));
}

TEST(ParseYamlDocument, EmptyTextIsANullNode) {
  Result<YAML::Node> doc = ParseYamlDocument("", "in.yaml");
  ASSERT_TRUE(doc.ok());
  EXPECT_TRUE(doc.value().IsNull());
}

TEST(ParseYamlDocument, ASecondDocumentIsAnErrorAtItsLine) {
  Result<YAML::Node> doc = ParseYamlDocument("a: 1\n---\nb: 2\n", "in.yaml");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(3, doc.errors()[0].line);
  EXPECT_THAT(doc.errors()[0].message, HasSubstr("second YAML document"));
}

TEST(ParseYamlDocuments, AliasesToEarlierNodesWork) {
  Result<std::vector<YAML::Node>> docs =
      ParseYamlDocuments("base: &paths [a.log, b.log]\ncopy: *paths\n", "in.yaml");
  ASSERT_TRUE(docs.ok()) << FormatErrors(docs.errors());
  EXPECT_EQ("b.log", docs.value()[0]["copy"][1].Scalar());
}

// yaml-cpp builds `&a [*a]` as a list that contains itself; a walk over it never ends.
TEST(ParseYamlDocuments, AliasInsideTheNodeItNamesIsAnError) {
  for (const char* text : {"&a [*a]", "&m {k: [x, *m]}", "- &s\n  - *s\n"}) {
    Result<std::vector<YAML::Node>> docs = ParseYamlDocuments(text, "in.yaml");
    ASSERT_FALSE(docs.ok()) << text;
    EXPECT_THAT(docs.errors()[0].message, HasSubstr("is inside the node it names")) << text;
  }
}

TEST(ParseYamlDocuments, AliasToARedefinedAnchorNamesTheLatestDefinition) {
  // The inner `&a` replaces the outer one, and it is complete when `*a` refers to it.
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments("&a [&a x, *a]", "in.yaml");
  ASSERT_TRUE(docs.ok()) << FormatErrors(docs.errors());
  EXPECT_EQ("x", docs.value()[0][1].Scalar());
}

TEST(ParseYamlDocuments, UndefinedAliasIsAnError) {
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments("a: *nope\n", "in.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(1, docs.errors()[0].line);
  EXPECT_THAT(docs.errors()[0].message, HasSubstr("'*nope' names no anchor"));
}

TEST(ParseYamlDocuments, AnchorsDoNotReachIntoTheNextDocument) {
  EXPECT_FALSE(ParseYamlDocuments("a: &x 1\n---\nb: *x\n", "in.yaml").ok());
}

// libyaml reads the lone CR as a line break, so `*a` names the scalar `x`; yaml-cpp 0.7 reads the
// alias as naming the list it is in. Built, that list would contain itself and every loader
// walking it would recurse until the stack ran out (found by the fuzzer).
TEST(ParseYamlDocuments, AliasesTheParsersResolveDifferentlyAreAnError) {
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments("&a [&a\rx, *a]", "in.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_THAT(docs.errors()[0].message, HasSubstr("disagree about which anchor"));
}

TEST(ParseYamlDocuments, RedefinedAnchorsResolveToTheLatestDefinition) {
  Result<std::vector<YAML::Node>> docs =
      ParseYamlDocuments("a: &x 1\nb: &x [2, 3]\nc: *x\nd: &y {k: *x}\ne: *y\n", "in.yaml");
  ASSERT_TRUE(docs.ok()) << docs.errors()[0].message;
  const YAML::Node& doc = docs.value()[0];
  EXPECT_EQ(2u, doc["c"].size());
  EXPECT_EQ(3, doc["e"]["k"][1].as<int>());
}

TEST(ParseYamlDocuments, NestingIsBounded) {
  const std::string deep = std::string(kMaxYamlDepth + 1, '[') + std::string(kMaxYamlDepth + 1, ']');
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments(deep, "in.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_THAT(docs.errors()[0].message, HasSubstr("nested deeper than 64 levels"));
  const std::string ok = std::string(kMaxYamlDepth, '[') + std::string(kMaxYamlDepth, ']');
  EXPECT_TRUE(ParseYamlDocuments(ok, "in.yaml").ok());
}

TEST(ParseYamlDocuments, NodeCountIsBounded) {
  std::string many = "[";
  for (size_t i = 0; i < kMaxYamlNodes; ++i) many += "a,";
  many += "a]";
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments(many, "in.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_THAT(docs.errors()[0].message, HasSubstr("more than 200000 values"));
}

// Each alias is as many nodes as the node it names, so aliases cannot multiply what a loader
// reads: here 1,000 aliases of a 1,000-entry list would be a million paths to resolve.
TEST(ParseYamlDocuments, AliasesCountAsTheNodesTheyName) {
  std::string text = "paths: &p [";
  for (int i = 0; i < 1000; ++i) text += "a.log,";
  text += "b.log]\nsources:\n";
  for (int i = 0; i < 1000; ++i) text += "  - {id: s, paths: *p}\n";
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments(text, "in.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_THAT(docs.errors()[0].message, HasSubstr("aliases counted as the values they name"));
  EXPECT_EQ(200, docs.errors()[0].line);  // the 198th source passes the limit
}

TEST(ParseYamlDocuments, SizeIsBounded) {
  const std::string big = "a: '" + std::string(kMaxYamlBytes, 'x') + "'\n";
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments(big, "in.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(0, docs.errors()[0].line);
  EXPECT_THAT(docs.errors()[0].message, HasSubstr("YAML files are limited to 4194304"));
}

TEST(ParseYamlDocuments, InvalidUtf8NamesItsLine) {
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments("a: 1\nb: \xff\n", "in.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(2, docs.errors()[0].line);
  EXPECT_THAT(docs.errors()[0].message, HasSubstr("invalid leading UTF-8 octet"));
}

class YamlFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "yaml_document_XXXXXX").string();
    ASSERT_NE(nullptr, mkdtemp(pattern.data()));
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }
  fs::path dir_;
};

TEST_F(YamlFileTest, RuleFileHoldingACommaIsAnErrorNotAHang) {
  const std::string path = Write("comma.yaml", ",");
  Result<std::vector<Rule>> rules = LoadRules({path});
  ASSERT_FALSE(rules.ok());
  ASSERT_THAT(rules.errors(), SizeIs(1));
  EXPECT_EQ(path, rules.errors()[0].file);
  EXPECT_EQ(1, rules.errors()[0].line);
  EXPECT_THAT(rules.errors()[0].message, HasSubstr("did not find expected node content"));
}

TEST_F(YamlFileTest, OversizedRuleFileIsRejectedBeforeItIsRead) {
  const std::string path = Write("huge.yaml", "# " + std::string(kMaxYamlBytes, 'x') + "\n");
  Result<std::vector<Rule>> rules = LoadRules({path});
  ASSERT_FALSE(rules.ok());
  EXPECT_THAT(rules.errors()[0].message,
              HasSubstr("over 4194304 bytes; a rule file is limited to that many"));
}

// /dev/zero never ends: the read stops one byte past the limit instead of growing forever.
TEST(ReadYamlFile, AnEndlessFileIsCutAtTheLimit) {
  Result<std::string> text = ReadYamlFile("/dev/zero", "config file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ("/dev/zero", text.errors()[0].file);
  EXPECT_THAT(text.errors()[0].message, HasSubstr("a config file is limited to that many"));
}

TEST(ReadYamlFile, AMissingFileSaysWhy) {
  Result<std::string> text = ReadYamlFile("/nonexistent/faultline.yaml", "config file");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.errors()[0].message,
              HasSubstr("cannot open config file: No such file or directory"));
}

TEST(LoadConfig, AConfigPathAtAnEndlessFileIsAnError) {
  Result<Config> config = LoadConfig("/dev/zero");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.errors()[0].message, HasSubstr("a config file is limited to that many"));
}

TEST_F(YamlFileTest, ConfigFileHoldingACommaIsAnErrorNotAnEmptyConfig) {
  for (const std::string& text : kLoadAllHangs) {
    const std::string path = Write("faultline.yaml", text);
    Result<Config> config = LoadConfig(path);
    ASSERT_FALSE(config.ok()) << text;
    EXPECT_EQ(path, config.errors()[0].file);
    EXPECT_THAT(config.errors()[0].message, HasSubstr("invalid YAML")) << text;
  }
}

}  // namespace
}  // namespace faultline
