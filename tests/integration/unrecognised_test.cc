// Unrecognised errors as a user meets them: `scan` lists error lines no rule names after its
// findings (text and JSON, and in the exit status on request), `run` counts them per source and
// per template and serves them at /api/v1/unrecognised, and `rules suggest` drafts a rule from
// one that loads, passes `rules test` and names the failure once its placeholders are written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/integration/process.h"

namespace faultline {
namespace {

// Replaces the line of a rule draft that starts with `placeholder` (at any indent) by `written`.
void FillIn(std::string& yaml, const std::string& placeholder, const std::string& written) {
  const std::size_t at = yaml.find(placeholder);
  ASSERT_NE(std::string::npos, at) << placeholder << " not in the draft:\n" << yaml;
  yaml.replace(at, yaml.find('\n', at) - at, written);
}

using testing::Daemon;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::HttpGet;
using ::testing::Not;
using testing::RunFaultline;

constexpr char kUnrecognisedRules[] = R"(id: t.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
)";

// A training log: one failure the rule knows, two it does not (a Python exception twice, with
// different numbers, and a crash), and healthy lines around them.
constexpr char kLog[] =
    "step 1 | loss 2.31\n"
    "Traceback (most recent call last):\n"
    "  File \"train.py\", line 12, in <module>\n"
    "    shard = load_shard(path)\n"
    "webdataset.errors.ShardCorruptError: shard /data/train-000123.tar truncated at byte 4096\n"
    "step 2 | loss 2.30\n"
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    "Traceback (most recent call last):\n"
    "  File \"train.py\", line 12, in <module>\n"
    "webdataset.errors.ShardCorruptError: shard /data/train-000777.tar truncated at byte 512\n"
    "/bin/bash: line 1: 4242 Segmentation fault      (core dumped) python train.py\n";

class Unrecognised : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ + "/rules");
    std::ofstream(dir_ + "/rules/t.yaml") << kUnrecognisedRules;
    Write("train.log", kLog);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

TEST_F(Unrecognised, ScanListsThemAfterTheFindings) {
  const auto r = RunFaultline({"scan", "--rules", Path("rules"), Path("train.log")});
  EXPECT_EQ(1, r.exit_code) << r.err;  // the known CUDA OOM fails the scan
  const size_t finding = r.out.find("CUDA out of memory");
  const size_t section =
      r.out.find("Unrecognised errors (error lines no rule names): 2 templates, 3 lines");
  ASSERT_NE(std::string::npos, finding) << r.out;
  ASSERT_NE(std::string::npos, section) << r.out;
  EXPECT_LT(finding, section);
  EXPECT_THAT(r.out, HasSubstr("UNRECOGNISED  webdataset.errors.ShardCorruptError: shard <*> "
                               "truncated at byte <*>"));
  EXPECT_THAT(r.out, HasSubstr("(2 lines, python_exception)"));
  EXPECT_THAT(r.out, HasSubstr("train.log:5: webdataset.errors.ShardCorruptError: shard "
                               "/data/train-000123.tar truncated at byte 4096"));
  EXPECT_THAT(r.out, HasSubstr("(1 line, signal)"));
  EXPECT_THAT(r.out,
              HasSubstr("faultline rules suggest --from " + Path("train.log") + " --template "));
  // The OOM line is the rule's: not listed again.
  EXPECT_THAT(r.out.substr(section), Not(HasSubstr("Tried to allocate")));
}

TEST_F(Unrecognised, ScanJsonHasThemWithTheirFirstOccurrence) {
  const auto r =
      RunFaultline({"scan", "--format", "json", "--rules", Path("rules"), Path("train.log")});
  ASSERT_EQ(1, r.exit_code) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(2u, doc["unrecognised"].size()) << r.out;
  EXPECT_EQ(3u, doc["unrecognised_lines"]);
  const auto& shard = doc["unrecognised"][0];
  EXPECT_EQ("webdataset.errors.ShardCorruptError: shard <*> truncated at byte <*>",
            shard["template"]);
  EXPECT_EQ(2, shard["count"]);
  const std::string template_id = shard["template_id"];
  EXPECT_EQ(12u, template_id.size());
  EXPECT_EQ(std::string::npos, template_id.find_first_not_of("0123456789abcdef")) << template_id;
  EXPECT_EQ(Path("train.log"), shard["first"]["file"]);
  EXPECT_EQ(5, shard["first"]["line"]);
  EXPECT_THAT(shard["first"]["text"].get<std::string>(), HasSubstr("train-000123.tar"));
  EXPECT_EQ("python_exception", shard["cue"]);
  EXPECT_EQ(2u, shard["examples"].size());
  EXPECT_EQ("critical", doc["unrecognised"][1]["severity"]);  // the segfault
  EXPECT_EQ("t.cuda_oom", doc["findings"][0]["signature"]);
  // The same failure gets the same id in another run, from another file.
  Write("other.log", std::string("noise\n") + kLog);
  const auto again =
      RunFaultline({"scan", "--format", "json", "--rules", Path("rules"), Path("other.log")});
  EXPECT_EQ(shard["template_id"],
            nlohmann::json::parse(again.out)["unrecognised"][0]["template_id"]);
}

