// `faultline rules list --format json` as tools read it: every rule with its patterns, so a tool
// can measure or rewrite the pack (tests/bench/pack_cost.py) without parsing YAML itself.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
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

TEST(RulesEval, CountsFilesNamedAsRootCauseAndAsFirstFailure) {
  const std::string dir = testing::TempDir("rules_eval_roles");
  std::filesystem::create_directories(dir + "/rules");
  std::filesystem::create_directories(dir + "/corpus");
  std::ofstream(dir + "/rules/r.yaml") << R"(id: t.oom
title: t
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
---
id: t.watch
title: t
severity: error
category: distributed
consequence_of: ['t.oom']
match: ['Watchdog caught collective operation timeout']
root_cause: r
fix: f
)";
  std::ofstream(dir + "/classes.tsv") << "class\trules\noom\tt.oom\nwatchdog\tt.watch\n";
  std::ofstream(dir + "/corpus/MANIFEST.tsv") << "path\tclass\noom.log\toom\nwatch.log\twatchdog\n";
  std::ofstream(dir + "/corpus/oom.log") << "CUDA out of memory\n";
  // The timeout is named, but as the consequence of the OOM that the same log shows first.
  std::ofstream(dir + "/corpus/watch.log")
      << "CUDA out of memory\n[Rank 1] Watchdog caught collective operation timeout\n";
  const auto r = RunFaultline({"rules", "eval", "--corpus", dir + "/corpus", "--classes",
                               dir + "/classes.tsv", "--rules", dir + "/rules"});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(0, r.exit_code) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("2/2 files of covered classes named (1 as a root cause, "
                                          "1 as the first failure)"));
}

}  // namespace
}  // namespace faultline
