// `faultline rules list --format json` as tools read it: every rule with its patterns, so a tool
// can measure or rewrite the pack (tests/bench/pack_cost.py) without parsing YAML itself.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/process.h"

namespace faultline {
namespace {

using testing::RunFaultline;

TEST(RulesList, JsonCarriesEveryPatternOfARule) {
  const std::string dir = testing::TempDir("rules_list_json");
  std::ofstream(dir + "/r.yaml") << R"(id: t.seq
title: t
severity: error
category: runtime
consequence_of: ['gpu.']
match:
  - 'first line'
  - sequence: ['step one', 'step two']
    within_lines: 3
context:
  within_lines: 20
  requires_any: ['needed']
  unconfirmed_severity: warning
  downgrade_if_followed_by: ['all good']
labels: { op: 'op=(?P<op>\w+)' }
root_cause: r
fix: f
)";
  const auto r = RunFaultline({"rules", "list", "--rules", dir, "--format", "json"});
  std::filesystem::remove_all(dir);
  ASSERT_EQ(0, r.exit_code) << r.err;
  const auto rule = nlohmann::json::parse(r.out).at(0);
  EXPECT_EQ("symptom", rule["role"]);
  EXPECT_EQ(std::vector<std::string>{"gpu."}, rule["consequence_of"]);
  EXPECT_EQ("first line", rule["match"][0]);
  EXPECT_EQ((std::vector<std::string>{"step one", "step two"}), rule["match"][1]["sequence"]);
  EXPECT_EQ(3, rule["match"][1]["within_lines"]);
  EXPECT_EQ(20, rule["context"]["within_lines"]);
  EXPECT_EQ(std::vector<std::string>{"needed"}, rule["context"]["requires_any"]);
  EXPECT_EQ("warning", rule["context"]["unconfirmed_severity"]);
  EXPECT_EQ(std::vector<std::string>{"all good"}, rule["context"]["downgrade_if_followed_by"]);
  EXPECT_EQ("op=(?P<op>\\w+)", rule["labels"]["op"]);
}

}  // namespace
}  // namespace faultline
