// AlertMetrics: the Prometheus series of the alert side (agent/alert/): lifecycle events by kind,
// delivery attempts and their outcome, the outbox per receiver, and occurrences by signature
// state. Every faultline_* family is declared in sink/, in Metrics or here, so the metric names,
// help texts and label sets of the agent are read in one room (docs/design.md section 6).
//
// Alerting records through the typed methods below and never touches a family. The daemon's
// AlertMetrics is part of its Metrics (Metrics::alerts()), on the same registry, so one scrape
// serves both; a command without a daemon (`faultline alert test`) or a test makes one on a
// registry of its own. Label values are bounded by their callers: receivers come from the
// config, kinds and results from fixed lists, signatures from SignatureLabels.
//
// Construction registers the families and cannot fail. Not thread-safe: the agent's event loop.
#ifndef FAULTLINE_SINK_ALERT_METRICS_H_
#define FAULTLINE_SINK_ALERT_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace faultline {

class AlertMetrics {
 public:
  // Registers the families in `registry`, which must outlive this object.
  explicit AlertMetrics(prometheus::Registry& registry);
  AlertMetrics(const AlertMetrics&) = delete;
  AlertMetrics& operator=(const AlertMetrics&) = delete;

  // A configured receiver: its series start at 0 (queue empty, enabled, never delivered), so
  // dashboards and absence alerts see it before its first notification.
  void AddReceiver(const std::string& receiver);

  // faultline_alert_events_total{kind}: one lifecycle event ("new", "regression", ...), muted
  // ones included.
  void CountEvent(std::string_view kind);
  // faultline_notifications_total{receiver, kind, result}: one delivery attempt.
  void CountNotification(const std::string& receiver, std::string_view kind,
                         std::string_view result);
  // faultline_signature_occurrences_total{signature, state, reason}.
  void CountOccurrence(const std::string& signature, std::string_view state,
                       std::string_view reason);

  // A receiver that answered 404 no_service or 410 (faultline_receiver_disabled 1).
  void SetDisabled(const std::string& receiver);
  // A notification reached `receiver` at `unix_ms`.
  void SetDelivered(const std::string& receiver, int64_t unix_ms);
  // The outbox's view of one receiver, at scrape: queue depth, whether it is disabled, the
  // running total of notifications folded into digests (the counter is brought up to it) and
  // the last success (0: never, left as it is).
  void UpdateReceiver(const std::string& receiver, uint64_t queued, bool disabled,
                      uint64_t coalesced, int64_t last_success_unix_ms);

 private:
  prometheus::Family<prometheus::Counter>& events_;
  prometheus::Family<prometheus::Counter>& notifications_;
  prometheus::Family<prometheus::Counter>& coalesced_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Gauge>& receiver_disabled_;
  prometheus::Family<prometheus::Gauge>& last_success_;
  prometheus::Family<prometheus::Counter>& occurrences_;
};

}  // namespace faultline

#endif  // FAULTLINE_SINK_ALERT_METRICS_H_
