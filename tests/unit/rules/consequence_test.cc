#include "agent/rules/consequence.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

Rule MakeRule(const std::string& id, const std::string& category,
              RuleRole role = RuleRole::kRoot, std::vector<std::string> consequence_of = {}) {
  Rule r;
  r.id = id;
  r.category = category;
  r.role = role;
  r.consequence_of = std::move(consequence_of);
  return r;
}

TEST(Consequence, SymptomWithoutListIsAConsequenceOfAnyRoot) {
  const Rule stopped = MakeRule("build.ninja.build_stopped", "build", RuleRole::kSymptom);
  EXPECT_TRUE(IsConsequenceOf(stopped, MakeRule("build.nvcc.unsupported_gpu_arch", "build")));
  EXPECT_TRUE(IsConsequenceOf(stopped, MakeRule("gpu.cuda.out_of_memory", "memory")));
}

TEST(Consequence, ListNamesIdsFamiliesAndCategories) {
  const Rule watchdog = MakeRule("distributed.nccl.watchdog_timeout", "distributed",
                                 RuleRole::kSymptom, {"gpu.", "category:memory", "x.exact_id"});
  EXPECT_TRUE(IsConsequenceOf(watchdog, MakeRule("gpu.cuda.illegal_memory_access", "runtime")));
  EXPECT_TRUE(IsConsequenceOf(watchdog, MakeRule("memory.host.oom_killer", "memory")));
  EXPECT_TRUE(IsConsequenceOf(watchdog, MakeRule("x.exact_id", "build")));
  EXPECT_FALSE(IsConsequenceOf(watchdog, MakeRule("x.exact_id_longer", "build")));
  EXPECT_FALSE(IsConsequenceOf(watchdog, MakeRule("gpux.cuda.error", "runtime")));  // not 'gpu.'
  EXPECT_FALSE(IsConsequenceOf(watchdog, MakeRule("build.ninja.failed", "build")));
}

TEST(Consequence, RootsAreNobodysConsequenceAndNothingExplainsItself) {
  const Rule oom = MakeRule("gpu.cuda.out_of_memory", "memory");
  const Rule child = MakeRule("distributed.elastic.child_failed", "distributed",
                              RuleRole::kSymptom);
  EXPECT_FALSE(IsConsequenceOf(oom, child));
  EXPECT_FALSE(IsConsequenceOf(child, child));
  // Whether a symptom may explain another is the caller's decision (a stand-in root).
  const Rule watchdog = MakeRule("distributed.nccl.watchdog_timeout", "distributed",
                                 RuleRole::kSymptom);
  EXPECT_TRUE(IsConsequenceOf(child, watchdog));
}

TEST(CanExplain, ALesserFindingDoesNotExplainAFailure) {
  const Rule watchdog = MakeRule("distributed.nccl.watchdog_timeout", "distributed",
                                 RuleRole::kSymptom, {"gpu."});
  const Rule oom = MakeRule("gpu.cuda.out_of_memory", "memory");
  EXPECT_TRUE(CanExplain(watchdog, Severity::kError, oom, Severity::kError));
  EXPECT_TRUE(CanExplain(watchdog, Severity::kCritical, oom, Severity::kError));
  EXPECT_TRUE(CanExplain(watchdog, Severity::kError, oom, Severity::kCritical));
  EXPECT_TRUE(CanExplain(watchdog, Severity::kWarning, oom, Severity::kError));
  EXPECT_TRUE(CanExplain(watchdog, Severity::kWarning, oom, Severity::kWarning));
  EXPECT_TRUE(CanExplain(watchdog, Severity::kInfo, oom, Severity::kWarning));
  EXPECT_TRUE(CanExplain(watchdog, Severity::kWarning, oom, Severity::kInfo));
  EXPECT_FALSE(CanExplain(watchdog, Severity::kError, oom, Severity::kWarning));
  EXPECT_FALSE(CanExplain(watchdog, Severity::kCritical, oom, Severity::kInfo));
}

TEST(CanExplain, SeverityNeverMakesAConsequenceOfWhatTheRuleDoesNotName) {
  const Rule watchdog = MakeRule("distributed.nccl.watchdog_timeout", "distributed",
                                 RuleRole::kSymptom, {"gpu.", "category:memory"});
  const Rule ninja = MakeRule("build.ninja.failed", "build");
  EXPECT_FALSE(CanExplain(watchdog, Severity::kWarning, ninja, Severity::kCritical));
  EXPECT_TRUE(CanExplain(watchdog, Severity::kError,
                         MakeRule("memory.host.oom_killer", "memory"), Severity::kCritical));
  const Rule oom = MakeRule("gpu.cuda.out_of_memory", "memory");
  EXPECT_FALSE(CanExplain(oom, Severity::kWarning, watchdog, Severity::kCritical));  // a root
  EXPECT_FALSE(CanExplain(watchdog, Severity::kWarning, watchdog, Severity::kCritical));
}

}  // namespace
}  // namespace faultline
