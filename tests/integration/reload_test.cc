// Hot reload as a user does it: the real agent, its config and rule files edited on disk, then
// SIGHUP, POST /-/reload or (reload.watch) nothing at all; /metrics and /api/v1/status say what
// runs. Counters of rules that stay keep their values, removed rules' series go, new ones start
// at 0, a broken config is rejected with file, line and key while the old one keeps counting.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/integration/process.h"

namespace faultline {
namespace {

using testing::Daemon;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::HttpGet;
using testing::HttpPost;

constexpr char kToken[] = "reload-test-token-0123456789";

std::string RuleYaml(const std::string& id, const std::string& pattern,
                     const std::string& extra = "") {
  return "id: " + id + "\ntitle: " + id + "\nseverity: error\ncategory: runtime\nmatch: ['" +
         pattern + "']\n" + extra + "root_cause: r\nfix: f\n";
}

std::string Matches(const std::string& id, const std::string& severity = "error") {
  return "faultline_signature_matches_total{severity=\"" + severity + "\",signature=\"" + id +
         "\"}";
}

constexpr char kReloadsOk[] = "faultline_config_reloads_total{result=\"success\"}";
constexpr char kReloadsFailed[] = "faultline_config_reloads_total{result=\"failure\"}";

class ReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ + "/rules");
    std::filesystem::create_directories(dir_ + "/logs");
    std::filesystem::create_directories(dir_ + "/build");
    port_ = testing::FreePort();
    std::ofstream(dir_ + "/token") << kToken << "\n";
    chmod((dir_ + "/token").c_str(), 0600);
    WriteRules("a.yaml", RuleYaml("t.oom", "CUDA out of memory") + "---\n" +
                             RuleYaml("t.nccl", "Watchdog caught collective"));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Files are replaced by rename, as editors and configuration management do, so a reload never
  // reads half a file.
  void Replace(const std::string& path, const std::string& text) {
    std::ofstream(path + ".tmp") << text;
    std::filesystem::rename(path + ".tmp", path);
  }
  void WriteRules(const std::string& name, const std::string& yaml) {
    Replace(dir_ + "/rules/" + name, yaml);
  }
  std::string WriteConfig(const std::string& sources, const std::string& extra = "") {
    const std::string path = dir_ + "/faultline.yaml";
    Replace(path,
            "rules:\n  paths: [rules]\n  context_idle_flush_ms: 60000\nhttp:\n  listen: "
            "127.0.0.1:" +
                std::to_string(port_) + "\n  admin_token_file: token\n" + extra + "sources:\n" +
                sources);
    return path;
  }
  static std::string FileSource(const std::string& id, const std::string& glob) {
    return "  - id: " + id + "\n    type: file\n    paths: ['" + glob +
           "']\n    start_at: beginning\n    poll_interval_ms: 50\n";
  }
  void Append(const std::string& path, const std::string& text) {
    std::ofstream(dir_ + "/" + path, std::ios::app | std::ios::binary) << text << std::flush;
  }
  std::string Metrics() {
    std::string body;
    return HttpGet(port_, "/metrics", &body) == 200 ? body : "";
  }
  bool Reaches(const std::string& series, double value) {
    return Eventually([&] { return testing::Sample(Metrics(), series) == value; });
  }
  nlohmann::json Status() {
    std::string body;
    if (HttpGet(port_, "/api/v1/status", &body) != 200) return nlohmann::json();
    return nlohmann::json::parse(body);
  }

  std::string dir_;
  uint16_t port_ = 0;
};

