#include "agent/core/yaml_fields.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/core/yaml_document.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

YAML::Node Parse(const std::string& text) {
  Result<YAML::Node> node = ParseYamlDocument(text, "f.yaml");
  EXPECT_TRUE(node.ok()) << FormatErrors(node.errors());
  return node.ok() ? node.value() : YAML::Node();
}

std::vector<std::string> Names(const std::vector<YamlField>& fields) {
  std::vector<std::string> names;
  for (const YamlField& f : fields) names.push_back(f.name);
  return names;
}

TEST(YamlFieldReader, FieldsKeepFileOrderAndReportUnknownAndDuplicateKeys) {
  ErrorList errors;
  YamlFieldReader reader("f.yaml", &errors);
  const YAML::Node root = Parse("b: 1\nzz: 2\na: 3\nb: 4\n");
  EXPECT_THAT(Names(reader.Fields(root, "top", {"a", "b"})), ElementsAre("b", "a"));
  ASSERT_THAT(errors, SizeIs(2));
  EXPECT_EQ("f.yaml:2: key 'top.zz': unknown key; allowed here: a, b", errors[0].ToString());
  EXPECT_EQ(4, errors[1].line);
  EXPECT_EQ("top.b", errors[1].key);
  EXPECT_EQ("duplicate key; first set on line 1", errors[1].message);
}

TEST(YamlFieldReader, NullIsAnEmptyMapAndAListIsNotAMap) {
  ErrorList errors;
  YamlFieldReader reader("f.yaml", &errors);
  EXPECT_TRUE(reader.Fields(Parse("s:\n")["s"], "s", {"a"}).empty());
  EXPECT_TRUE(errors.empty());
  EXPECT_TRUE(reader.Fields(Parse("s: [1]\n")["s"], "s", {"a"}).empty());
  ASSERT_THAT(errors, SizeIs(1));
  EXPECT_EQ("expected a map, got a list", errors[0].message);
}

TEST(YamlFieldReader, IntegerIsDecimalWithinItsRange) {
  ErrorList errors;
  YamlFieldReader reader("f.yaml", &errors);
  const std::vector<YamlField> fields =
      reader.Fields(Parse("a: 010\nb: 0x10\nc: 99\nd: [1]\n"), "", {"a", "b", "c", "d"});
  ASSERT_THAT(fields, SizeIs(4));
  EXPECT_EQ(std::optional<int64_t>(10), reader.Integer(fields[0], "a", 1, 50));
  EXPECT_EQ(std::nullopt, reader.Integer(fields[1], "b", 1, 50));
  EXPECT_EQ(std::nullopt, reader.Integer(fields[2], "c", 1, 50));
  EXPECT_EQ(std::nullopt, reader.Integer(fields[3], "d", 1, 50));
  ASSERT_THAT(errors, SizeIs(3));
  EXPECT_EQ("expected a whole number from 1 to 50, got '0x10'", errors[0].message);
  EXPECT_EQ(2, errors[0].line);
  EXPECT_EQ("must be from 1 to 50, got 99", errors[1].message);
  EXPECT_EQ("expected a single value, got a list", errors[2].message);
}

TEST(YamlFieldReader, StringListRejectsEmptyItemsAndAnEmptyList) {
  ErrorList errors;
  YamlFieldReader reader("f.yaml", &errors);
  const std::vector<YamlField> fields =
      reader.Fields(Parse("a: [x, y]\nb: []\nc: [x, '']\n"), "s", {"a", "b", "c"});
  ASSERT_THAT(fields, SizeIs(3));
  EXPECT_EQ(std::vector<std::string>({"x", "y"}), reader.StringList(fields[0], "s.a"));
  EXPECT_EQ(std::vector<std::string>{}, reader.StringList(fields[1], "s.b", /*allow_empty=*/true));
  EXPECT_EQ(std::nullopt, reader.StringList(fields[1], "s.b"));
  EXPECT_EQ(std::nullopt, reader.StringList(fields[2], "s.c"));
  ASSERT_THAT(errors, SizeIs(2));
  EXPECT_EQ("the list must not be empty", errors[0].message);
  EXPECT_EQ("s.c[1]", errors[1].key);
  EXPECT_EQ("expected a non-empty string, got an empty string", errors[1].message);
}

TEST(YamlFieldReader, LookupsNameTheRuleAndPointAtTheValue) {
  ErrorList errors;
  YamlFieldReader reader("r.yaml", &errors);
  reader.set_rule_id("a.b");
  const YAML::Node rule = Parse("id: a.b\ntitle:\n  - x\nwithin: 'ten'\nbogus: 1\n");
  reader.UnknownKeys(rule, {"id", "title", "within"}, "");
  EXPECT_EQ("a.b", reader.Required(rule, "id"));
  EXPECT_EQ("", reader.Required(rule, "title"));
  EXPECT_EQ("", reader.Required(rule, "fix"));
  EXPECT_EQ(3, reader.IntegerAt(rule["within"], "within", 3, 9));
  ASSERT_THAT(errors, SizeIs(4));
  EXPECT_EQ("r.yaml:5: rule 'a.b': key 'bogus': unknown key; allowed here: id, title, within",
            errors[0].ToString());
  EXPECT_EQ(3, errors[1].line);  // the value's line, under the key
  EXPECT_EQ("must be a non-empty string", errors[1].message);
  EXPECT_EQ("fix", errors[2].key);
  EXPECT_EQ("required key is missing", errors[2].message);
  EXPECT_EQ("must be a whole number from 3 to 9, got 'ten'", errors[3].message);
}

}  // namespace
}  // namespace faultline
