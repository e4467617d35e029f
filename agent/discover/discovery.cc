#include "agent/discover/discovery.h"

#include <algorithm>

#include "agent/discover/masker.h"
#include "agent/framing/utf8.h"

namespace faultline {
namespace {

std::string_view Cut(std::string_view text, std::size_t max) { return text.substr(0, max); }

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// IPython's `CalledProcessError                        Traceback (most recent call last)`: an
// exception name, then a run of spaces.
bool IsIpythonHeader(std::string_view prefix) {
  size_t end = prefix.size();
  while (end > 0 && IsBlank(prefix[end - 1])) --end;
  return prefix.size() - end >= 2 && IsExceptionLine(prefix.substr(0, end));
}

}  // namespace

Discovery::Discovery(DiscoveryOptions options, WallClock clock)
    : options_(options),
      clock_(std::move(clock)),
      miner_(MinerOptions{.max_templates = std::max<std::size_t>(options.max_templates, 1)}) {}

void Discovery::Record(const UnrecognisedLine& line) {
  ++lines_;
  const std::string_view text = Cut(line.text, StreamDiscovery::kHeldBytes);
  MaskLine(text, tokens_);
  const TemplateMiner::AddResult added = miner_.Add(tokens_);
  if (added.slot >= stats_.size()) stats_.resize(added.slot + 1);
  TemplateStats& t = stats_[added.slot];
  const auto now = clock_();
  if (added.created) {
    t = TemplateStats{};
    t.cue = line.cue;
    t.first = {std::string(line.source_id), std::string(line.stream), line.line_number,
               std::string(Cut(text, kExampleBytes))};
    t.first_seen = now;
    t.created = created_++;
  }
  if (added.created || added.changed) {
    t.text = miner_.Text(added.slot);
    t.id = TemplateId(t.text);
  }
  ++t.count;
  t.last_seen = now;
  const std::string_view example = Cut(text, kExampleBytes);
  if (t.examples.size() < kMaxExamples &&
      std::find(t.examples.begin(), t.examples.end(), example) == t.examples.end()) {
    t.examples.emplace_back(example);
  }
  if (!t.alerted && t.count >= options_.alert_after && alert_hook_) {
    t.alerted = true;
    FindingEvent event;
    event.rule_id = "unrecognised." + t.id;
    event.signature = event.rule_id;
    event.severity = CueSeverity(t.cue);
    event.source_id = std::string(line.source_id);
    event.stream_name = SanitizeUtf8(line.stream);
    event.line_number = line.line_number;
    event.observed_at = now;
    event.text = SanitizeUtf8(Cut(text, FindingEvent::kMaxTextBytes));
    event.text_truncated = line.text.size() > text.size();
    alert_hook_(event);
  }
  if (observer_) observer_(line, t);
}

std::vector<const TemplateStats*> Discovery::Sorted() const {
  std::vector<const TemplateStats*> out;
  for (uint32_t slot = 0; slot < stats_.size(); ++slot) {
    if (miner_.live(slot)) out.push_back(&stats_[slot]);
  }
  std::sort(out.begin(), out.end(), [](const TemplateStats* a, const TemplateStats* b) {
    return a->count != b->count ? a->count > b->count : a->created < b->created;
  });
  return out;
}

const TemplateStats* Discovery::Find(std::string_view id) const {
  for (uint32_t slot = 0; slot < stats_.size(); ++slot) {
    if (miner_.live(slot) && stats_[slot].id == id) return &stats_[slot];
  }
  return nullptr;
}

std::size_t Discovery::ApproximateBytes() const {
  std::size_t bytes = miner_.ApproximateBytes() + stats_.capacity() * sizeof(TemplateStats);
  for (const TemplateStats& t : stats_) {
    bytes += t.text.capacity() + t.first.text.capacity() + t.first.stream.capacity() +
             t.first.source_id.capacity() + t.examples.capacity() * sizeof(std::string);
    for (const std::string& e : t.examples) bytes += e.capacity();
  }
  return bytes;
}

StreamDiscovery::StreamDiscovery(Discovery& discovery, std::string source_id, std::string stream,
                                 uint32_t explain_window)
    : discovery_(discovery),
      source_id_(std::move(source_id)),
      stream_(std::move(stream)),
      explain_window_(explain_window) {}

void StreamDiscovery::OnBatch(const LineBatch& batch, uint64_t first_line,
                              std::span<const Hit> hits, uint64_t open_from) {
  // No candidate of this batch or later comes before its first line.
  std::erase_if(explained_, [first_line](const Interval& i) { return i.to < first_line; });
  std::size_t next_hit = 0;
  std::size_t i = 0;
  while (i < batch.size()) {
    // Outside a traceback only the hit lines matter; inside one every line is looked at.
    if (!in_traceback_) {
      if (next_hit >= hits.size()) break;
      i = hits[next_hit].line;
    }
    uint32_t watches = 0;
    if (next_hit < hits.size() && hits[next_hit].line == i) watches = hits[next_hit++].watches;
    const uint64_t number = first_line + i;
    const std::string_view text = batch.line(i);
    const TracebackPart part = in_traceback_ ? AfterTraceback(number, text) : TracebackPart::kNone;
    bool ipython_header = false;
    bool opens_traceback = false;  // a candidate only through its exception line, as unprefixed
    if (watches & (1u << kTracebackWatch)) {
      if (const std::optional<size_t> at = TracebackAt(text)) {
        ipython_header = IsIpythonHeader(text.substr(0, *at));
        if (ipython_header) {
          // IPython names the exception on the traceback's first line; its frames are not
          // indented, so the line that ends the traceback cannot be told apart.
          Consider(number, ErrorCue::kPythonException, text);
        } else {
          in_traceback_ = true;
          opens_traceback = true;
          traceback_line_ = number;
          traceback_prefix_.assign(text.substr(0, std::min<size_t>(*at, kHeldBytes)));
        }
      }
    }
    if (part == TracebackPart::kNone && !ipython_header && !opens_traceback &&
        (watches & ~(1u << kTracebackWatch)) != 0) {
      if (const std::optional<ErrorCue> cue = CueOf(text)) Consider(number, *cue, text);
    }
    ++i;
  }
  ReleaseBefore(open_from > explain_window_ ? open_from - explain_window_ : 0);
}

StreamDiscovery::TracebackPart StreamDiscovery::AfterTraceback(uint64_t line,
                                                              std::string_view text) {
  if (line <= traceback_line_) return TracebackPart::kNone;
  if (line - traceback_line_ > kMaxTracebackLines) {
    in_traceback_ = false;
    return TracebackPart::kNone;
  }
  // Lines of other writers (ranks, threads) may come between; only the traceback's own prefix
  // continues it.
  if (!text.starts_with(traceback_prefix_)) return TracebackPart::kNone;
  const std::string_view rest = text.substr(traceback_prefix_.size());
  if (rest.empty() || IsBlank(rest[0])) return TracebackPart::kBody;  // a frame or its source
  if (TracebackAt(rest) == 0) return TracebackPart::kNone;  // the next traceback of a chain
  in_traceback_ = false;
  if (!IsExceptionLine(rest)) return TracebackPart::kNone;
  Consider(line, ErrorCue::kPythonException, text);
  return TracebackPart::kExceptionLine;
}

bool StreamDiscovery::Explained(uint64_t line) const {
  return std::any_of(explained_.begin(), explained_.end(),
                     [line](const Interval& i) { return i.from <= line && line <= i.to; });
}

void StreamDiscovery::Consider(uint64_t line, ErrorCue cue, std::string_view text) {
  if (Explained(line) || BelowErrorLevel(cue, text)) return;
  if (held_.size() >= kMaxHeld) {
    Release(held_.front());
    held_.pop_front();
  }
  held_.push_back(Held{line, cue, std::string(text.substr(0, kHeldBytes))});
}

void StreamDiscovery::OnFinding(uint64_t line, uint32_t window) {
  const Interval interval{line > window ? line - window : 0, line + window};
  std::erase_if(held_, [&](const Held& h) {
    return interval.from <= h.line && h.line <= interval.to;
  });
  if (!explained_.empty() && interval.from <= explained_.back().to + 1 &&
      interval.to + 1 >= explained_.back().from) {
    explained_.back().from = std::min(explained_.back().from, interval.from);
    explained_.back().to = std::max(explained_.back().to, interval.to);
  } else {
    explained_.push_back(interval);
  }
  // Findings settle out of order only within a context window; a bound keeps a flood of them
  // from growing the list between batches (merged, the range only explains more).
  if (explained_.size() > 4 * kMaxHeld) {
    Interval all = explained_.front();
    for (const Interval& i : explained_) {
      all.from = std::min(all.from, i.from);
      all.to = std::max(all.to, i.to);
    }
    explained_.assign(1, all);
  }
}

void StreamDiscovery::Release(const Held& held) {
  ++unrecognised_;
  discovery_.Record(UnrecognisedLine{held.cue, source_id_, stream_, held.line, held.text});
}

void StreamDiscovery::ReleaseBefore(uint64_t line) {
  while (!held_.empty() && held_.front().line < line) {
    Release(held_.front());
    held_.pop_front();
  }
}

void StreamDiscovery::OnSettled() {
  while (!held_.empty()) {
    Release(held_.front());
    held_.pop_front();
  }
}

void StreamDiscovery::OnFinish() {
  OnSettled();
  in_traceback_ = false;
  explained_.clear();
}

}  // namespace faultline
