#include "agent/alert/slack_message.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "agent/alert/text_budget.h"
#include "agent/framing/utf8.h"
#include "tests/unit/alert/alert_test_items.h"

namespace faultline {
namespace {

using nlohmann::json;
using L = SlackLimits;

std::size_t CountOf(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

// Every limit Slack enforces on a message, checked on the rendered JSON.
json ParseWithinLimits(const std::string& rendered) {
  EXPECT_TRUE(IsValidUtf8(rendered));
  const json message = json::parse(rendered);
  EXPECT_TRUE(message.at("text").is_string());
  EXPECT_FALSE(message.at("text").get<std::string>().empty());
  const json& blocks = message.at("blocks");
  EXPECT_LE(blocks.size(), L::kMaxBlocks);
  std::size_t total = 0;
  for (const json& block : blocks) {
    const std::string type = block.at("type");
    if (type == "header") {
      const std::string text = block.at("text").at("text");
      EXPECT_LE(CodePoints(text), L::kMaxHeaderChars);
      EXPECT_EQ("plain_text", block.at("text").at("type"));
      total += CodePoints(text);
    } else if (type == "section") {
      if (block.contains("text")) {
        const std::string text = block.at("text").at("text");
        EXPECT_FALSE(text.empty());
        EXPECT_LE(CodePoints(text), L::kMaxSectionChars);
        total += CodePoints(text);
      }
      if (block.contains("fields")) {
        EXPECT_LE(block.at("fields").size(), L::kMaxFieldsPerSection);
        for (const json& field : block.at("fields")) {
          const std::string text = field.at("text");
          EXPECT_LE(CodePoints(text), L::kMaxFieldChars);
          total += CodePoints(text);
        }
      }
    } else if (type == "context") {
      for (const json& e : block.at("elements"))
        total += CodePoints(e.at("text").get<std::string>());
    } else {
      EXPECT_EQ("divider", type);
    }
  }
  EXPECT_LE(total, L::kMaxTotalChars);
  return message;
}

TEST(SlackMessageTest, OneRegressionHasHeaderFactsExcerptAndFix) {
  const json message = ParseWithinLimits(RenderSlackMessage(OneItemNotification()));
  const std::string all = message.dump();
  const std::string header = message["blocks"][0]["text"]["text"];
  EXPECT_NE(header.find("REGRESSION"), std::string::npos) << header;
  EXPECT_NE(all.find("seen in deepspeed 0.15.1"), std::string::npos);
  EXPECT_NE(all.find("fixed in deepspeed 0.15.0 by alice"), std::string::npos);
  EXPECT_NE(all.find("op builder skips aio on Windows"), std::string::npos);
  EXPECT_NE(all.find("cannot open input file 'aio.lib'"), std::string::npos);
  EXPECT_NE(all.find("Unable to pre-compile async_io"), std::string::npos) << "context after";
  EXPECT_NE(all.find("DS_BUILD_AIO=0"), std::string::npos);
  EXPECT_NE(all.find("C:/ci/build-8812.log:812"), std::string::npos);
  const std::string text = message["text"];
  EXPECT_NE(text.find("REGRESSION: deepspeed.async_io.windows_link{lib=aio}"), std::string::npos);
}

TEST(SlackMessageTest, TheConsequencesOfARootCauseAreNamed) {
  AlertItem item = RegressionItem();
  EXPECT_EQ(RenderSlackMessage(OneItemNotification(item)).find("Consequences"), std::string::npos);
  item.consequences = {"distributed.nccl.watchdog_timeout", "distributed.elastic.child_failed"};
  const std::string all = ParseWithinLimits(RenderSlackMessage(OneItemNotification(item))).dump();
  EXPECT_NE(all.find("*Consequences*"), std::string::npos);
  EXPECT_NE(all.find("distributed.nccl.watchdog_timeout"), std::string::npos);
  EXPECT_NE(all.find("distributed.elastic.child_failed"), std::string::npos);
}

TEST(SlackMessageTest, AHundredKilobyteExcerptStillRendersWithinEveryLimit) {
  AlertItem item = RegressionItem();
  item.context_before.clear();
  for (int i = 0; i < 100; ++i) item.context_before.push_back(std::string(1000, 'x') + "ü");
  item.hit = std::string(5000, 'h');
  item.title = std::string(400, 'T');
  item.root_cause = std::string(5000, 'r');
  const json message = ParseWithinLimits(RenderSlackMessage(OneItemNotification(item)));
  EXPECT_NE(message.dump().find("more lines)"), std::string::npos);
}

TEST(SlackMessageTest, MrkdwnControlCharactersFromLogsAreEscaped) {
  AlertItem item = RegressionItem();
  item.hit = "<!channel> pay <http://evil.example|here> & now";
  item.title = "A <b>title</b>";
  const std::string rendered = RenderSlackMessage(OneItemNotification(item));
  const json message = ParseWithinLimits(rendered);
  const std::string all = message.dump();
  EXPECT_EQ(all.find("<!channel>"), std::string::npos);
  EXPECT_EQ(all.find("<http://evil"), std::string::npos);
  EXPECT_NE(all.find("&lt;!channel&gt; pay &lt;http://evil.example|here&gt; &amp; now"),
            std::string::npos);
}

TEST(SlackMessageTest, BackquotesInTheLogCannotCloseTheCodeBlock) {
  AlertItem item = RegressionItem();
  item.context_before.clear();
  item.context_after.clear();
  item.hit = "before ``` *bold* ``` after";
  const json message = ParseWithinLimits(RenderSlackMessage(OneItemNotification(item)));
  for (const json& block : message["blocks"]) {
    if (block["type"] != "section" || !block.contains("text")) continue;
    const std::string text = block["text"]["text"];
    if (text.find("before") == std::string::npos) continue;
    EXPECT_EQ(2u, CountOf(text, "```")) << text;
  }
}

TEST(SlackMessageTest, ManyItemsStayWithinFiftyBlocksAndSayHowManyMore) {
  Notification n = OneItemNotification();
  n.items.clear();
  for (int i = 0; i < 200; ++i) {
    AlertItem item = RegressionItem();
    item.kind = AlertKind::kNew;
    item.signature = "rule.number_" + std::to_string(i);
    n.items.push_back(item);
  }
  n.more = 47;
  const json message = ParseWithinLimits(RenderSlackMessage(n));
  const std::string header = message["blocks"][0]["text"]["text"];
  EXPECT_NE(header.find("247 new signatures"), std::string::npos) << header;
  const std::string last = message["blocks"].back()["text"]["text"];
  EXPECT_NE(last.find("more new signatures"), std::string::npos) << last;
  const std::string text = message["text"];
  EXPECT_NE(text.find("and 246 more"), std::string::npos) << text;
}

TEST(SlackMessageTest, HeadersAreCutAtCharactersNotBytes) {
  AlertItem item = RegressionItem();
  item.title = "";
  for (int i = 0; i < 300; ++i) item.title += "无法打开";
  const json message = ParseWithinLimits(RenderSlackMessage(OneItemNotification(item)));
  const std::string header = message["blocks"][0]["text"]["text"];
  EXPECT_EQ(L::kMaxHeaderChars, CodePoints(header));
}

TEST(SlackMessageTest, TestMessagesAreMarked) {
  Notification n = OneItemNotification();
  n.test = true;
  const json message = ParseWithinLimits(RenderSlackMessage(n));
  EXPECT_EQ(0u, message["text"].get<std::string>().find("[TEST] "));
  EXPECT_NE(message["blocks"][0]["text"]["text"].get<std::string>().find("[TEST]"),
            std::string::npos);
}

TEST(SlackMessageTest, JoinLinesWithinKeepsWholeLinesAndCountsTheRest) {
  EXPECT_EQ("a\nb\nc", JoinLinesWithin({"a", "b", "c"}, 100));
  const std::string cut = JoinLinesWithin({"aaaa", "bbbb", "cccc", "dddd"}, 25);
  EXPECT_LE(CodePoints(cut), 25u);
  EXPECT_EQ("aaaa\nbbbb\n…(2 more lines)", cut);
  const std::string first = JoinLinesWithin({std::string(100, 'z'), "b"}, 30);
  EXPECT_LE(CodePoints(first), 30u);
  EXPECT_NE(first.find("(1 more lines)"), std::string::npos);
}

}  // namespace
}  // namespace faultline
