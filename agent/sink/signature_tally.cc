#include "agent/sink/signature_tally.h"

#include <algorithm>

namespace faultline {

void SignatureTally::OnEvent(const FindingEvent& event) {
  // The sender's time when it gave one: lines of several senders, or over UDP, may come out of
  // the order they were written in.
  const auto at = event.line_time.value_or(event.observed_at);
  auto it = by_signature_.find(event.signature);
  if (it == by_signature_.end()) {
    if (counts_.size() >= max_ && !counts_.empty()) {
      by_signature_.erase(counts_.back().signature);
      counts_.pop_back();
      ++forgotten_;
    }
    counts_.push_front(SignatureCount{.signature = event.signature,
                                      .rule_id = event.rule_id,
                                      .worst_severity = event.severity,
                                      .first_seen = at,
                                      .last_seen = at});
    it = by_signature_.emplace(event.signature, counts_.begin()).first;
  } else if (it->second != counts_.begin()) {
    counts_.splice(counts_.begin(), counts_, it->second);
  }
  SignatureCount& count = *it->second;
  ++count.count;
  count.worst_severity = std::max(count.worst_severity, event.severity);
  count.first_seen = std::min(count.first_seen, at);
  count.last_seen = std::max(count.last_seen, at);
}

void SignatureTally::Retain(const std::set<std::string, std::less<>>& rule_ids) {
  for (auto it = counts_.begin(); it != counts_.end();) {
    if (rule_ids.count(it->rule_id) != 0) {
      ++it;
      continue;
    }
    by_signature_.erase(it->signature);
    it = counts_.erase(it);
  }
}

}  // namespace faultline
