#include "agent/cmd/rule_draft.h"

#include <re2/re2.h>

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/discover/masker.h"
#include "agent/rules/pattern_syntax.h"
#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The template stats Discovery would keep for `lines`, all of one template.
TemplateStats Stats(const std::vector<std::string>& lines, ErrorCue cue) {
  Discovery discovery;
  for (size_t i = 0; i < lines.size(); ++i) {
    discovery.Record({cue, "", "train.log", i + 1, lines[i]});
  }
  EXPECT_EQ(1u, discovery.size());
  return *discovery.Sorted()[0];
}

bool Matches(const std::string& pattern, const std::string& line) {
  const RE2 re(pattern, RulePatternOptions());
  EXPECT_TRUE(re.ok()) << pattern << ": " << re.error();
  return RE2::PartialMatch(line, re);
}

TEST(DraftPattern, StartsAtTheExceptionNameAndEscapesFixedTokens) {
  const TemplateStats t = Stats({"[rank3]: torch.OutOfMemoryError: CUDA out of memory (12 GiB)",
                                 "[rank5]: torch.OutOfMemoryError: CUDA out of memory (8 GiB)"},
                                ErrorCue::kException);
  const std::string pattern = DraftPattern(std::vector<std::string>{"[rank<*>]:", "torch.OutOfMemoryError:", "CUDA", "out", "of", "memory", "(<*>", "GiB)"}, ErrorCue::kException);
  EXPECT_EQ(R"(torch\.OutOfMemoryError\:\s+CUDA\s+out\s+of\s+memory\s+\(\S{1,128}\s+GiB\))",
            pattern);
  // No rank prefix in the pattern: the rule fires on every rank, and without a prefix.
  EXPECT_TRUE(Matches(pattern, "torch.OutOfMemoryError: CUDA out of memory (3 GiB)"));
  EXPECT_FALSE(Matches(pattern, "torch.OutOfMemoryError: CUDA out of time (3 GiB)"));
  const RuleDraft draft = DraftRule(t, "train.log");
  EXPECT_EQ("local.out_of_memory_error.cuda_out_memory", draft.id);
  for (const std::string& e : t.examples) EXPECT_TRUE(Matches(draft.pattern, e)) << e;
}

TEST(DraftPattern, AWholeTokenVariableMayStandForSeveralTokensOrNone) {
  std::vector<std::string> tokens;
  MaskLine("x.y:443 close, 0 bytes sent, 0 bytes received, lifetime 00:02", tokens);
  // As the miner leaves it after aligning lines of two lengths.
  const std::vector<std::string> merged = {"<*>",   "close,", "<*>", "bytes",    "sent,", "<*>",
                                           "bytes", "<*>",    "received,", "lifetime", "<*>"};
  const std::string pattern = DraftPattern(merged, ErrorCue::kFailure);
  EXPECT_TRUE(Matches(pattern, "a:1 close, 0 bytes sent, 0 bytes received, lifetime 00:02"));
  EXPECT_TRUE(Matches(pattern, "a:1 close, 9 bytes sent, 18846 bytes (18.4 KB) received, lifetime <1 sec"));
  EXPECT_THAT(pattern, Not(HasSubstr(".*")));  // every wildcard is bounded
  EXPECT_THAT(pattern, HasSubstr(".{0,256}?"));
}

TEST(DraftRule, IsARuleTheLoaderRejectsOnlyForItsPlaceholders) {
  const TemplateStats t = Stats({"ERROR: disk quota exceeded on /scratch/u1/run3",
                                 "ERROR: disk quota exceeded on /scratch/u2/run9"},
                                ErrorCue::kErrorLevel);
  const RuleDraft draft = DraftRule(t, "train.log");
  EXPECT_EQ("local.error.disk_quota_exceeded", draft.id);
  EXPECT_THAT(draft.yaml, HasSubstr("template " + t.id + " (2 lines, error_level)"));
  Result<std::vector<Rule>> unfinished = ParseRules(draft.yaml, "draft.yaml");
  ASSERT_FALSE(unfinished.ok());
  ASSERT_EQ(2u, unfinished.errors().size()) << FormatErrors(unfinished.errors());
  std::string finished = draft.yaml;
  for (const char* key : {"root_cause: 'FILL IN:", "fix: 'FILL IN:"}) {
    finished.replace(finished.find(key) + std::string(key).find('F'), 8, "Written.");
  }
  Result<std::vector<Rule>> rules = ParseRules(finished, "draft.yaml");
  ASSERT_TRUE(rules.ok()) << FormatErrors(rules.errors()) << finished;
  const Rule& r = rules.value()[0];
  EXPECT_EQ(Severity::kError, r.severity);
  EXPECT_EQ("runtime", r.category);
  ASSERT_EQ(2u, r.examples.match.size());
  EXPECT_EQ("ERROR: disk quota exceeded on /scratch/u1/run3", r.examples.match[0]);
  EXPECT_TRUE(Matches(r.match_lines[0], "ERROR: disk quota exceeded on /home/x"));
}

TEST(DraftRule, QuotesAndControlBytesAreSafeInYaml) {
  const TemplateStats t = Stats({"Segmentation fault in 'it''s' \x01 worker"}, ErrorCue::kSignal);
  const RuleDraft draft = DraftRule(t, "a\x1b.log");
  EXPECT_THAT(draft.yaml, HasSubstr("example line(s) left out"));
  EXPECT_THAT(draft.yaml, Not(HasSubstr("\x01")));
  EXPECT_THAT(draft.yaml, Not(HasSubstr("\x1b")));
  Result<std::vector<Rule>> rules = ParseRules(draft.yaml, "draft.yaml");
  ASSERT_FALSE(rules.ok());
  for (const Error& e : rules.errors()) EXPECT_THAT(e.message, HasSubstr("placeholder"));
}

}  // namespace
}  // namespace faultline