// Discovery on its own: an empty rule folder, or `--rules none`, loads no rule, so every error
// line of the log is unrecognised, the CUDA OOM too; a folder that does not exist stays an error.
TEST_F(Unrecognised, ScanWithNoRulesListsEveryErrorAsUnrecognised) {
  std::filesystem::create_directories(Path("empty"));
  for (const std::string& rules : {Path("empty"), std::string("none")}) {
    const auto r =
        RunFaultline({"scan", "--format", "json", "--rules", rules, Path("train.log")});
    ASSERT_EQ(0, r.exit_code) << rules << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("no rules loaded")) << rules;
    const auto doc = nlohmann::json::parse(r.out);
    EXPECT_TRUE(doc["findings"].empty()) << r.out;
    EXPECT_EQ(4u, doc["unrecognised_lines"]) << r.out;
    std::string templates;
    for (const auto& t : doc["unrecognised"]) templates += t["template"].get<std::string>() + "\n";
    EXPECT_THAT(templates, HasSubstr("CUDA out of memory")) << rules;
    EXPECT_THAT(templates, HasSubstr("ShardCorruptError")) << rules;
    const auto failing =
        RunFaultline({"scan", "--fail-on-unrecognised", "--rules", rules, Path("train.log")});
    EXPECT_EQ(1, failing.exit_code) << failing.err;
  }
  const auto missing = RunFaultline({"scan", "--rules", Path("no-such-folder"), Path("train.log")});
  EXPECT_EQ(2, missing.exit_code);
  EXPECT_THAT(missing.err, HasSubstr("no such rule file or folder"));
}

TEST_F(Unrecognised, CountForTheExitStatusOnlyWhenAsked) {
  Write("crash.log", "step 1\nSegmentation fault (core dumped)\n");
  const auto plain = RunFaultline({"scan", "--rules", Path("rules"), Path("crash.log")});
  EXPECT_EQ(0, plain.exit_code) << plain.out;
  EXPECT_THAT(plain.out, HasSubstr("no known failure found"));
  EXPECT_THAT(plain.out, HasSubstr("UNRECOGNISED  Segmentation fault (core dumped)"));
  const auto strict =
      RunFaultline({"scan", "--fail-on-unrecognised", "--rules", Path("rules"), Path("crash.log")});
  EXPECT_EQ(1, strict.exit_code);
  const auto off =
      RunFaultline({"scan", "--no-discover", "--rules", Path("rules"), Path("crash.log")});
  EXPECT_EQ(0, off.exit_code);
  EXPECT_THAT(off.out, Not(HasSubstr("UNRECOGNISED")));
  const auto both = RunFaultline({"scan", "--no-discover", "--fail-on-unrecognised", "--rules",
                                  Path("rules"), Path("crash.log")});
  EXPECT_EQ(2, both.exit_code);
  Write("healthy.log", "step 1 | loss 2.31\nstep 2 | loss 2.30\n");
  const auto healthy = RunFaultline(
      {"scan", "--fail-on-unrecognised", "--rules", Path("rules"), Path("healthy.log")});
  EXPECT_EQ(0, healthy.exit_code);
}

