// Receiver: one delivery target built from an `alerts.receivers[]` entry: which notifications it
// takes, and the HTTP request that carries one (docs/alerting.md sections 5, 6 and 8).
//
//   slack         Block Kit JSON (slack_message.h) to an incoming-webhook URL.
//   webhook       the JSON body of webhook_body.h, signed per Standard Webhooks (webhook-id =
//                 the notification id, stable across retries; webhook-timestamp = this attempt;
//                 webhook-signature with one `v1,` per secret), optionally X-Hub-Signature-256.
//   alertmanager  Alertmanager API v2 alerts (alertmanager_body.h) to <url>/api/v2/alerts. A
//                 receiver with several URLs is several targets, `name[0]`, `name[1]`, ...: each
//                 peer of an Alertmanager cluster is sent every alert, as Prometheus does, and
//                 each has its own delivery state.
// Every request also carries Content-Type, User-Agent and the config's extra headers.
//
// Build reports bad receivers (a secret that does not decode) with the config's file, line and
// key. A built Receiver is immutable; Prepare is const and thread-safe; nothing throws.
#ifndef FAULTLINE_ALERT_RECEIVER_H_
#define FAULTLINE_ALERT_RECEIVER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "agent/alert/notification.h"
#include "agent/alert/outbox.h"
#include "agent/config/config.h"
#include "agent/core/result.h"
#include "agent/rules/rule.h"

namespace faultline {

struct PreparedRequest {
  std::string url;
  std::string body;
  std::vector<std::string> headers;  // "Name: value"
};

class Receiver {
 public:
  // One Receiver per target of every receiver in `config`; errors name `config_file`.
  static Result<std::vector<Receiver>> Build(const AlertsConfig& config,
                                             const std::string& config_file);

  const std::string& name() const { return name_; }          // the receiver's name
  const std::string& target() const { return target_; }      // name, or name[i]
  ReceiverConfig::Type type() const { return type_; }
  const std::string& url() const { return url_; }

  // Whether a notification item of this kind and severity goes to this receiver.
  bool Takes(AlertKind kind, Severity severity) const;

  // The request for one attempt at `now_unix_seconds`.
  PreparedRequest Prepare(const Notification& notification, int64_t now_unix_seconds) const;

  OutboxTarget outbox_target() const;
  int connect_timeout_ms() const { return connect_timeout_ms_; }
  int timeout_ms() const { return timeout_ms_; }

 private:
  std::string name_;
  std::string target_;
  ReceiverConfig::Type type_ = ReceiverConfig::Type::kWebhook;
  std::string url_;
  std::vector<std::string> keys_;  // decoded Standard Webhooks secrets
  std::string github_secret_;
  std::vector<std::string> extra_headers_;
  bool send_resolved_ = false;
  Severity min_severity_ = Severity::kError;
  double rate_per_second_ = 10;
  double burst_ = 20;
  int connect_timeout_ms_ = 5000;
  int timeout_ms_ = 15000;
  int64_t give_up_after_ms_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_ALERT_RECEIVER_H_
