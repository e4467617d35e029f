// Alerting (alerting.h), dispatch: notifications into the outbox, due entries to the delivery
// thread once the store holds them, the results back (retry, dead letter, a receiver disabled
// and the meta-alert about it) and the delivery gauges.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "agent/alert/alerting.h"

namespace faultline {

void Alerting::Enqueue(const std::string& target, Notification n) {
  for (const Receiver& r : receivers_) {
    if (r.target() == target) n.receiver = r.name();
  }
  outbox_->Add(target, std::move(n), NowMs());
  if (store_backed_) {
    waiting_for_store_ = true;
    if (request_checkpoint_) request_checkpoint_();
  }
  Dispatch();
}

void Alerting::OnCommitted(const std::vector<int64_t>& outbox_seqs) {
  outbox_->MarkDurable(outbox_seqs);
  waiting_for_store_ = outbox_->WaitsForStore();
  Dispatch();
}

void Alerting::OnCheckpointFailed() {
  if (!outbox_->WaitsForStore()) return;
  outbox_->MarkAllDurable();
  waiting_for_store_ = false;
  Dispatch();
}

void Alerting::Dispatch() {
  if (!running_ || delivery_ == nullptr) return;
  const int64_t now = NowMs();
  for (const Outbox::Send& send : outbox_->TakeDue(now)) {
    const OutboxEntry* entry = outbox_->Find(send.seq);
    for (const Receiver& r : receivers_) {
      if (r.target() != send.target) continue;
      delivery_->Send(HttpDelivery::Request{static_cast<uint64_t>(send.seq),
                                            r.Prepare(entry->notification, now / 1000),
                                            r.connect_timeout_ms(), r.timeout_ms()});
    }
  }
  // A digest made by TakeDue waits for the store before it goes.
  if (store_backed_ && outbox_->WaitsForStore()) {
    waiting_for_store_ = true;
    if (request_checkpoint_) request_checkpoint_();
  }
  ArmDispatchTimer();
  UpdateGauges();
}

void Alerting::ArmDispatchTimer() {
  const int64_t now = NowMs();
  const std::optional<int64_t> next = outbox_->NextWakeup(now);
  dispatch_timer_.cancel();
  if (!next) return;
  dispatch_timer_.expires_after(std::chrono::milliseconds(std::max<int64_t>(1, *next - now)));
  std::weak_ptr<bool> alive = alive_;
  dispatch_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    Dispatch();
  });
}

void Alerting::OnDelivered(int64_t seq, DeliveryOutcome outcome) {
  const OutboxEntry* entry = outbox_->Find(seq);
  if (entry == nullptr) return;
  const std::string target = entry->target;
  const Notification notification = entry->notification;
  const int64_t now = NowMs();
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const RetryDecision d = outbox_->OnResult(seq, outcome, now, uniform(random_));
  const std::string kind = notification.items.size() == 1 && notification.more == 0
                               ? std::string(AlertKindName(notification.items.front().kind))
                               : std::string("digest");
  static constexpr std::string_view kResults[] = {"delivered", "retried", "rate_limited",
                                                  "dead_lettered", "receiver_disabled"};
  metrics_.CountNotification(target, notification.test ? std::string("test") : kind,
                             kResults[static_cast<int>(d.action)]);
  switch (d.action) {
    case RetryDecision::Action::kDone:
      // Forget it in the store soon: a crash before that sends it once more (same webhook-id).
      if (store_backed_ && request_checkpoint_) request_checkpoint_();
      metrics_.SetDelivered(target, now);
      if (!notification.test) {
        for (const AlertItem& item : notification.items) {
          tracker_.OnDelivered(item.signature, target, now);
        }
      }
      break;
    case RetryDecision::Action::kRetry:
    case RetryDecision::Action::kPauseReceiver:
      spdlog::warn("alert to {} failed ({}); next try in {} ms", target, d.reason, d.delay.count());
      // The backoff is kept in the store soon, so that a restart waits it out too.
      if (store_backed_ && !notification.test && request_checkpoint_) request_checkpoint_();
      break;
    case RetryDecision::Action::kDeadLetter:
      spdlog::error("alert {} to {} dead-lettered: {}", notification.id, target, d.reason);
      break;
    case RetryDecision::Action::kDisableReceiver:
      ReportDisabled(target, d.reason);
      break;
  }
  if (notification.test && d.action != RetryDecision::Action::kRetry &&
      d.action != RetryDecision::Action::kPauseReceiver) {
    if (const auto it = tests_.find(notification.id + "\n" + target); it != tests_.end()) {
      TestDone done = std::move(it->second);
      tests_.erase(it);
      done(target, d, outcome);
    }
  }
  Dispatch();
}

void Alerting::ReportDisabled(const std::string& target, const std::string& reason) {
  spdlog::error(
      "receiver {} disabled: {} (fix its URL in the config; a restart or reload "
      "enables it again)",
      target, reason);
  metrics_.SetDisabled(target);
  AlertItem item;
  item.event_id = NewId("evt");
  item.kind = AlertKind::kReceiverDisabled;
  item.signature = "faultline.receiver_disabled{receiver=" + target + "}";
  item.rule_id = "faultline.receiver_disabled";
  item.labels = {{"receiver", target}};
  item.title = "Receiver " + target + " was disabled";
  item.severity = Severity::kError;
  item.state = "active";
  item.host = host_;
  item.detail = reason;
  item.first_seen_ms = item.last_seen_ms = NowMs();
  item.active_until_ms = item.last_seen_ms + tracker_.options().quiet_for_ms;
  Route(item, "agent", 0, 0, false);
}

void Alerting::UpdateGauges() {
  for (const auto& [name, status] : outbox_->targets()) {
    metrics_.UpdateReceiver(name, status.queued, status.disabled, status.coalesced,
                            status.last_success_ms);
  }
}

}  // namespace faultline