TEST_F(Unrecognised, SuggestDraftsARuleThatLoadsOnlyOnceWrittenAndThenNamesTheFailure) {
  const auto draft =
      RunFaultline({"rules", "suggest", "--from", Path("train.log"), "--rules", Path("rules")});
  ASSERT_EQ(0, draft.exit_code) << draft.err;
  // The first unrecognised failure of the log is drafted; the other is named on stderr.
  EXPECT_THAT(draft.out, HasSubstr("id: local.shard_corrupt_error.shard_truncated_byte\n"));
  EXPECT_THAT(draft.out, HasSubstr("severity: error\n"));
  EXPECT_THAT(draft.out, HasSubstr("root_cause: 'FILL IN:"));
  EXPECT_THAT(draft.out,
              HasSubstr("    - 'webdataset.errors.ShardCorruptError: shard /data/train-000777.tar "
                        "truncated at byte 512'"));
  EXPECT_THAT(draft.err, HasSubstr("also: "));
  EXPECT_THAT(draft.err, HasSubstr("Segmentation fault"));
  std::filesystem::create_directories(dir_ + "/drafts");
  Write("drafts/shard.yaml", draft.out);

  // Unfinished, it does not load: not in `rules test`, not in `check`.
  const auto unfinished = RunFaultline({"rules", "test", Path("drafts")});
  EXPECT_EQ(2, unfinished.exit_code);
  EXPECT_THAT(unfinished.err, HasSubstr("root_cause"));
  EXPECT_THAT(unfinished.err, HasSubstr("placeholder"));
  Write("faultline.yaml", "rules:\n  paths: [drafts]\nsources: []\n");
  const auto check = RunFaultline({"check", "-c", Path("faultline.yaml")});
  EXPECT_EQ(2, check.exit_code);
  EXPECT_THAT(check.err, HasSubstr("fix"));

  // Written by a person, it passes its own examples and names the failure.
  std::string yaml = draft.out;
  FillIn(yaml,
         "root_cause: 'FILL IN:", "root_cause: 'A webdataset shard was cut short while copying.'");
  FillIn(yaml, "fix: 'FILL IN:", "fix: 'Copy the shard again and check its size.'");
  Write("drafts/shard.yaml", yaml);
  const auto tested = RunFaultline({"rules", "test", Path("drafts")});
  EXPECT_EQ(0, tested.exit_code) << tested.out << tested.err;
  EXPECT_THAT(tested.out, HasSubstr("0 failed"));
  EXPECT_EQ(0, RunFaultline({"check", "-c", Path("faultline.yaml")}).exit_code);
  const auto rescan = RunFaultline({"scan", "--format", "json", "--rules", Path("rules"), "--rules",
                                    Path("drafts"), Path("train.log")});
  const auto doc = nlohmann::json::parse(rescan.out);
  bool named = false;
  for (const auto& f : doc["findings"]) {
    named = named || f["signature"] == "local.shard_corrupt_error.shard_truncated_byte";
  }
  EXPECT_TRUE(named) << rescan.out;
  ASSERT_EQ(1u, doc["unrecognised"].size());  // only the crash is left
  EXPECT_EQ("signal", doc["unrecognised"][0]["cue"]);
}

TEST_F(Unrecognised, SuggestNamesTheTemplatesWhenTheOneAskedForIsNotThere) {
  const auto r = RunFaultline({"rules", "suggest", "--from", Path("train.log"), "--template",
                               "000000000000", "--rules", Path("rules")});
  EXPECT_EQ(1, r.exit_code);
  EXPECT_THAT(r.err, HasSubstr("no template 000000000000"));
  EXPECT_THAT(r.err, HasSubstr("ShardCorruptError"));
  Write("healthy.log", "step 1\n");
  const auto none =
      RunFaultline({"rules", "suggest", "--from", Path("healthy.log"), "--rules", Path("rules")});
  EXPECT_EQ(1, none.exit_code);
  EXPECT_THAT(none.err, HasSubstr("no unrecognised errors"));
  EXPECT_EQ(2, RunFaultline({"rules", "suggest"}).exit_code);
}

