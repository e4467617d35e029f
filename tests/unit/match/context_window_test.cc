// Patterns that only context conditions use are matched only near the hits that need them
// (PatternSet's window tiers, StreamMatcher::MatchWindows). These tests hold that to its promise:
// findings are exactly those of the same rules with every pattern matched on every line
// (RuleSet::Compile(..., window_context=false)), whatever the batch boundaries and quiet pauses,
// on synthetic logs built to put context lines at and just past every window's edge, and on the
// real rule pack over the real corpus. They are compared as sets: hits whose windows pass between
// two lines that match something are reported together, so with fewer matching lines their
// order within a batch can differ, never what is reported.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "agent/match/stream_matcher.h"
#include "agent/rules/rule_loader.h"
#include "tests/support/prerequisite.h"
#include "tests/unit/match/corpus_logs.h"
#include "tests/unit/match/seen_findings.h"

namespace faultline {
namespace {

std::shared_ptr<const RuleSet> Compile(std::vector<Rule> rules, bool window_context) {
  auto set = RuleSet::Compile(std::move(rules), "", {}, window_context);
  EXPECT_TRUE(set.ok()) << FormatErrors(set.errors());
  return set.value();
}

// Feeds `lines` in batches of random sizes up to `max_batch` lines; after some batches the
// stream goes quiet for a moment (ReleaseLookback, as the pipeline does when it settles).
std::vector<Seen> ScanInRandomBatches(const std::shared_ptr<const RuleSet>& rules,
                                      const std::vector<std::string>& lines, uint32_t seed,
                                      size_t max_batch) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> batch_lines(1, max_batch);
  SeenFindings sink;
  StreamMatcher matcher(rules, &sink);
  MatchScratch scratch(rules->patterns());
  LineBatch batch;
  size_t next = 0;
  while (next < lines.size()) {
    const size_t end = std::min(lines.size(), next + batch_lines(rng));
    for (; next < end; ++next) batch.Append(lines[next]);
    matcher.Process(batch, scratch);
    batch.Clear();
    if (rng() % 8 == 0) matcher.ReleaseLookback(scratch);
  }
  matcher.Finish();
  return sink.seen;
}

std::vector<Seen> ScanEverywhere(const std::shared_ptr<const RuleSet>& rules,
                                 const std::vector<std::string>& lines) {
  SeenFindings sink;
  StreamMatcher matcher(rules, &sink);
  MatchScratch scratch(rules->patterns());
  LineBatch batch;
  for (const std::string& line : lines) batch.Append(line);
  matcher.Process(batch, scratch);
  matcher.Finish();
  return sink.seen;
}

// Empty when equal; else the first finding that differs, which a failure shows.
std::string FirstDifference(const std::vector<Seen>& expected, const std::vector<Seen>& got) {
  std::ostringstream out;
  for (size_t i = 0; i < std::max(expected.size(), got.size()); ++i) {
    if (i < expected.size() && i < got.size() && expected[i] == got[i]) continue;
    out << "finding " << i << " of " << expected.size() << ": expected ";
    if (i < expected.size()) PrintTo(expected[i], &out);
    out << "; got ";
    if (i < got.size()) PrintTo(got[i], &out);
    return out.str();
  }
  return "";
}

std::vector<Seen> Sorted(std::vector<Seen> seen) {
  std::sort(seen.begin(), seen.end(), [](const Seen& a, const Seen& b) {
    return std::tie(a.line, a.rule, a.severity, a.text, a.labels) <
           std::tie(b.line, b.rule, b.severity, b.text, b.labels);
  });
  return seen;
}

constexpr char kWindowRuleHead[] = "title: t\ncategory: build\nroot_cause: r\nfix: f\n";

// For each window width, one rule per kind of context condition, each with its own words, and a
// pattern shared by a context condition and a rule's own match (which keeps it matched
// everywhere).
std::string WindowRules(const std::vector<int>& widths) {
  std::string yaml;
  for (int w : widths) {
    const std::string n = std::to_string(w);
    auto rule = [&](const std::string& id, const std::string& body) {
      if (!yaml.empty()) yaml += "---\n";
      yaml += std::string(kWindowRuleHead) + "id: w" + n + "." + id + "\nseverity: error\n" + body;
    };
    rule("req", "match: ['hitreq" + n + "\\b']\ncontext:\n  within_lines: " + n +
                    "\n  requires_any: ['needreq" + n + "\\b']\n  unconfirmed_severity: warning\n");
    rule("after", "match: ['hitafter" + n + "\\b']\ncontext:\n  within_lines: " + n +
                      "\n  downgrade_if_followed_by: ['benignafter" + n +
                      "\\b']\n  downgrade_to: info\n");
    rule("before", "match: ['hitbefore" + n + "\\b']\ncontext:\n  within_lines: " + n +
                       "\n  downgrade_if_preceded_by: ['benignbefore" + n +
                       "\\b', 'shared\\b']\n  downgrade_to: warning\n");
    rule("seq", "match:\n  - sequence: ['seqstart" + n + "\\b', 'seqend" + n +
                    "\\b']\n    within_lines: 3\ncontext:\n  within_lines: " + n +
                    "\n  requires_any: ['seqneed" + n + "\\b']\n");
  }
  yaml +=
      "---\n" + std::string(kWindowRuleHead) + "id: shared.own\nseverity: warning\nmatch: ['shared\\b']\n";
  return yaml;
}

std::vector<Rule> Parse(const std::string& yaml) {
  auto rules = ParseRules(yaml, "test.yaml");
  EXPECT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  return std::move(rules).value();
}

// A log of filler lines with hits and context lines placed at distances around every width:
// exactly at the window's edge, one past it, and at random.
std::vector<std::string> WindowLog(const std::vector<int>& widths, uint32_t seed, size_t lines) {
  std::mt19937 rng(seed);
  std::vector<std::string> log(lines);
  for (size_t i = 0; i < lines; ++i) log[i] = "step " + std::to_string(i) + " loss 0.25";
  const char* kinds[][2] = {{"hitreq", "needreq"},
                            {"hitafter", "benignafter"},
                            {"hitbefore", "benignbefore"},
                            {"seqstart", "seqneed"}};
  for (int w : widths) {
    const std::string n = std::to_string(w);
    for (int k = 0; k < 4; ++k) {
      for (int copy = 0; copy < 6; ++copy) {
        const size_t at = rng() % lines;
        log[at] = std::string(kinds[k][0]) + n + " at " + std::to_string(at);
        if (k == 3 && at + 1 < lines) log[at + 1] = "seqend" + n;
        const int distances[] = {w, w + 1, -w, -w - 1,
                                 static_cast<int>(rng() % (2 * w + 3)) - w - 1};
        const int d = distances[rng() % 5];
        const long where = static_cast<long>(at) + d;
        if (where >= 0 && where < static_cast<long>(lines) && where != static_cast<long>(at)) {
          log[where] = std::string(kinds[k][1]) + n;
        }
      }
    }
  }
  for (int i = 0; i < 20; ++i) log[rng() % lines] = "shared";
  return log;
}

TEST(ContextWindow, WindowTiersHoldOnlyPatternsThatServeContextAlone) {
  const auto windowed = Compile(Parse(WindowRules({1, 5, 30, 100, 400, 600})), true);
  const auto everywhere = Compile(Parse(WindowRules({1, 5, 30, 100, 400, 600})), false);
  EXPECT_EQ(0u, everywhere->patterns().window_tiers());
  // Widths 1 and 5 share the narrowest tier, 30 the next, 100 and 400 one each; 600 is wider
  // than every tier and stays with the patterns matched on every line.
  ASSERT_EQ(4u, windowed->patterns().window_tiers());
  EXPECT_EQ(5u, windowed->patterns().window_width(0));
  EXPECT_EQ(30u, windowed->patterns().window_width(1));
  EXPECT_EQ(100u, windowed->patterns().window_width(2));
  EXPECT_EQ(400u, windowed->patterns().window_width(3));
}

TEST(ContextWindow, FindingsAreThoseOfMatchingEveryLineWhateverTheBatches) {
  const std::vector<int> widths = {1, 5, 30, 100, 400, 600};
  const auto windowed = Compile(Parse(WindowRules(widths)), true);
  const auto everywhere = Compile(Parse(WindowRules(widths)), false);
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const auto log = WindowLog(widths, seed, 6000);
    const auto expected = ScanEverywhere(everywhere, log);
    ASSERT_GT(expected.size(), 50u);
    // Batches from single lines (every window crosses batches) to longer than the widest tier.
    for (size_t max_batch : {3, 40, 700, 2500}) {
      const uint32_t batches = seed * 31 + static_cast<uint32_t>(max_batch);
      EXPECT_EQ("", FirstDifference(Sorted(expected),
                                    Sorted(ScanInRandomBatches(windowed, log, batches, max_batch))))
          << "seed " << seed << ", batches up to " << max_batch << " lines";
    }
  }
}

