#include "agent/discover/template_miner.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/discover/masker.h"

namespace faultline {
namespace {

// Masks and adds one line.
TemplateMiner::AddResult Add(TemplateMiner& miner, std::string_view line) {
  std::vector<std::string> tokens;
  MaskLine(line, tokens);
  return miner.Add(tokens);
}

TEST(TemplateMiner, LinesThatDifferInVariablesShareATemplate) {
  TemplateMiner miner;
  const auto a = Add(miner, "RuntimeError: CUDA error: out of memory on device 0");
  const auto b = Add(miner, "RuntimeError: CUDA error: out of memory on device 3");
  EXPECT_TRUE(a.created);
  EXPECT_FALSE(b.created);
  EXPECT_EQ(a.slot, b.slot);
  EXPECT_EQ("RuntimeError: CUDA error: out of memory on device <*>", miner.Text(a.slot));
  EXPECT_EQ(1u, miner.size());
}

TEST(TemplateMiner, TokensWithDigitsOnBothSidesBecomeAVariable) {
  TemplateMiner miner;
  const auto a = Add(miner, "NIFF: node node-129 detected network via interface ee0");
  const auto b = Add(miner, "NIFF: node node-24 detected network via interface alt0");
  EXPECT_EQ(a.slot, b.slot);
  EXPECT_TRUE(b.changed);
  EXPECT_EQ("NIFF: node node-<*> detected network via interface <*>", miner.Text(a.slot));
}

TEST(TemplateMiner, AWordThatDiffersInAShortMessageKeepsTemplatesApart) {
  TemplateMiner miner;
  const auto paused = Add(miner, "[instance: 1] VM Paused (Lifecycle Event)");
  const auto resumed = Add(miner, "[instance: 2] VM Resumed (Lifecycle Event)");
  const auto https = Add(miner, "a.b:443 open through proxy p.q:5070 HTTPS");
  const auto socks = Add(miner, "a.b:443 open through proxy p.q:5070 SOCKS5");
  EXPECT_NE(paused.slot, resumed.slot);
  EXPECT_NE(https.slot, socks.slot);  // SOCKS5 holds a digit, HTTPS does not
  EXPECT_EQ(4u, miner.size());
}

TEST(TemplateMiner, OneWordThatDiffersInALongMessageIsAVariable) {
  TemplateMiner miner;
  const auto root = Add(miner, "Failed password for root from 5.36.59.76 port 42393 ssh2");
  const auto ftp = Add(miner, "Failed password for ftp from 112.95.230.3 port 45378 ssh2");
  EXPECT_EQ(root.slot, ftp.slot);
  EXPECT_EQ("Failed password for <*> from <*> port <*> ssh2", miner.Text(root.slot));
}

TEST(TemplateMiner, FullyMaskedLinesJoin) {
  // Drain counts template variables as unequal, so these would never meet.
  TemplateMiner miner;
  const auto a = Add(miner, "REPORT : 7007 5002 150089 240");
  const auto b = Add(miner, "REPORT : 7008 5003 150111 240");
  EXPECT_EQ(a.slot, b.slot);
}

TEST(TemplateMiner, LengthsMayDifferWhereAVariableGroupIs) {
  TemplateMiner miner;
  const auto a = Add(miner, "p.q:80 close, 403 bytes sent, 426 bytes received, lifetime 00:01");
  const auto b =
      Add(miner, "p.q:80 close, 451 bytes sent, 18846 bytes (18.4 KB) received, lifetime <1 sec");
  EXPECT_EQ(a.slot, b.slot);
  EXPECT_EQ("<*> close, <*> bytes sent, <*> bytes <*> received, lifetime <*>", miner.Text(a.slot));
  // From then on it is matched by alignment, lines of either length.
  EXPECT_EQ(a.slot, Add(miner, "x.y:443 close, 0 bytes sent, 0 bytes received, lifetime 00:02").slot);
  EXPECT_EQ(1u, miner.size());
}

TEST(TemplateMiner, AGapOfWordsIsNotAVariable) {
  TemplateMiner miner;
  const auto a = Add(miner, "Failed password for root from 1.2.3.4 port 22 ssh2");
  const auto b = Add(miner, "Failed password for invalid user test9 from 1.2.3.4 port 22 ssh2");
  EXPECT_NE(a.slot, b.slot);
}

TEST(TemplateMiner, EvictsTheLeastRecentlyUsedAndReusesItsSlot) {
  TemplateMiner miner(MinerOptions{.max_templates = 2});
  const auto a = Add(miner, "alpha failed");
  const auto b = Add(miner, "bravo broke down");
  Add(miner, "alpha failed");  // alpha is now more recent than bravo
  const auto c = Add(miner, "charlie crashed hard today");
  EXPECT_TRUE(c.created);
  EXPECT_TRUE(c.evicted);
  EXPECT_EQ(b.slot, c.slot);
  EXPECT_EQ(1u, miner.evictions());
  EXPECT_EQ(2u, miner.size());
  EXPECT_TRUE(miner.live(a.slot));
  EXPECT_EQ("charlie crashed hard today", miner.Text(c.slot));
  // bravo is gone: it starts a new template, evicting alpha (the least recent now).
  const auto again = Add(miner, "bravo broke down");
  EXPECT_TRUE(again.created);
  EXPECT_EQ(a.slot, again.slot);
  EXPECT_EQ(2u, miner.evictions());
}

TEST(TemplateMiner, MemoryStaysBoundedAtTheCap) {
  TemplateMiner miner(MinerOptions{.max_templates = 100});
  for (int i = 0; i < 1000; ++i) {
    Add(miner, "error" + std::string(1, static_cast<char>('a' + i % 26)) +
                   std::string(1, static_cast<char>('a' + (i / 26) % 26)) + " in stage " +
                   std::string(1, static_cast<char>('a' + (i / 676) % 26)));
  }
  EXPECT_EQ(100u, miner.size());
  EXPECT_GE(miner.evictions(), 900u - 100u);
}

TEST(TemplateId, IsAHashOfTheTextOnly) {
  // The same on every node and in every run: FNV-1a 64 of the text, first 12 hex digits.
  EXPECT_EQ("6c502736d4b2", TemplateId("RuntimeError: CUDA error: <*>"));
  EXPECT_NE(TemplateId("a <*>"), TemplateId("b <*>"));
  TemplateMiner one;
  TemplateMiner two;
  Add(two, "something unrelated broke");
  const auto a = Add(one, "RuntimeError: CUDA error: device-side assert triggered");
  Add(one, "RuntimeError: CUDA error: out of memory triggered");
  const auto b = Add(two, "RuntimeError: CUDA error: device-side assert triggered");
  Add(two, "RuntimeError: CUDA error: out of memory triggered");
  EXPECT_EQ(TemplateId(one.Text(a.slot)), TemplateId(two.Text(b.slot)));
}

TEST(TemplateMiner, LongLinesAreCappedInTokens) {
  TemplateMiner miner;
  std::string line = "boom";
  for (int i = 0; i < 500; ++i) line += " w";
  const auto a = Add(miner, line);
  EXPECT_EQ(TemplateMiner::kMaxTokens, miner.tokens(a.slot).size());
}

}  // namespace
}  // namespace faultline
