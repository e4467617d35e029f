#include "agent/alert/receiver.h"

#include "agent/alert/alertmanager_body.h"
#include "agent/alert/slack_message.h"
#include "agent/alert/webhook_body.h"
#include "agent/alert/webhook_signing.h"
#include "agent/core/version.h"

namespace faultline {
namespace {

// Slack allows about one message per second per webhook, with short bursts.
constexpr double kSlackRate = 1;
constexpr double kSlackBurst = 3;
// Our own receivers: enough for a flood of new signatures, not a denial of service.
constexpr double kDefaultRate = 10;
constexpr double kDefaultBurst = 20;
constexpr char kAlertsPath[] = "/api/v2/alerts";

std::string AlertmanagerUrl(std::string base) {
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() >= sizeof kAlertsPath - 1 &&
      base.compare(base.size() - (sizeof kAlertsPath - 1), std::string::npos, kAlertsPath) == 0) {
    return base;
  }
  return base + kAlertsPath;
}

}  // namespace

Result<std::vector<Receiver>> Receiver::Build(const AlertsConfig& config,
                                              const std::string& config_file) {
  std::vector<Receiver> out;
  ErrorList errors;
  for (std::size_t index = 0; index < config.receivers.size(); ++index) {
    const ReceiverConfig& rc = config.receivers[index];
    const std::string path = "alerts.receivers[" + std::to_string(index) + "]";
    Receiver base;
    base.name_ = rc.name;
    base.type_ = rc.type;
    base.github_secret_ = rc.github_secret;
    base.send_resolved_ = rc.send_resolved;
    base.min_severity_ = ParseSeverity(rc.min_severity).value_or(Severity::kError);
    const bool slack = rc.type == ReceiverConfig::Type::kSlack;
    base.rate_per_second_ = rc.rate_per_second > 0 ? rc.rate_per_second
                                                   : (slack ? kSlackRate : kDefaultRate);
    base.burst_ = rc.burst > 0 ? rc.burst : (slack ? kSlackBurst : kDefaultBurst);
    base.connect_timeout_ms_ = rc.connect_timeout_ms;
    base.timeout_ms_ = rc.timeout_ms;
    base.give_up_after_ms_ = rc.give_up_after_ms;
    for (const auto& [name, value] : rc.headers) base.extra_headers_.push_back(name + ": " + value);
    for (const std::string& secret : rc.secrets) {
      Result<std::string> key = ParseWebhookSecret(secret);
      if (key.ok()) {
        base.keys_.push_back(std::move(key).value());
      } else {
        errors.push_back(
            Error{config_file, rc.line, "", path + ".secrets", key.errors().front().message});
      }
    }
    for (std::size_t u = 0; u < rc.urls.size(); ++u) {
      Receiver r = base;
      r.target_ = rc.urls.size() == 1 ? rc.name : rc.name + "[" + std::to_string(u) + "]";
      r.url_ = rc.type == ReceiverConfig::Type::kAlertmanager ? AlertmanagerUrl(rc.urls[u])
                                                               : rc.urls[u];
      out.push_back(std::move(r));
    }
  }
  if (!errors.empty()) return errors;
  return out;
}

bool Receiver::Takes(AlertKind kind, Severity severity) const {
  // Alertmanager is told of every resolution, as Prometheus tells it (its own receivers'
  // send_resolved decide who hears of it): an alert left firing until its endsAt would make a
  // regression after a fix the same firing alert, which Alertmanager deduplicates away.
  if (kind == AlertKind::kResolved) {
    return send_resolved_ || type_ == ReceiverConfig::Type::kAlertmanager;
  }
  // The agent's messages about itself reach everyone.
  if (kind == AlertKind::kReceiverDisabled) return true;
  return severity >= min_severity_;
}

PreparedRequest Receiver::Prepare(const Notification& n, int64_t now_unix_seconds) const {
  PreparedRequest request;
  request.url = url_;
  request.headers = {"Content-Type: application/json",
                     std::string("User-Agent: faultline/") + kVersion};
  switch (type_) {
    case ReceiverConfig::Type::kSlack:
      request.body = RenderSlackMessage(n);
      break;
    case ReceiverConfig::Type::kAlertmanager:
      request.body = RenderAlertmanagerAlerts(n);
      break;
    case ReceiverConfig::Type::kWebhook:
      request.body = RenderWebhookBody(n);
      request.headers.push_back("webhook-id: " + n.id);
      request.headers.push_back("webhook-timestamp: " + std::to_string(now_unix_seconds));
      if (!keys_.empty()) {
        request.headers.push_back(
            "webhook-signature: " +
            StandardWebhookSignatureHeader(keys_, n.id, now_unix_seconds, request.body));
      }
      if (!github_secret_.empty()) {
        request.headers.push_back("X-Hub-Signature-256: " +
                                  GithubSignature256(github_secret_, request.body));
      }
      break;
  }
  request.headers.insert(request.headers.end(), extra_headers_.begin(), extra_headers_.end());
  return request;
}

OutboxTarget Receiver::outbox_target() const {
  OutboxTarget t;
  t.name = target_;
  t.rate_per_second = rate_per_second_;
  t.burst = burst_;
  t.policy.give_up_after = std::chrono::milliseconds(give_up_after_ms_);
  return t;
}

}  // namespace faultline
