#include "agent/alert/alertmanager_body.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/alert/alert_test_items.h"

namespace faultline {
namespace {

using nlohmann::json;

TEST(AlertmanagerBodyTest, LabelsNameTheFailureAndAnnotationsCarryWhatChanges) {
  const json alerts = json::parse(RenderAlertmanagerAlerts(OneItemNotification()));
  ASSERT_TRUE(alerts.is_array());
  ASSERT_EQ(1u, alerts.size());
  const json& labels = alerts[0]["labels"];
  EXPECT_EQ("FaultlineSignature", labels["alertname"]);
  EXPECT_EQ("deepspeed.async_io.windows_link{lib=aio}", labels["signature"]);
  EXPECT_EQ("deepspeed.async_io.windows_link", labels["rule"]);
  EXPECT_EQ("aio", labels["lib"]);
  EXPECT_EQ("error", labels["severity"]);
  EXPECT_EQ("wheels", labels["source"]);
  EXPECT_EQ("win-builder-03", labels["host"]);
  EXPECT_FALSE(labels.contains("kind")) << "a changing value would make a new alert";
  const json& annotations = alerts[0]["annotations"];
  EXPECT_EQ("regression", annotations["kind"]);
  EXPECT_EQ("0.15.1", annotations["seen_in_version"]);
  EXPECT_EQ("0.15.0", annotations["fixed_in_version"]);
  EXPECT_EQ("41", annotations["count"]);
  EXPECT_EQ("2026-09-30T12:00:02.000Z", alerts[0]["startsAt"])
      << "a regression fires anew: it starts at its occurrence, not at the first one";
  EXPECT_EQ("2026-10-01T12:00:02.000Z", alerts[0]["endsAt"]);
}

TEST(AlertmanagerBodyTest, ConsequencesAreAnAnnotationNotALabel) {
  AlertItem item = RegressionItem();
  EXPECT_FALSE(
      json::parse(RenderAlertmanagerAlerts(OneItemNotification(item)))[0]["annotations"].contains(
          "consequences"));
  item.consequences = {"distributed.nccl.watchdog_timeout{op=BROADCAST}",
                       "distributed.elastic.child_failed"};
  const json alert = json::parse(RenderAlertmanagerAlerts(OneItemNotification(item)))[0];
  EXPECT_EQ("distributed.nccl.watchdog_timeout{op=BROADCAST}, distributed.elastic.child_failed",
            alert["annotations"]["consequences"]);
  EXPECT_FALSE(alert["labels"].contains("consequences")) << "labels make the alert's identity";
}

TEST(AlertmanagerBodyTest, ResolvedEndsNowAndTestAlertsAreTheirOwn) {
  Notification n = OneItemNotification();
  n.items[0].kind = AlertKind::kResolved;
  json alerts = json::parse(RenderAlertmanagerAlerts(n));
  EXPECT_EQ("2026-08-06T07:06:40.000Z", alerts[0]["startsAt"]) << "the first occurrence";
  EXPECT_EQ("2026-09-30T12:00:05.000Z", alerts[0]["endsAt"]);

  n = OneItemNotification();
  n.test = true;
  alerts = json::parse(RenderAlertmanagerAlerts(n));
  EXPECT_EQ("true", alerts[0]["labels"]["faultline_test"]);
  EXPECT_EQ(0u, alerts[0]["annotations"]["summary"].get<std::string>().find("[TEST]"));
}

TEST(AlertmanagerBodyTest, RuleLabelsCannotOverrideOurs) {
  AlertItem item = RegressionItem();
  item.labels = {{"severity", "info"}, {"my-label", "v"}};
  const json alerts = json::parse(RenderAlertmanagerAlerts(OneItemNotification(item)));
  EXPECT_EQ("error", alerts[0]["labels"]["severity"]);
  EXPECT_EQ("info", alerts[0]["labels"]["label_severity"]);
  EXPECT_EQ("v", alerts[0]["labels"]["my_label"]);
}

}  // namespace
}  // namespace faultline
