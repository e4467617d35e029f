#include "agent/alert/webhook_body.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/unit/alert/alert_test_items.h"

namespace faultline {
namespace {

using nlohmann::json;

TEST(WebhookBodyTest, CarriesThePayloadTheIssueNames) {
  const json body = json::parse(RenderWebhookBody(OneItemNotification()));
  EXPECT_EQ("faultline.alert", body["type"]);
  EXPECT_EQ("ntf_01", body["id"]);
  EXPECT_EQ("regression", body["kind"]);
  EXPECT_EQ("deepspeed.async_io.windows_link{lib=aio}", body["signature"]);
  EXPECT_EQ("error", body["severity"]);
  EXPECT_EQ(41, body["count"]);
  EXPECT_FALSE(body["title"].get<std::string>().empty());
  EXPECT_FALSE(body["root_cause"].get<std::string>().empty());
  EXPECT_FALSE(body["fix"].get<std::string>().empty());
  EXPECT_EQ("set DS_BUILD_AIO=0 && pip install deepspeed", body["fix_command"]);
  EXPECT_EQ("wheels", body["source"]);
  EXPECT_EQ("win-builder-03", body["host"]);
  EXPECT_EQ("C:/ci/build-8812.log", body["file"]);
  EXPECT_EQ(812, body["line"]);
  EXPECT_EQ(2u, body["context_before"].size());
  EXPECT_EQ(1u, body["context_after"].size());
  EXPECT_EQ("0.15.1", body["versions"]["seen_in"]);
  EXPECT_EQ("0.15.0", body["versions"]["fixed_in"]);
  EXPECT_EQ("op builder skips aio on Windows", body["versions"]["note"]);
  EXPECT_EQ("aio", body["labels"]["lib"]);
  EXPECT_EQ("2026-09-30T12:00:02.000Z", body["last_seen"]);
  EXPECT_EQ(1u, body["alerts"].size());
  EXPECT_EQ(AlertIdOf("deepspeed.async_io.windows_link{lib=aio}"), body["alert_id"]);
}

TEST(WebhookBodyTest, TheSameNotificationRendersTheSameBytes) {
  EXPECT_EQ(RenderWebhookBody(OneItemNotification()), RenderWebhookBody(OneItemNotification()));
}

TEST(WebhookBodyTest, StaysUnderTwentyKilobytesWhateverTheExcerpt) {
  Notification n = OneItemNotification();
  n.items.clear();
  for (int i = 0; i < 50; ++i) {
    AlertItem item = RegressionItem();
    item.signature = "rule.n" + std::to_string(i);
    item.hit = std::string(4096, 'h');
    item.context_before = {std::string(4096, 'b'), std::string(4096, 'b'), std::string(4096, 'b')};
    n.items.push_back(item);
  }
  const std::string rendered = RenderWebhookBody(n);
  EXPECT_LE(rendered.size(), kMaxWebhookBodyBytes);
  const json body = json::parse(rendered);
  EXPECT_EQ(50u, body["alerts"].size() + body["more"].get<std::size_t>());
  EXPECT_EQ("rule.n0", body["signature"]);
}

TEST(WebhookBodyTest, AlertIdsAreStablePerSignature) {
  EXPECT_EQ(AlertIdOf("a.b{x=1}"), AlertIdOf("a.b{x=1}"));
  EXPECT_NE(AlertIdOf("a.b{x=1}"), AlertIdOf("a.b{x=2}"));
  EXPECT_EQ(20u, AlertIdOf("a.b").size());
}

}  // namespace
}  // namespace faultline
