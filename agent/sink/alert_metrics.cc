#include "agent/sink/alert_metrics.h"

namespace faultline {

AlertMetrics::AlertMetrics(prometheus::Registry& registry)
    : events_(prometheus::BuildCounter()
                  .Name("faultline_alert_events_total")
                  .Help("Lifecycle events raised, by kind (muted ones included)")
                  .Register(registry)),
      notifications_(prometheus::BuildCounter()
                         .Name("faultline_notifications_total")
                         .Help("Delivery attempts and their outcome, per receiver and kind")
                         .Register(registry)),
      coalesced_(prometheus::BuildCounter()
                     .Name("faultline_notifications_coalesced_total")
                     .Help("Notifications folded into a digest by rate limiting")
                     .Register(registry)),
      queue_depth_(prometheus::BuildGauge()
                       .Name("faultline_notification_queue_depth")
                       .Help("Notifications waiting in the outbox, per receiver")
                       .Register(registry)),
      receiver_disabled_(prometheus::BuildGauge()
                             .Name("faultline_receiver_disabled")
                             .Help("1 when a receiver was disabled (404 no_service, 410)")
                             .Register(registry)),
      last_success_(prometheus::BuildGauge()
                        .Name("faultline_last_successful_notification_timestamp_seconds")
                        .Help("When a notification last reached the receiver")
                        .Register(registry)),
      occurrences_(prometheus::BuildCounter()
                       .Name("faultline_signature_occurrences_total")
                       .Help("Occurrences at or above alerts.min_severity, by the "
                             "signature's state and, when a fix covered it, why it was not "
                             "a regression")
                       .Register(registry)) {}

void AlertMetrics::AddReceiver(const std::string& receiver) {
  queue_depth_.Add({{"receiver", receiver}}).Set(0);
  receiver_disabled_.Add({{"receiver", receiver}}).Set(0);
  last_success_.Add({{"receiver", receiver}}).Set(0);
  coalesced_.Add({{"receiver", receiver}});
}

void AlertMetrics::CountEvent(std::string_view kind) {
  events_.Add({{"kind", std::string(kind)}}).Increment();
}

void AlertMetrics::CountNotification(const std::string& receiver, std::string_view kind,
                                     std::string_view result) {
  notifications_
      .Add({{"receiver", receiver}, {"kind", std::string(kind)}, {"result", std::string(result)}})
      .Increment();
}

void AlertMetrics::CountOccurrence(const std::string& signature, std::string_view state,
                                   std::string_view reason) {
  occurrences_
      .Add({{"signature", signature},
            {"state", std::string(state)},
            {"reason", std::string(reason)}})
      .Increment();
}

void AlertMetrics::SetDisabled(const std::string& receiver) {
  receiver_disabled_.Add({{"receiver", receiver}}).Set(1);
}

void AlertMetrics::SetDelivered(const std::string& receiver, int64_t unix_ms) {
  last_success_.Add({{"receiver", receiver}}).Set(static_cast<double>(unix_ms) / 1000);
}

void AlertMetrics::UpdateReceiver(const std::string& receiver, uint64_t queued, bool disabled,
                                  uint64_t coalesced, int64_t last_success_unix_ms) {
  queue_depth_.Add({{"receiver", receiver}}).Set(static_cast<double>(queued));
  receiver_disabled_.Add({{"receiver", receiver}}).Set(disabled ? 1 : 0);
  prometheus::Counter& folded = coalesced_.Add({{"receiver", receiver}});
  if (static_cast<double>(coalesced) > folded.Value()) {
    folded.Increment(static_cast<double>(coalesced) - folded.Value());
  }
  if (last_success_unix_ms != 0) SetDelivered(receiver, last_success_unix_ms);
}

}  // namespace faultline