TEST_F(Unrecognised, RunCountsThemPerSourceAndTemplateAndServesThem) {
  std::filesystem::create_directories(dir_ + "/logs");
  const uint16_t port = testing::FreePort();
  Write("faultline.yaml",
        "rules:\n  paths: [rules]\n  context_idle_flush_ms: 200\n"
        "http:\n  listen: 127.0.0.1:" +
            std::to_string(port) +
            "\ndiscover:\n  max_series: 1\n"
            "sources:\n  - id: train\n    type: file\n"
            "    paths: ['logs/*.log']\n    start_at: beginning\n"
            "    poll_interval_ms: 50\n");
  Write("logs/a.log", kLog);
  Daemon agent({"run", "-c", Path("faultline.yaml")});
  std::string metrics;
  const auto fetch = [&] {
    metrics.clear();
    return HttpGet(port, "/metrics", &metrics) == 200;
  };
  // Held until no finding can explain them, then counted once the file is quiet.
  ASSERT_TRUE(Eventually([&] {
    return fetch() &&
           testing::Sample(metrics, "faultline_unrecognised_lines_total{source=\"train\"}") == 3;
  })) << metrics
      << agent.Stderr();
  EXPECT_EQ(2, testing::Sample(metrics, "faultline_unrecognised_templates"));
  // max_series: 1, so only the most frequent template has a series.
  std::string body;
  ASSERT_EQ(200, HttpGet(port, "/api/v1/unrecognised", &body));
  const auto doc = nlohmann::json::parse(body);
  ASSERT_EQ(2u, doc["unrecognised"].size()) << body;
  const std::string top = doc["unrecognised"][0]["template_id"];
  EXPECT_EQ(
      2, testing::Sample(
             metrics, "faultline_unrecognised_template_lines_total{template_id=\"" + top + "\"}"));
  EXPECT_EQ(-1, testing::Sample(
                    metrics, "faultline_unrecognised_template_lines_total{template_id=\"" +
                                 doc["unrecognised"][1]["template_id"].get<std::string>() + "\"}"));
  EXPECT_EQ("unrecognised." + top, doc["unrecognised"][0]["signature"]);
  EXPECT_EQ("train", doc["unrecognised"][0]["first"]["source"]);
  EXPECT_EQ(3, doc["lines"]);
  EXPECT_EQ(1, testing::Sample(metrics,
                               "faultline_signature_matches_total{severity=\"error\","
                               "signature=\"t.cuda_oom\"}"));
  // The status page and its JSON show the same templates.
  std::string page;
  ASSERT_EQ(200, HttpGet(port, "/", &page));
  EXPECT_THAT(page, HasSubstr("Unrecognised errors (2 templates, 3 lines)"));
  EXPECT_THAT(page, HasSubstr("<code>" + top + "</code>"));
  ASSERT_EQ(200, HttpGet(port, "/api/v1/status", &body));
  const auto status = nlohmann::json::parse(body);
  EXPECT_EQ(top, status["unrecognised"]["templates"][0]["template_id"]);
  EXPECT_EQ(2, status["unrecognised"]["templates"][0]["count"]);
}

// A reload keeps discovery running: the new rules are compiled with its watch patterns, a line a
// new rule names is no longer unrecognised, the templates and counts stay, and discover.* keeps
// its running values (a restart changes it), with a warning.
TEST_F(Unrecognised, ReloadKeepsDiscoveringUnderTheNewRules) {
  std::filesystem::create_directories(dir_ + "/logs");
  const uint16_t port = testing::FreePort();
  const std::string config =
      "rules:\n  paths: [rules]\n  context_idle_flush_ms: 200\n"
      "http:\n  listen: 127.0.0.1:" +
      std::to_string(port) +
      "\nsources:\n  - id: train\n    type: file\n"
      "    paths: ['logs/*.log']\n    start_at: beginning\n"
      "    poll_interval_ms: 50\n";
  Write("faultline.yaml", config);
  Write("logs/a.log", kLog);
  Daemon agent({"run", "-c", Path("faultline.yaml")});
  std::string metrics;
  const auto unrecognised = [&](double n) {
    return Eventually([&] {
      metrics.clear();
      return HttpGet(port, "/metrics", &metrics) == 200 &&
             testing::Sample(metrics, "faultline_unrecognised_lines_total{source=\"train\"}") == n;
    });
  };
  ASSERT_TRUE(unrecognised(3)) << metrics << agent.Stderr();

  Write("rules/segv.yaml",
        "id: t.segv\ntitle: Segmentation fault\nseverity: error\n"
        "category: runtime\nmatch: ['Segmentation fault']\nroot_cause: r\n"
        "fix: f\n");
  Write("faultline.yaml", config + "discover:\n  max_templates: 5\n");
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Eventually([&] {
    metrics.clear();
    return HttpGet(port, "/metrics", &metrics) == 200 &&
           testing::Sample(metrics, "faultline_config_reloads_total{result=\"success\"}") == 1;
  })) << metrics
      << agent.Stderr();

  std::ofstream(Path("logs/a.log"), std::ios::app)
      << "/bin/bash: line 1: 4243 Segmentation fault      (core dumped) python train.py\n"
         "webdataset.errors.ShardCorruptError: shard /data/train-000999.tar truncated at byte 8\n";
  ASSERT_TRUE(unrecognised(4)) << metrics << agent.Stderr();
  EXPECT_EQ(1, testing::Sample(metrics,
                               "faultline_signature_matches_total{severity=\"error\","
                               "signature=\"t.segv\"}"));
  std::string body;
  ASSERT_EQ(200, HttpGet(port, "/api/v1/unrecognised", &body));
  const auto doc = nlohmann::json::parse(body);
  ASSERT_EQ(2u, doc["unrecognised"].size()) << body;
  EXPECT_EQ(3, doc["unrecognised"][0]["count"]) << body;  // the ShardCorruptError template
  std::string status;
  ASSERT_EQ(200, HttpGet(port, "/api/v1/status", &status));
  EXPECT_THAT(status, HasSubstr("discover.* changes only at a restart"));
}

}  // namespace
}  // namespace faultline