TEST(ContextWindow, AContextLineJustBeforeABatchIsSeenAndOnePastTheWindowIsNot) {
  const auto rules = Compile(Parse(WindowRules({100})), true);
  for (int distance : {100, 101}) {
    std::vector<std::string> log(1000, "step");
    log[500] = "benignbefore100";
    log[500 + distance] = "hitbefore100 now";
    SeenFindings sink;
    StreamMatcher matcher(rules, &sink);
    MatchScratch scratch(rules->patterns());
    // The hit opens the second batch; the benign line is in the first batch's kept tail.
    LineBatch batch;
    for (int i = 0; i < 500 + distance; ++i) batch.Append(log[i]);
    matcher.Process(batch, scratch);
    batch.Clear();
    for (size_t i = 500 + distance; i < log.size(); ++i) batch.Append(log[i]);
    matcher.Process(batch, scratch);
    matcher.Finish();
    ASSERT_EQ(1u, sink.seen.size());
    EXPECT_EQ(distance == 100 ? Severity::kWarning : Severity::kError, sink.seen[0].severity)
        << "benign line " << distance << " lines before the hit";
  }
}

TEST(ContextWindow, AWindowPastTheBatchsEndCarriesIntoTheNextBatches) {
  const auto rules = Compile(Parse(WindowRules({30})), true);
  for (int benign_at : {115, 121}) {
    std::vector<std::string> log(300, "step");
    log[90] = "hitafter30 now";
    log[benign_at] = "benignafter30";
    // Batches of 100 lines: the hit is near the first one's end, the benign line early in the
    // second, far from its last lines and from any hit of its own.
    SeenFindings sink;
    StreamMatcher matcher(rules, &sink);
    MatchScratch scratch(rules->patterns());
    LineBatch batch;
    for (size_t i = 0; i < log.size(); ++i) {
      batch.Append(log[i]);
      if (batch.size() == 100) {
        matcher.Process(batch, scratch);
        batch.Clear();
      }
    }
    matcher.Finish();
    ASSERT_EQ(1u, sink.seen.size());
    EXPECT_EQ(benign_at - 90 <= 30 ? Severity::kInfo : Severity::kError, sink.seen[0].severity)
        << "benign line " << benign_at - 90 << " lines after the hit";
  }
}