TEST_F(ReloadTest, SighupKeepsCountersOfRulesThatStayDropsRemovedOnesAndStartsNewOnesAtZero) {
  Daemon agent({"run", "-c", WriteConfig(FileSource("train", "logs/*.log"))});
  Append("logs/a.log", "CUDA out of memory\nok\nCUDA out of memory\nWatchdog caught collective\n");
  ASSERT_TRUE(Reaches(Matches("t.oom"), 2)) << agent.Stderr();
  ASSERT_TRUE(Reaches(Matches("t.nccl"), 1));
  EXPECT_EQ(1, testing::Sample(Metrics(), "faultline_config_last_reload_successful"));
  const double started =
      testing::Sample(Metrics(), "faultline_config_last_reload_success_timestamp_seconds");
  EXPECT_GT(started, 1.7e9);

  WriteRules("a.yaml", RuleYaml("t.oom", "CUDA out of memory") + "---\n" +
                           RuleYaml("t.new", "brand new failure"));
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Reaches(kReloadsOk, 1)) << agent.Stderr();
  const std::string after = Metrics();
  EXPECT_EQ(2, testing::Sample(after, Matches("t.oom")));
  EXPECT_EQ(-1, testing::Sample(after, Matches("t.nccl")));  // its series went with it
  EXPECT_EQ(0, testing::Sample(after, Matches("t.new")));
  EXPECT_EQ(2, testing::Sample(after, "faultline_rules_loaded"));
  EXPECT_EQ(0, testing::Sample(after, kReloadsFailed));
  EXPECT_GE(testing::Sample(after, "faultline_config_last_reload_success_timestamp_seconds"),
            started);

  Append("logs/a.log", "brand new failure\nCUDA out of memory\nWatchdog caught collective\n");
  ASSERT_TRUE(Reaches(Matches("t.oom"), 3)) << agent.Stderr();
  ASSERT_TRUE(Reaches(Matches("t.new"), 1));
  EXPECT_EQ(7, testing::Sample(Metrics(), "faultline_lines_total{source=\"train\"}"));

  const nlohmann::json status = Status();
  EXPECT_EQ(true, status["reloads"]["last"]["ok"]);
  EXPECT_EQ("SIGHUP", status["reloads"]["last"]["trigger"]);
  for (const auto& s : status["signatures"]) EXPECT_NE("t.nccl", s["rule_id"]);
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(ReloadTest, AnInvalidConfigIsRejectedWithFileLineAndKeyAndTheOldOneKeepsCounting) {
  const std::string config = WriteConfig(FileSource("train", "logs/*.log"));
  Daemon agent({"run", "-c", config});
  Append("logs/a.log", "CUDA out of memory\n");
  ASSERT_TRUE(Reaches(Matches("t.oom"), 1)) << agent.Stderr();

  WriteRules("b.yaml", RuleYaml("t.bad", "(unclosed"));
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Reaches(kReloadsFailed, 1)) << agent.Stderr();
  EXPECT_EQ(0, testing::Sample(Metrics(), "faultline_config_last_reload_successful"));
  nlohmann::json last = Status()["reloads"]["last"];
  EXPECT_EQ(false, last["ok"]);
  ASSERT_FALSE(last["errors"].empty());
  EXPECT_THAT(last["errors"][0].get<std::string>(), HasSubstr(dir_ + "/rules/b.yaml:"));
  EXPECT_THAT(last["errors"][0].get<std::string>(), HasSubstr("t.bad"));

  std::filesystem::remove(dir_ + "/rules/b.yaml");
  WriteConfig(FileSource("train", "logs/*.log") + "    colour: red\n");
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Reaches(kReloadsFailed, 2)) << agent.Stderr();
  last = Status()["reloads"]["last"];
  EXPECT_THAT(last["errors"][0].get<std::string>(),
              HasSubstr(config + ":13: key 'sources[0].colour'"));

  // The old rules still count, and the page says what happened.
  Append("logs/a.log", "CUDA out of memory\n");
  ASSERT_TRUE(Reaches(Matches("t.oom"), 2)) << agent.Stderr();
  EXPECT_EQ(0, testing::Sample(Metrics(), kReloadsOk));
  std::string page;
  ASSERT_EQ(200, HttpGet(port_, "/", &page));
  EXPECT_THAT(page, HasSubstr("0 applied, 2 rejected"));
  EXPECT_THAT(page, HasSubstr("key &#39;sources[0].colour&#39;"));
  EXPECT_TRUE(agent.running());
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(ReloadTest, HttpReloadNeedsTheAdminTokenAndAnswersWithTheOutcome) {
  const std::string config = WriteConfig(FileSource("train", "logs/*.log"));
  Daemon agent({"run", "-c", config});
  ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); })) << agent.Stderr();
  std::string body;
  EXPECT_EQ(401, HttpPost(port_, "/-/reload", "", &body));
  EXPECT_EQ(401, HttpPost(port_, "/-/reload", "not-the-token-at-all", &body));
  EXPECT_EQ(405, HttpGet(port_, "/-/reload", &body));
  EXPECT_EQ(0, testing::Sample(Metrics(), kReloadsOk));

  ASSERT_EQ(200, HttpPost(port_, "/-/reload", kToken, &body)) << body;
  EXPECT_EQ("reload applied: 2 rules, 1 source(s)\n", body);
  EXPECT_EQ(1, testing::Sample(Metrics(), kReloadsOk));

  WriteConfig(FileSource("train", "logs/*.log"), "reload:\n  timeout_ms: 5\n");
  ASSERT_EQ(422, HttpPost(port_, "/-/reload", kToken, &body)) << body;
  EXPECT_THAT(body, HasSubstr("reload rejected; the running config is kept:\n"));
  EXPECT_THAT(body, HasSubstr(config + ":8: key 'reload.timeout_ms': must be from 1000"));
  EXPECT_EQ(1, testing::Sample(Metrics(), kReloadsFailed));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(ReloadTest, SourcesAddedAndRemovedStartAndStopWithoutTouchingTheOthers) {
  Daemon agent({"run", "-c", WriteConfig(FileSource("train", "logs/*.log"))});
  Append("logs/a.log", "one\ntwo\nCUDA out of memory\n");
  ASSERT_TRUE(Reaches("faultline_lines_total{source=\"train\"}", 3)) << agent.Stderr();
  Append("build/x.txt", "x\nWatchdog caught collective\n");

  kill(agent.pid(), SIGHUP);  // nothing changed
  ASSERT_TRUE(Reaches(kReloadsOk, 1)) << agent.Stderr();
  WriteConfig(FileSource("train", "logs/*.log") + FileSource("build", "build/*.txt"));
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Reaches(kReloadsOk, 2)) << agent.Stderr();
  ASSERT_TRUE(Reaches("faultline_lines_total{source=\"build\"}", 2)) << agent.Stderr();
  ASSERT_TRUE(Reaches(Matches("t.nccl"), 1));
  // train was not restarted: start_at beginning would have read its 3 lines again.
  Append("logs/a.log", "CUDA out of memory\n");
  ASSERT_TRUE(Reaches(Matches("t.oom"), 2));
  EXPECT_EQ(4, testing::Sample(Metrics(), "faultline_lines_total{source=\"train\"}"));

  WriteConfig(FileSource("build", "build/*.txt"));
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Reaches(kReloadsOk, 3)) << agent.Stderr();
  const nlohmann::json status = Status();
  ASSERT_EQ(1u, status["sources"].size());
  EXPECT_EQ("build", status["sources"][0]["id"]);
  Append("logs/a.log", "CUDA out of memory\n");  // no longer followed
  Append("build/x.txt", "CUDA out of memory\n");
  ASSERT_TRUE(Reaches("faultline_lines_total{source=\"build\"}", 3));
  EXPECT_EQ(3, testing::Sample(Metrics(), Matches("t.oom")));
  EXPECT_EQ(4, testing::Sample(Metrics(), "faultline_lines_total{source=\"train\"}"));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(ReloadTest, APendingHitWaitsAcrossAReloadAndIsCountedOnce) {
  const std::string aio =
      RuleYaml("t.aio", "LNK1181.*aio",
               "context:\n  within_lines: 100\n  requires_any: ['Unable to pre-compile async_io']\n"
               "  unconfirmed_severity: warning\n");
  WriteRules("a.yaml", aio);
  Daemon agent({"run", "-c", WriteConfig(FileSource("train", "logs/*.log"))});
  Append("logs/a.log", "LINK : fatal error LNK1181: cannot open input file 'aio.lib'\n");
  ASSERT_TRUE(Reaches("faultline_lines_total{source=\"train\"}", 1)) << agent.Stderr();
  WriteRules("a.yaml", RuleYaml("t.new", "brand new failure") + "---\n" + aio);
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Reaches(kReloadsOk, 1)) << agent.Stderr();
  Append("logs/a.log", "AssertionError: Unable to pre-compile async_io\n");
  ASSERT_TRUE(Reaches(Matches("t.aio"), 1)) << Metrics() << agent.Stderr();
  // Never settled unconfirmed: no warning series was ever made.
  EXPECT_EQ(-1, testing::Sample(Metrics(), Matches("t.aio", "warning")));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(ReloadTest, WatchReloadsWhenARuleFileChanges) {
  Daemon agent(
      {"run", "-c", WriteConfig(FileSource("train", "logs/*.log"), "reload:\n  watch: true\n")});
  ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); })) << agent.Stderr();
  WriteRules("c.yaml", RuleYaml("t.watched", "watched failure"));
  ASSERT_TRUE(Reaches(Matches("t.watched"), 0)) << agent.Stderr();
  EXPECT_EQ(1, testing::Sample(Metrics(), kReloadsOk));
  EXPECT_EQ("file change", Status()["reloads"]["last"]["trigger"]);
  Append("logs/a.log", "a watched failure\n");
  ASSERT_TRUE(Reaches(Matches("t.watched"), 1));
  // A broken save is rejected; fixing it reloads again.
  WriteRules("c.yaml", "id: [\n");
  ASSERT_TRUE(Reaches(kReloadsFailed, 1)) << agent.Stderr();
  WriteRules("c.yaml", RuleYaml("t.watched", "watched failure"));
  ASSERT_TRUE(Reaches(kReloadsOk, 2)) << agent.Stderr();
  EXPECT_EQ(1, testing::Sample(Metrics(), Matches("t.watched")));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

