// The bundled pack on real multi-rank logs from public threads (tests/data/multirank/README.md):
// the report names the rank and host that failed first, lists the ranks each finding was seen on,
// and puts the launcher's reaction under the failure that caused it.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/process.h"

namespace faultline {
namespace {

using ::testing::HasSubstr;
using testing::RunFaultline;

const std::string kMultirankRules = std::string(FAULTLINE_SOURCE_DIR) + "/rules";
const std::string kLogs = std::string(FAULTLINE_SOURCE_DIR) + "/tests/data/multirank/";

nlohmann::json ScanJson(const std::string& log) {
  const auto r = RunFaultline({"scan", "--rules", kMultirankRules, "--format", "json", kLogs + log});
  EXPECT_EQ(1, r.exit_code) << r.err;
  return nlohmann::json::parse(r.out);
}

// The finding of `signature` in `doc`; fails the test when there is none.
nlohmann::json Finding(const nlohmann::json& doc, const std::string& signature) {
  for (const auto& f : doc["findings"]) {
    if (f["signature"] == signature) return f;
  }
  ADD_FAILURE() << "no " << signature << " in " << doc.dump(1);
  return nlohmann::json::object();
}

TEST(MultiRank, OomOnRankElevenIsTheFirstFailure) {
  const auto doc = ScanJson("ms-swift-6301-zero3-oom-rank11.log");
  EXPECT_EQ("gpu.cuda.out_of_memory", doc["first_failure"]["signature"]);
  EXPECT_EQ(11, doc["first_failure"]["rank"]);
  EXPECT_EQ(5, doc["first_failure"]["line"]);
  EXPECT_EQ(std::vector<int>{11}, Finding(doc, "gpu.cuda.out_of_memory")["ranks"]);
}

TEST(MultiRank, WatchdogTimeoutsThatNothingExplainsAreTheRootOfTheLauncherFailure) {
  const auto doc = ScanJson("llamafactory-7396-watchdog-every-rank.log");
  const auto watchdog = Finding(doc, "distributed.nccl.watchdog_timeout");
  EXPECT_EQ("root", watchdog["role"]);
  EXPECT_EQ((std::vector<int>{0, 4}), watchdog["ranks"]);
  const auto child = Finding(doc, "distributed.elastic.child_failed");
  EXPECT_EQ("consequence", child["role"]);
  EXPECT_EQ(doc["first_failure"]["signature"], "distributed.nccl.watchdog_timeout");
  EXPECT_EQ(0, doc["first_failure"]["rank"]);
  EXPECT_EQ(1, doc["first_failure"]["line"]);
}

TEST(MultiRank, RanksNamedInsideNcclMessagesAreListed) {
  const auto doc = ScanJson("pytorch-118369-deepspeed-watchdog-broadcast.log");
  EXPECT_EQ((std::vector<int>{2, 3, 4, 5, 6}),
            Finding(doc, "distributed.nccl.watchdog_timeout")["ranks"]);
  EXPECT_EQ(2, doc["first_failure"]["rank"]);  // the first timeout printed
  const auto text = RunFaultline({"scan", "--rules", kMultirankRules,
                                  kLogs + "pytorch-118369-deepspeed-watchdog-broadcast.log"});
  EXPECT_THAT(text.out, HasSubstr("\nfirst failing rank: 2  (distributed.nccl.watchdog_timeout, "));
  EXPECT_THAT(text.out, HasSubstr("  ranks:      2, 3, 4, 5, 6\n"));
}

TEST(MultiRank, IllegalMemoryAccessInTheWatchdogThreadIsRankZerosGpuFailure) {
  const auto doc = ScanJson("vllm-6042-illegal-memory-access-rank0.log");
  EXPECT_EQ("gpu.cuda.illegal_memory_access", doc["first_failure"]["signature"]);
  EXPECT_EQ(0, doc["first_failure"]["rank"]);
  EXPECT_EQ("root", Finding(doc, "gpu.cuda.illegal_memory_access")["role"]);
}

TEST(MultiRank, IndentedQuoteKeepsItsRankPrefixes) {
  const auto doc = ScanJson("nccl-1409-accelerate-watchdog-ranks.log");
  EXPECT_EQ((std::vector<int>{3, 7}), Finding(doc, "distributed.nccl.watchdog_timeout")["ranks"]);
  EXPECT_EQ(7, doc["first_failure"]["rank"]);
}

TEST(MultiRank, TorchrunSummaryNamesRankAndHost) {
  const auto doc = ScanJson("llamafactory-6827-childfailed-summary.log");
  const auto child = Finding(doc, "distributed.elastic.child_failed");
  EXPECT_EQ(std::vector<int>{0}, child["ranks"]);
  EXPECT_EQ(std::vector<std::string>{"localhost.com"}, child["hosts"]);
  EXPECT_EQ(0, doc["first_failure"]["rank"]);
  EXPECT_EQ("localhost.com", doc["first_failure"]["host"]);
  const auto text =
      RunFaultline({"scan", "--rules", kMultirankRules, kLogs + "llamafactory-6827-childfailed-summary.log"});
  EXPECT_THAT(text.out, HasSubstr("first failing rank: 0 on host localhost.com"));
}

}  // namespace
}  // namespace faultline