std::vector<std::string> ReadLines(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(ContextWindow, TheRulePackOnTheCorpusDecidesAsWhenEveryLineIsMatched) {
  FAULTLINE_REQUIRE(std::filesystem::is_directory(CorpusDir()), "no corpus at " << CorpusDir());
  auto rules = LoadRules({BundledRulesDir().string()});
  ASSERT_TRUE(rules.ok()) << FormatErrors(rules.errors());
  const auto windowed = Compile(rules.value(), true);
  const auto everywhere = Compile(rules.value(), false);
  ASSERT_GT(windowed->patterns().window_tiers(), 0u);
  size_t files = 0;
  size_t findings = 0;
  for (const auto& path : CorpusLogPaths()) {
    const auto lines = ReadLines(path);
    const auto expected = ScanEverywhere(everywhere, lines);
    findings += expected.size();
    ++files;
    for (size_t max_batch : {1, 17, 300}) {
      const auto seed = static_cast<uint32_t>(files);
      EXPECT_EQ("", FirstDifference(Sorted(expected),
                                    Sorted(ScanInRandomBatches(windowed, lines, seed, max_batch))))
          << path << ", batches up to " << max_batch << " lines";
    }
  }
  EXPECT_GT(files, 50u);
  EXPECT_GT(findings, files);
}

}  // namespace
}  // namespace faultline
