// `faultline scan` telling a root cause from its consequences, and naming where the failure
// started: rules with role/consequence_of, rank and host prefixes, the report's text and JSON.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_folder.h"
#include "tests/integration/process.h"

namespace faultline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunFaultline;

constexpr char kGroupingRules[] = R"(id: g.oom
title: GPU out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
---
id: g.compile
title: compile error
severity: error
category: build
match: ['error: identifier "\w+" is undefined']
root_cause: r
fix: f
---
id: g.watchdog
title: collective timed out
severity: error
category: distributed
consequence_of: ['g.oom']
match: ['Watchdog caught collective operation timeout']
root_cause: r
fix: f
---
id: g.stopped
title: build stopped
severity: error
category: build
consequence_of: ['category:build']
match: ['ninja: build stopped']
root_cause: r
fix: f
---
id: g.summary
title: a subprocess failed
severity: error
category: build
role: symptom
match: ['subprocess-exited-with-error']
root_cause: r
fix: f
---
id: g.hint
title: fragmentation hint
severity: warning
category: memory
match: ['fragmentation hint']
root_cause: r
fix: f
)";

class ScanGroupingTest : public testing::AgentFolderTest {
 protected:
  void SetUp() override {
    AgentFolderTest::SetUp();
    WriteFile("rules/g.yaml", kGroupingRules);
  }
  std::string Write(const std::string& text) {
    std::ofstream(dir_ + "/job.log", std::ios::binary) << text;
    return dir_ + "/job.log";
  }
  testing::Completed Scan(const std::string& log, bool json) {
    std::vector<std::string> args = {"scan", "--rules", dir_ + "/rules"};
    if (json) args.insert(args.end(), {"--format", "json"});
    args.push_back(log);
    return RunFaultline(args);
  }
  nlohmann::json Json(const std::string& log) { return nlohmann::json::parse(Scan(log, true).out); }
};

constexpr char kOomThenTimeouts[] =
    "[rank0]:[E321 02:07:08 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE)\n"
    "node07: [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB\n"
    "[rank1]:[E321 02:07:08 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE)\n";

TEST_F(ScanGroupingTest, ConsequenceIsListedUnderItsRootWithCausedBy) {
  const auto doc = Json(Write(kOomThenTimeouts));
  ASSERT_EQ(2u, doc["findings"].size());
  const auto& root = doc["findings"][0];
  const auto& consequence = doc["findings"][1];
  EXPECT_EQ("g.oom", root["signature"]);
  EXPECT_EQ("root", root["role"]);
  EXPECT_EQ(std::vector<std::string>{"g.watchdog"}, root["consequences"]);
  EXPECT_FALSE(root.contains("caused_by"));
  EXPECT_EQ("g.watchdog", consequence["signature"]);
  EXPECT_EQ("consequence", consequence["role"]);
  // The root is after the symptom's first line: no root before it, so the earliest in the log.
  EXPECT_EQ("g.oom", consequence["caused_by"]);
  EXPECT_EQ((std::vector<int>{0, 1}), consequence["ranks"]);
  EXPECT_EQ((std::vector<int>{3}), root["ranks"]);
  EXPECT_EQ(std::vector<std::string>{"node07"}, root["hosts"]);
}

TEST_F(ScanGroupingTest, FirstFailureIsTheEarliestRootNotTheEarliestLine) {
  const auto doc = Json(Write(kOomThenTimeouts));
  const auto& first = doc["first_failure"];
  EXPECT_EQ("g.oom", first["signature"]);
  EXPECT_EQ(3, first["rank"]);
  EXPECT_EQ("node07", first["host"]);
  EXPECT_EQ(2, first["line"]);
  EXPECT_EQ(dir_ + "/job.log", first["file"]);
}

