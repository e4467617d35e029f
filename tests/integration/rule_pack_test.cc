// The bundled rule pack: every rule's examples pass, every rule is documented for an engineer on
// call, and the pack names each corpus class on real logs without raising errors on healthy ones.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/process.h"

namespace faultline {
namespace {

using ::testing::HasSubstr;
using testing::RunFaultline;

const std::string kPackRules = std::string(FAULTLINE_SOURCE_DIR) + "/rules";
const std::string kCorpus = std::string(FAULTLINE_SOURCE_DIR) + "/../shared/corpus";

TEST(RulePack, EveryExamplePasses) {
  const auto r = RunFaultline({"rules", "test", kPackRules});
  EXPECT_EQ(0, r.exit_code) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr(" 0 failed"));
}

TEST(RulePack, EveryRuleHasTwoExamplesEachWayAndReferences) {
  const auto r = RunFaultline({"rules", "list", "--rules", kPackRules, "--format", "json"});
  ASSERT_EQ(0, r.exit_code) << r.err;
  const auto rules = nlohmann::json::parse(r.out);
  EXPECT_GE(rules.size(), 40u);
  for (const auto& rule : rules) {
    EXPECT_GE(rule["examples_match"].get<int>(), 2) << rule["id"];
    EXPECT_GE(rule["examples_no_match"].get<int>(), 2) << rule["id"];
    EXPECT_FALSE(rule["references"].empty()) << rule["id"];
  }
}

TEST(RulePack, HasOneHundredFiftyClassesEachDocumentedInTheRulesReadme) {
  const auto r = RunFaultline({"rules", "list", "--rules", kPackRules, "--format", "json"});
  ASSERT_EQ(0, r.exit_code) << r.err;
  std::ifstream in(kPackRules + "/README.md");
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::string> classes;
  for (const auto& rule : nlohmann::json::parse(r.out)) {
    const std::string failure_class = rule["class"];
    classes.insert(failure_class);
    EXPECT_THAT(readme, HasSubstr("| " + failure_class + " | "))
        << failure_class << " (" << rule["id"] << ") is not in rules/README.md's class tables";
    EXPECT_THAT(readme, HasSubstr("`" + rule["id"].get<std::string>() + "`")) << rule["id"];
  }
  EXPECT_GE(classes.size(), 150u);
}

TEST(RulePack, CorpusEvaluationNamesEveryCoveredFileAndNoNegativeErrors) {
  if (!std::filesystem::exists(kCorpus + "/MANIFEST.tsv")) {
    // A user's own clone has no shared/ corpus; the command must say so and succeed.
    const auto r = RunFaultline({"rules", "eval", "--corpus", kCorpus, "--rules", kPackRules});
    EXPECT_EQ(0, r.exit_code);
    EXPECT_THAT(r.out, HasSubstr("evaluation skipped"));
    return;
  }
  const auto r = RunFaultline({"rules", "eval", "--corpus", kCorpus, "--rules", kPackRules,
                               "--classes",
                               std::string(FAULTLINE_SOURCE_DIR) + "/tests/corpus/classes.tsv"});
  EXPECT_EQ(0, r.exit_code) << r.out << r.err;
  std::cout << r.out;
}

TEST(RulePack, MissingCorpusIsSkippedNotFailed) {
  const auto r = RunFaultline({"rules", "eval", "--corpus", "/nonexistent/corpus"});
  EXPECT_EQ(0, r.exit_code);
  EXPECT_THAT(r.out, HasSubstr("evaluation skipped"));
}

// The headline case: LNK1181 for aio.lib is harmless on `import deepspeed` and fatal in a build.
TEST(RulePack, AioLinkErrorIsAWarningOnImportAndAnErrorInABuild) {
  const std::string dir = testing::TempDir("aio");
  const std::string import_log = dir + "/import.log";
  const std::string build_log = dir + "/build.log";
  std::ofstream(import_log)
      << "python -c \"import deepspeed\"\n"
         "[2024-10-22 00:32:47,000] [INFO] [real_accelerator.py:203:get_accelerator] Setting "
         "ds_accelerator to cuda (auto detect)\n"
         "test.c\nLINK : fatal error LNK1181: cannot open input file 'aio.lib'\n"
         "training started\n";
  std::ofstream(build_log) << "set DS_BUILD_OPS=1\npython setup.py bdist_wheel\ntest.c\n"
                              "LINK : fatal error LNK1181: 无法打开输入文件“aio.lib”\n"
                              " [ERROR]  Unable to pre-compile async_io\n"
                              "AssertionError: Unable to pre-compile async_io\n";
  const auto import_scan = RunFaultline({"scan", "--format", "json", import_log});
  const auto build_scan = RunFaultline({"scan", "--format", "json", build_log});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(0, import_scan.exit_code) << import_scan.out;
  EXPECT_EQ(1, build_scan.exit_code) << build_scan.out;
  bool import_named = false;
  const auto imported = nlohmann::json::parse(import_scan.out);
  for (const auto& f : imported["findings"]) {
    EXPECT_NE("error", f["severity"]) << f["signature"];
    if (f["signature"] == "deepspeed.async_io.windows_link") import_named = true;
  }
  EXPECT_TRUE(import_named) << import_scan.out;
  const auto build = nlohmann::json::parse(build_scan.out);
  bool build_named = false;
  for (const auto& f : build["findings"]) {
    if (f["signature"] != "deepspeed.async_io.windows_link") continue;
    build_named = true;
    EXPECT_EQ("error", f["severity"]);
    EXPECT_THAT(f["fix"].get<std::string>(), HasSubstr("DS_BUILD_AIO=0"));
  }
  EXPECT_TRUE(build_named) << build_scan.out;
}

}  // namespace
}  // namespace faultline
