#include "agent/alert/outbox.h"

#include <algorithm>
#include <cmath>

namespace faultline {
namespace {

using Action = RetryDecision::Action;

// Dead letters are kept for people to look at (the API, the state file); the oldest go first.
constexpr std::size_t kMaxDeadLetters = 200;

constexpr std::pair<OutboxEntry::State, std::string_view> kStateNames[] = {
    {OutboxEntry::State::kQueued, "queued"},
    {OutboxEntry::State::kDelivered, "delivered"},
    {OutboxEntry::State::kDeadLettered, "dead_lettered"},
    {OutboxEntry::State::kCoalesced, "coalesced"},
};

}  // namespace

std::string_view OutboxStateName(OutboxEntry::State state) {
  for (const auto& [s, name] : kStateNames) {
    if (s == state) return name;
  }
  return "queued";
}

std::optional<OutboxEntry::State> ParseOutboxState(std::string_view name) {
  for (const auto& [s, n] : kStateNames) {
    if (n == name) return s;
  }
  return std::nullopt;
}

Outbox::Outbox(std::vector<OutboxTarget> targets, bool store_backed) : store_backed_(store_backed) {
  for (OutboxTarget& t : targets) {
    Bucket bucket;
    bucket.tokens = t.burst;
    buckets_[t.name] = bucket;
    status_[t.name] = TargetStatus{};
    queues_[t.name];
    std::string name = t.name;
    config_.emplace(std::move(name), std::move(t));
  }
}

int64_t Outbox::Add(const std::string& target, Notification notification, int64_t now_ms,
                    bool ephemeral) {
  if (!config_.contains(target)) return 0;
  OutboxEntry e;
  e.seq = next_seq_++;
  e.target = target;
  e.notification = std::move(notification);
  e.created_ms = now_ms;
  e.next_attempt_ms = now_ms;
  e.durable = !store_backed_ || ephemeral;
  e.ephemeral = ephemeral;
  queues_[target].push_back(e.seq);
  ++status_[target].queued;
  if (!ephemeral) dirty_.insert(e.seq);
  const int64_t seq = e.seq;
  entries_.emplace(seq, std::move(e));
  return seq;
}

void Outbox::Refill(const OutboxTarget& t, Bucket& b, int64_t now_ms) const {
  if (b.refilled_ms == 0) b.refilled_ms = now_ms;
  if (now_ms > b.refilled_ms) {
    b.tokens = std::min(t.burst, b.tokens + t.rate_per_second * (now_ms - b.refilled_ms) / 1000.0);
    b.refilled_ms = now_ms;
  }
}

OutboxEntry* Outbox::Head(const std::string& target) {
  auto& queue = queues_[target];
  while (!queue.empty()) {
    const auto it = entries_.find(queue.front());
    if (it != entries_.end() && it->second.state == OutboxEntry::State::kQueued) return &it->second;
    queue.pop_front();
  }
  return nullptr;
}

OutboxEntry* Outbox::Coalesce(const std::string& target, int64_t now_ms) {
  auto& queue = queues_[target];
  std::vector<OutboxEntry*> waiting;
  for (int64_t seq : queue) {
    OutboxEntry& e = entries_.at(seq);
    if (e.state != OutboxEntry::State::kQueued || e.attempts > 0 || !e.durable) break;
    if (e.notification.test) break;  // a test message is never folded into real ones
    waiting.push_back(&e);
  }
  if (waiting.size() < 2) return nullptr;
  Notification digest;
  digest.id = "dig_" + waiting.front()->notification.id;
  digest.receiver = waiting.front()->notification.receiver;
  digest.created_ms = now_ms;
  for (OutboxEntry* e : waiting) {
    for (AlertItem& item : e->notification.items) {
      if (digest.items.size() < kMaxDigestItems) {
        digest.items.push_back(std::move(item));
      } else {
        ++digest.more;
      }
    }
    digest.more += e->notification.more;
    status_[target].coalesced += 1;
    Finish(*e, OutboxEntry::State::kCoalesced, now_ms);
  }
  // The digest goes first: it replaces the head of the queue.
  OutboxEntry d;
  d.seq = next_seq_++;
  d.target = target;
  d.notification = std::move(digest);
  d.created_ms = now_ms;
  d.next_attempt_ms = now_ms;
  d.durable = !store_backed_;
  const int64_t seq = d.seq;
  entries_.emplace(seq, std::move(d));
  queue.push_front(seq);
  ++status_[target].queued;
  dirty_.insert(seq);
  return &entries_.at(seq);
}

std::vector<Outbox::Send> Outbox::TakeDue(int64_t now_ms) {
  std::vector<Send> sends;
  for (auto& [name, target] : config_) {
    TargetStatus& status = status_[name];
    if (status.disabled || status.paused_until_ms > now_ms) continue;
    OutboxEntry* head = Head(name);
    if (head == nullptr || head->in_flight || !head->durable || head->next_attempt_ms > now_ms) {
      continue;
    }
    Bucket& bucket = buckets_[name];
    Refill(target, bucket, now_ms);
    // Retries of an attempted entry are paced by their backoff, not by the bucket.
    if (head->attempts == 0) {
      if (bucket.tokens < 1) {
        bucket.ran_dry = true;
        continue;
      }
      if (bucket.ran_dry) {
        bucket.ran_dry = false;
        if (OutboxEntry* digest = Coalesce(name, now_ms)) {
          head = digest;
          if (!head->durable) continue;  // sent once the store has it
        }
      }
      bucket.tokens -= 1;
      // Empty now: whatever waits behind this one waits for a token, and goes as one digest.
      if (bucket.tokens < 1) bucket.ran_dry = true;
    }
    head->in_flight = true;
    ++head->attempts;
    if (head->first_attempt_ms == 0) head->first_attempt_ms = now_ms;
    dirty_.insert(head->seq);
    sends.push_back(Send{head->seq, name, head->attempts});
  }
  return sends;
}

std::optional<int64_t> Outbox::NextWakeup(int64_t now_ms) const {
  std::optional<int64_t> soonest;
  const auto consider = [&](int64_t at) {
    if (!soonest || at < *soonest) soonest = at;
  };
  for (const auto& [name, target] : config_) {
    const TargetStatus& status = status_.at(name);
    if (status.disabled) continue;
    const auto q = queues_.find(name);
    if (q == queues_.end()) continue;
    const OutboxEntry* head = nullptr;
    for (int64_t seq : q->second) {
      const auto it = entries_.find(seq);
      if (it != entries_.end() && it->second.state == OutboxEntry::State::kQueued) {
        head = &it->second;
        break;
      }
    }
    if (head == nullptr || head->in_flight || !head->durable) continue;
    int64_t at = std::max(head->next_attempt_ms, status.paused_until_ms);
    if (head->attempts == 0) {
      const Bucket& b = buckets_.at(name);
      const double tokens = std::min(
          target.burst, b.tokens + target.rate_per_second *
                                       std::max<int64_t>(0, now_ms - b.refilled_ms) / 1000.0);
      if (tokens < 1) {
        at = std::max(at, now_ms + static_cast<int64_t>(
                                       std::ceil((1 - tokens) * 1000.0 / target.rate_per_second)));
      }
    }
    consider(std::max(at, now_ms));
  }
  return soonest;
}

void Outbox::Finish(OutboxEntry& e, OutboxEntry::State state, int64_t now_ms) {
  e.state = state;
  e.done_ms = now_ms;
  e.in_flight = false;
  auto& status = status_[e.target];
  if (status.queued > 0) --status.queued;
  if (state == OutboxEntry::State::kDeadLettered) {
    dirty_.insert(e.seq);
    std::vector<int64_t> dead;
    for (const auto& [seq, entry] : entries_) {
      if (entry.state == OutboxEntry::State::kDeadLettered) dead.push_back(seq);
    }
    while (dead.size() > kMaxDeadLetters) {
      removed_.push_back(dead.front());
      dirty_.erase(dead.front());
      entries_.erase(dead.front());
      dead.erase(dead.begin());
    }
    return;
  }
  // Delivered and coalesced entries are done with: the store forgets them.
  const int64_t seq = e.seq;
  dirty_.erase(seq);
  if (!e.ephemeral) removed_.push_back(seq);
  entries_.erase(seq);
}

RetryDecision Outbox::OnResult(int64_t seq, const DeliveryOutcome& outcome, int64_t now_ms,
                               double uniform01) {
  const auto it = entries_.find(seq);
  if (it == entries_.end()) return RetryDecision{Action::kDone, {}, "unknown entry"};
  OutboxEntry& e = it->second;
  const OutboxTarget& target = config_.at(e.target);
  TargetStatus& status = status_[e.target];
  e.in_flight = false;
  const RetryDecision d = target.policy.Decide(
      outcome, e.attempts, std::chrono::milliseconds(now_ms - e.first_attempt_ms), now_ms / 1000,
      uniform01);
  e.last_result = d.reason;
  dirty_.insert(seq);
  switch (d.action) {
    case Action::kDone:
      status.last_success_ms = now_ms;
      Finish(e, OutboxEntry::State::kDelivered, now_ms);
      break;
    case Action::kRetry:
      e.next_attempt_ms = now_ms + d.delay.count();
      break;
    case Action::kPauseReceiver:
      status.paused_until_ms = now_ms + d.delay.count();
      e.next_attempt_ms = status.paused_until_ms;
      break;
    case Action::kDeadLetter:
      Finish(e, OutboxEntry::State::kDeadLettered, now_ms);
      break;
    case Action::kDisableReceiver:
      status.disabled = true;
      status.disabled_reason = d.reason;
      // The entry stays queued: it goes out if the receiver comes back with a new config.
      break;
  }
  return d;
}

const OutboxEntry* Outbox::Find(int64_t seq) const {
  const auto it = entries_.find(seq);
  return it == entries_.end() ? nullptr : &it->second;
}

void Outbox::MarkDurable(const std::vector<int64_t>& seqs) {
  for (int64_t seq : seqs) {
    if (const auto it = entries_.find(seq); it != entries_.end()) it->second.durable = true;
  }
}

void Outbox::MarkAllDurable() {
  for (auto& [seq, e] : entries_) e.durable = true;
}

void Outbox::SetDisabled(const std::string& target, bool disabled, std::string reason) {
  const auto it = status_.find(target);
  if (it == status_.end()) return;
  it->second.disabled = disabled;
  it->second.disabled_reason = std::move(reason);
}

bool Outbox::WaitsForStore() const {
  for (const auto& [seq, e] : entries_) {
    if (e.state == OutboxEntry::State::kQueued && !e.durable) return true;
  }
  return false;
}

Outbox::Dirty Outbox::TakeDirty() {
  Dirty d;
  for (int64_t seq : dirty_) {
    const auto it = entries_.find(seq);
    if (it != entries_.end() && !it->second.ephemeral) d.changed.push_back(it->second);
  }
  dirty_.clear();
  d.removed = std::move(removed_);
  removed_.clear();
  return d;
}

void Outbox::Restore(std::vector<OutboxEntry> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const OutboxEntry& a, const OutboxEntry& b) { return a.seq < b.seq; });
  for (OutboxEntry& e : entries) {
    next_seq_ = std::max(next_seq_, e.seq + 1);
    if (!config_.contains(e.target)) continue;  // its receiver is gone from the config
    e.durable = true;
    e.in_flight = false;
    // The backoff the dead process chose holds (it is wall-clock time): an agent that crashes
    // and restarts in a loop must not try a dead receiver once per start. A pause (429) is the
    // head entry's next attempt too, so it holds as well.
    if (e.state == OutboxEntry::State::kQueued) {
      queues_[e.target].push_back(e.seq);
      ++status_[e.target].queued;
    } else if (e.state != OutboxEntry::State::kDeadLettered) {
      continue;
    }
    const int64_t seq = e.seq;
    entries_.emplace(seq, std::move(e));
  }
  // Seq order is queue order, with one exception: entries a digest left queued behind it (not
  // yet durable when it was made) have smaller seqs and now go before it.
}

void Outbox::MarkAllDirty() {
  for (const auto& [seq, e] : entries_) dirty_.insert(seq);
}

}  // namespace faultline
