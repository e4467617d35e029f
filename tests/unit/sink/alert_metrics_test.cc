// AlertMetrics: the alert side's series as a scrape shows them, on the daemon's registry.
#include "agent/sink/alert_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <string>

#include "agent/sink/metrics.h"

namespace faultline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Scrape(const prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

TEST(AlertMetricsTest, AReceiverIsExposedAtZeroBeforeItsFirstNotification) {
  prometheus::Registry registry;
  AlertMetrics metrics(registry);
  metrics.AddReceiver("chat");
  const std::string text = Scrape(registry);
  EXPECT_THAT(text, HasSubstr("faultline_notification_queue_depth{receiver=\"chat\"} 0"));
  EXPECT_THAT(text, HasSubstr("faultline_receiver_disabled{receiver=\"chat\"} 0"));
  EXPECT_THAT(text, HasSubstr("faultline_notifications_coalesced_total{receiver=\"chat\"} 0"));
  EXPECT_THAT(text, HasSubstr("faultline_last_successful_notification_timestamp_seconds{receiver="
                              "\"chat\"} 0"));
}

TEST(AlertMetricsTest, TheCoalescedCounterFollowsTheRunningTotalAndNeverFalls) {
  prometheus::Registry registry;
  AlertMetrics metrics(registry);
  metrics.UpdateReceiver("chat", 3, false, 5, 1'700'000'000'000);
  metrics.UpdateReceiver("chat", 0, true, 2, 0);  // an outbox reloaded from an older state
  const std::string text = Scrape(registry);
  EXPECT_THAT(text, HasSubstr("faultline_notifications_coalesced_total{receiver=\"chat\"} 5"));
  EXPECT_THAT(text, HasSubstr("faultline_notification_queue_depth{receiver=\"chat\"} 0"));
  EXPECT_THAT(text, HasSubstr("faultline_receiver_disabled{receiver=\"chat\"} 1"));
  // A last success of 0 (never) leaves the one seen before.
  EXPECT_THAT(text, HasSubstr("faultline_last_successful_notification_timestamp_seconds{receiver="
                              "\"chat\"} 1700000000"));
}

TEST(AlertMetricsTest, TheDaemonsAlertSeriesAreServedWithItsOwn) {
  Metrics metrics(std::vector<Rule>{});
  metrics.alerts().CountEvent("regression");
  metrics.alerts().CountNotification("pager", "new", "delivered");
  metrics.alerts().CountOccurrence("deepspeed.async_io.windows_link", "active", "");
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("faultline_alert_events_total{kind=\"regression\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("faultline_notifications_total{kind=\"new\",receiver=\"pager\",result="
                        "\"delivered\"} 1"));
  EXPECT_THAT(text, HasSubstr("faultline_signature_occurrences_total{reason=\"\",signature="
                              "\"deepspeed.async_io.windows_link\",state=\"active\"} 1"));
  EXPECT_THAT(text, HasSubstr("faultline_lines_truncated_total 0"));
  EXPECT_THAT(text, Not(HasSubstr("faultline_receiver_disabled{")));
}

}  // namespace
}  // namespace faultline
