#include "agent/sink/finding_events.h"

#include <algorithm>

#include "agent/framing/utf8.h"

namespace faultline {
namespace {

// Valid UTF-8 of at most `max` bytes of `bytes`, cut at a character boundary.
std::string Bounded(std::string_view bytes, std::size_t max, bool* truncated) {
  std::string text = SanitizeUtf8(bytes.substr(0, max));
  if (bytes.size() > max) {
    *truncated = true;
    // The cut may have split a character into U+FFFD: drop what the cut made.
    if (text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0 &&
        (static_cast<unsigned char>(bytes[max]) & 0xC0) == 0x80) {
      text.resize(text.size() - 3);
    }
  }
  // Replacement characters are longer than the bytes they replace: cut again, at a boundary.
  if (text.size() > max) {
    *truncated = true;
    std::size_t end = max;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text.resize(end);
  }
  return text;
}

}  // namespace

FindingEventBuilder::FindingEventBuilder(SignatureLabels& labels, WallClock clock)
    : labels_(labels), clock_(std::move(clock)) {}

void FindingEventBuilder::OnFinding(const Finding& finding) {
  if (sinks_.empty() || finding.rule == nullptr) return;
  FindingEvent event;
  event.rule_id = finding.rule->id;
  event.labels = labels_.Resolve(finding);
  event.signature = SignatureLabels::Key(event.rule_id, event.labels);
  event.severity = finding.severity;
  if (finding.origin != nullptr) {
    event.source_id = finding.origin->source_id;
    event.stream_id = finding.origin->stream_id;
    event.stream_name = finding.origin->stream_name;
  }
  event.line_number = finding.line_number;
  event.observed_at = clock_();
  if (finding.line_time_ms) {
    event.line_time = FromUnixMs(*finding.line_time_ms);
  }
  event.text_truncated = finding.text_truncated;
  event.text = Bounded(finding.text, FindingEvent::kMaxTextBytes, &event.text_truncated);
  const std::size_t skip = finding.context_before.size() > FindingEvent::kMaxContextLines
                               ? finding.context_before.size() - FindingEvent::kMaxContextLines
                               : 0;
  for (std::size_t i = skip; i < finding.context_before.size(); ++i) {
    bool ignored = false;
    event.context_before.push_back(
        Bounded(finding.context_before[i], FindingEvent::kMaxTextBytes, &ignored));
  }
  for (FindingEventSink* sink : sinks_) sink->OnEvent(event);
}

void LatestFindings::OnEvent(const FindingEvent& event) {
  auto it = by_signature_.find(event.signature);
  if (it != by_signature_.end()) {
    events_.erase(it->second);
  } else if (events_.size() >= max_ && !events_.empty()) {
    by_signature_.erase(events_.back().signature);
    events_.pop_back();
    ++forgotten_;
  }
  events_.push_front(event);
  by_signature_[event.signature] = events_.begin();
}

const FindingEvent* LatestFindings::Find(const std::string& signature) const {
  const auto it = by_signature_.find(signature);
  return it == by_signature_.end() ? nullptr : &*it->second;
}

}  // namespace faultline