// A rule pack whose Vectorscan compile needs far more memory than the database it leaves: 300
// patterns of two wide counted repetitions each (about 45 MiB of resident growth while compiling
// on the CI machine, and under 1 MiB of database). The compile is not cached: the cache folder is
// the test's own, empty at the start.
std::string CountedRepetitions(int n) {
  std::string yaml;
  for (int i = 0; i < n; ++i) {
    if (i > 0) yaml += "---\n";
    const std::string id = std::to_string(i);
    yaml += RuleYaml("big.r" + id, "err" + id + "[a-f0-9]{20,300}x[^ ]{50,200}y" + id);
  }
  return yaml;
}

TEST_F(ReloadTest, AReloadWhoseCompileNeedsMoreThanTheMemoryBudgetIsRejected) {
  const std::string cache = dir_ + "/cache";
  std::filesystem::create_directories(cache);
  chmod(cache.c_str(), 0700);
  const std::string budget = "reload:\n  timeout_ms: 120000\n  max_memory_bytes: 33554432\n";
  Daemon agent({"run", "-c", WriteConfig(FileSource("train", "logs/*.log"), budget)}, 0, {},
               [&] { setenv("FAULTLINE_CACHE_DIR", cache.c_str(), 1); });
  Append("logs/a.log", "CUDA out of memory\n");
  ASSERT_TRUE(Reaches(Matches("t.oom"), 1)) << agent.Stderr();

  WriteRules("big.yaml", CountedRepetitions(300));
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Eventually([&] { return testing::Sample(Metrics(), kReloadsFailed) == 1; },
                         std::chrono::seconds(120)))
      << agent.Stderr();
  const nlohmann::json last = Status()["reloads"]["last"];
  EXPECT_EQ(false, last["ok"]);
  ASSERT_EQ(1u, last["errors"].size());
  const std::string error = last["errors"][0].get<std::string>();
  EXPECT_THAT(error, HasSubstr("key 'reload.max_memory_bytes'"));
  EXPECT_THAT(error, HasSubstr("more than the budget of 32 MiB"));
  // The peak is what was over the budget: the heap the pack holds once compiled was not.
  std::smatch figures;
  ASSERT_TRUE(std::regex_search(
      error, figures, std::regex("rose by ([0-9]+) MiB at its peak; ([0-9]+) MiB of heap held")))
      << error;
  const int peak = std::stoi(figures[1]);
  const int held = std::stoi(figures[2]);
  EXPECT_GT(peak, 32) << error;
  EXPECT_LT(held, 32) << error;
  std::cerr << "rejected pack: peak " << peak << " MiB, held " << held << " MiB\n";
  EXPECT_EQ(0, testing::Sample(Metrics(), kReloadsOk));
  EXPECT_EQ(2, testing::Sample(Metrics(), "faultline_rules_loaded"));
  EXPECT_EQ(-1, testing::Sample(Metrics(), Matches("big.r0")));

  // The old rules still count, exactly.
  Append("logs/a.log", "CUDA out of memory\nok\nerr0abcdefabcdefabcdefabcdefx" +
                           std::string(60, 'q') + "y0\nWatchdog caught collective\n");
  ASSERT_TRUE(Reaches(Matches("t.nccl"), 1)) << agent.Stderr();
  EXPECT_EQ(2, testing::Sample(Metrics(), Matches("t.oom")));
  EXPECT_EQ(5, testing::Sample(Metrics(), "faultline_lines_total{source=\"train\"}"));

  // A small pack under the same budget is taken.
  std::filesystem::remove(dir_ + "/rules/big.yaml");
  WriteRules("b.yaml", RuleYaml("t.new", "brand new failure"));
  kill(agent.pid(), SIGHUP);
  ASSERT_TRUE(Reaches(kReloadsOk, 1)) << agent.Stderr();
  EXPECT_EQ(3, testing::Sample(Metrics(), "faultline_rules_loaded"));
  Append("logs/a.log", "brand new failure\n");
  ASSERT_TRUE(Reaches(Matches("t.new"), 1)) << agent.Stderr();
  EXPECT_EQ(2, testing::Sample(Metrics(), Matches("t.oom")));
  EXPECT_EQ(1, testing::Sample(Metrics(), kReloadsFailed));
  EXPECT_THAT(agent.Stderr(), HasSubstr("memory peak"));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

}  // namespace
}  // namespace faultline