TEST_F(ScanGroupingTest, TextPutsTheRootFirstAndItsConsequencesUnderIt) {
  const auto r = Scan(Write(kOomThenTimeouts), false);
  EXPECT_EQ(1, r.exit_code);
  EXPECT_THAT(r.out, HasSubstr("2 findings in " + dir_ +
                               "/job.log (3 lines): 1 root cause, "
                               "1 consequence\n"));
  EXPECT_THAT(r.out,
              HasSubstr("first failing rank: 3 on host node07  (g.oom, " + dir_ + "/job.log:2)\n"));
  const size_t root = r.out.find("ERROR  GPU out of memory");
  const size_t under = r.out.find(
      "  consequences (explained by the failure above):\n"
      "    ERROR  collective timed out\n"
      "      signature:  g.watchdog  (2 lines)\n"
      "      ranks:      0, 1\n");
  ASSERT_NE(std::string::npos, root) << r.out;
  ASSERT_NE(std::string::npos, under) << r.out;
  EXPECT_LT(root, under);
}

TEST_F(ScanGroupingTest, TheEarliestRootBeforeTheSymptomExplainsIt) {
  const auto doc =
      Json(Write("CUDA out of memory\n"
                 "kernel.cu(3): error: identifier \"foo\" is undefined\n"
                 "error: subprocess-exited-with-error\n"));
  ASSERT_EQ(3u, doc["findings"].size());
  EXPECT_EQ("g.summary", doc["findings"][1]["signature"]);
  EXPECT_EQ("g.oom", doc["findings"][1]["caused_by"]);
  EXPECT_EQ("g.compile", doc["findings"][2]["signature"]);
  EXPECT_EQ("root", doc["findings"][2]["role"]);
}

TEST_F(ScanGroupingTest, ASymptomOnlyItsOwnListExplainsStaysARoot) {
  // consequence_of names category build; the OOM is memory.
  const auto doc = Json(Write("CUDA out of memory\nninja: build stopped: subcommand failed.\n"));
  ASSERT_EQ(2u, doc["findings"].size());
  EXPECT_EQ("root", doc["findings"][0]["role"]);
  EXPECT_EQ("root", doc["findings"][1]["role"]);
  EXPECT_EQ("g.stopped", doc["findings"][1]["signature"]);
}

TEST_F(ScanGroupingTest, AnUnexplainedSymptomExplainsTheSymptomsAfterIt) {
  // No compile error was recognised: ninja's line is all the log says, and pip's summary after
  // it is its consequence.
  const auto doc =
      Json(Write("ninja: build stopped: subcommand failed.\n"
                 "error: subprocess-exited-with-error\n"));
  ASSERT_EQ(2u, doc["findings"].size());
  EXPECT_EQ("g.stopped", doc["findings"][0]["signature"]);
  EXPECT_EQ("root", doc["findings"][0]["role"]);
  EXPECT_EQ("g.stopped", doc["findings"][1]["caused_by"]);
  EXPECT_EQ("g.stopped", doc["first_failure"]["signature"]);
}

TEST_F(ScanGroupingTest, AWarningDoesNotExplainAnError) {
  const auto doc = Json(Write("fragmentation hint\nerror: subprocess-exited-with-error\n"));
  ASSERT_EQ(2u, doc["findings"].size());
  EXPECT_EQ("g.summary", doc["findings"][0]["signature"]);
  EXPECT_EQ("root", doc["findings"][0]["role"]);
  EXPECT_EQ("g.hint", doc["findings"][1]["signature"]);
}

TEST_F(ScanGroupingTest, NoFailureMeansNoFirstFailure) {
  const std::string log = Write("[rank2]: fragmentation hint\n");
  const auto doc = Json(log);
  EXPECT_TRUE(doc["first_failure"].is_null());
  EXPECT_EQ((std::vector<int>{2}), doc["findings"][0]["ranks"]);
  const auto r = Scan(log, false);
  EXPECT_EQ(0, r.exit_code);
  EXPECT_THAT(r.out, Not(HasSubstr("first failing")));
}

TEST_F(ScanGroupingTest, RanksAreBoundedPerFinding) {
  std::string text;
  for (int rank = 0; rank < 100; ++rank) {
    text += "[rank" + std::to_string(rank) + "]: CUDA out of memory\n";
  }
  const auto doc = Json(Write(text));
  const auto& oom = doc["findings"][0];
  EXPECT_EQ(100, oom["count"]);
  EXPECT_EQ(64u, oom["ranks"].size());
  EXPECT_EQ(true, oom["ranks_truncated"]);
  EXPECT_EQ(0, doc["first_failure"]["rank"]);
}

}  // namespace
}  // namespace faultline
