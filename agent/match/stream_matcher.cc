#include "agent/match/stream_matcher.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace faultline {
namespace {

// A prefix of `text` of at most `max` bytes; sets *truncated when it is shorter than `text`.
std::string_view Preview(std::string_view text, size_t max, bool* truncated) {
  if (text.size() <= max) return text;
  *truncated = true;
  return text.substr(0, max);
}

}  // namespace

StreamMatcher::StreamMatcher(std::shared_ptr<const RuleSet> rules, FindingSink* sink,
                             const StreamOrigin* origin, LineWatcher* watcher)
    : rules_(std::move(rules)),
      sink_(sink),
      origin_(origin),
      watcher_(rules_->watch_count() > 0 ? watcher : nullptr),
      last_seen_(rules_->patterns().size(), 0),
      last_triggered_(rules_->rules().size(), 0),
      sequences_(rules_->sequences().size()),
      sequence_masks_(rules_->sequences().size(), 0) {
  window_until_.assign(rules_->patterns().window_tiers(), 0);
  lookback_unmatched_.assign(rules_->patterns().window_tiers(), false);
}

void StreamMatcher::Rebind(std::shared_ptr<const RuleSet> rules) {
  const RuleSet& old_set = *rules_;
  const RuleSet& new_set = *rules;
  std::unordered_map<std::string_view, uint32_t> new_rule;
  for (uint32_t r = 0; r < new_set.rules().size(); ++r) {
    new_rule.emplace(new_set.rules()[r].id, r);
  }
  std::unordered_map<std::string_view, uint32_t> new_pattern;
  for (uint32_t p = 0; p < new_set.patterns().size(); ++p) {
    new_pattern.emplace(new_set.patterns().regex(p).pattern(), p);
  }

  // Hits of rules that are gone are decided now, by the rules that raised them.
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (new_rule.count(old_set.rules()[it->rule].id) != 0) {
      ++it;
      continue;
    }
    Settle(*it);
    it = pending_.erase(it);
  }
  for (Pending& p : pending_) {
    const Rule& old_rule = old_set.rules()[p.rule];
    p.rule = new_rule.at(old_rule.id);
    const Rule& rule = new_set.rules()[p.rule];
    // Label values line up with the rule's labels; a rule whose labels changed gets unknowns.
    bool same_labels = old_rule.labels.size() == rule.labels.size();
    for (size_t i = 0; same_labels && i < rule.labels.size(); ++i) {
      same_labels = old_rule.labels[i].name == rule.labels[i].name;
    }
    if (!same_labels) p.labels.assign(rule.labels.size(), std::string());
  }

  std::vector<uint64_t> last_seen(new_set.patterns().size(), 0);
  for (uint32_t p = 0; p < old_set.patterns().size(); ++p) {
    const auto it = new_pattern.find(old_set.patterns().regex(p).pattern());
    if (it != new_pattern.end()) {
      last_seen[it->second] = std::max(last_seen[it->second], last_seen_[p]);
    }
  }
  std::vector<uint64_t> last_triggered(new_set.rules().size(), 0);
  for (uint32_t r = 0; r < old_set.rules().size(); ++r) {
    const auto it = new_rule.find(old_set.rules()[r].id);
    if (it != new_rule.end()) last_triggered[it->second] = last_triggered_[r];
  }

  // A sequence is the k-th of its rule; progress carries over when the steps are the same.
  std::vector<SequenceProgress> sequences(new_set.sequences().size());
  std::map<std::pair<std::string_view, uint32_t>, uint32_t> in_progress;  // (rule id, k) -> old
  std::vector<uint32_t> per_rule(old_set.rules().size(), 0);
  for (uint32_t o = 0; o < old_set.sequences().size(); ++o) {
    const uint32_t rule = old_set.sequences()[o].rule;
    const uint32_t k = per_rule[rule]++;
    if (sequences_[o].next_step > 0) {
      in_progress.emplace(std::pair{std::string_view(old_set.rules()[rule].id), k}, o);
    }
  }
  if (!in_progress.empty()) {
    per_rule.assign(new_set.rules().size(), 0);
    for (uint32_t q = 0; q < new_set.sequences().size(); ++q) {
      const uint32_t rule = new_set.sequences()[q].rule;
      const uint32_t k = per_rule[rule]++;
      const Rule& new_rule_spec = new_set.rules()[rule];
      const auto it = in_progress.find({std::string_view(new_rule_spec.id), k});
      if (it == in_progress.end()) continue;
      const Rule& old_rule_spec = old_set.rules()[old_set.sequences()[it->second].rule];
      if (old_rule_spec.sequences[k].steps == new_rule_spec.sequences[k].steps) {
        sequences[q] = std::move(sequences_[it->second]);
      }
    }
  }

  rules_ = std::move(rules);
  last_seen_ = std::move(last_seen);
  last_triggered_ = std::move(last_triggered);
  sequences_ = std::move(sequences);
  sequence_masks_.assign(new_set.sequences().size(), 0);
  touched_sequences_.clear();
  // The hits still pending were seen with the old tiers: the next lines are matched with every
  // new tier for the widest window, so none of them misses what follows it.
  window_until_.assign(new_set.patterns().window_tiers(), 0);
  lookback_unmatched_.assign(new_set.patterns().window_tiers(), false);
  lookback_.Clear();
  for (size_t t = 0; t < window_until_.size(); ++t) {
    window_until_[t] = lines_seen_ + new_set.patterns().window_width(t);
  }
}

void StreamMatcher::Process(const LineBatch& batch, MatchScratch& scratch) {
  rules_->patterns().Match(batch, scratch, hits_);
  ProcessHits(batch, scratch);
}

void StreamMatcher::ProcessMatched(const LineBatch& batch,
                                   std::vector<PatternSet::Hit>& primary_hits,
                                   MatchScratch& scratch) {
  hits_.swap(primary_hits);
  ProcessHits(batch, scratch);
}

void StreamMatcher::ProcessHits(const LineBatch& batch, MatchScratch& scratch) {
  if (!window_until_.empty()) MatchWindows(batch, scratch);
  const uint64_t first = lines_seen_ + 1;
  batch_ = &batch;
  batch_first_line_ = first;
  size_t i = 0;
  while (i < hits_.size()) {
    size_t j = i;
    while (j < hits_.size() && hits_[j].line == hits_[i].line) ++j;
    const uint32_t line = hits_[i].line;
    ProcessLine(first + line, batch.line(line), batch.stream_begin(line),
                std::span<const PatternSet::Hit>(hits_.data() + i, j - i));
    i = j;
  }
  lines_seen_ += batch.size();
  batch_ = nullptr;
  RememberTail(batch);
  SettleExpired(lines_seen_ + 1);
  if (watcher_ != nullptr) Watch(batch, first);
}

void StreamMatcher::MatchWindows(const LineBatch& batch, MatchScratch& scratch) {
  const PatternSet& patterns = rules_->patterns();
  const size_t n = batch.size();
  const uint64_t first = lines_seen_ + 1;
  const size_t primary_hits = hits_.size();
  // hits_ is sorted by line: the first hit that opens a window is the one reaching furthest back.
  size_t earliest_opening = n;
  for (size_t h = 0; h < primary_hits; ++h) {
    if (rules_->opens_window(hits_[h].pattern)) {
      earliest_opening = hits_[h].line;
      break;
    }
  }
  size_t keep_lines = 0;
  for (size_t tier = 0; tier < window_until_.size(); ++tier) {
    const size_t width = patterns.window_width(tier);
    ranges_.clear();
    // What hits of earlier batches still wait for.
    if (window_until_[tier] >= first) {
      ranges_.push_back({0, static_cast<size_t>(window_until_[tier] - first + 1)});
    }
    // Around every hit that can raise a rule with context; a window past the batch's end is
    // carried into the next batches.
    for (size_t h = 0; h < primary_hits; ++h) {
      const PatternSet::Hit& hit = hits_[h];
      if (!rules_->opens_window(hit.pattern)) continue;
      const size_t end = hit.line + width + 1;
      ranges_.push_back({hit.line > width ? hit.line - width : 0, end});
      if (end > n) window_until_[tier] = std::max(window_until_[tier], first + end - 1);
    }
    // The previous batch's last lines, kept unmatched: matched now if a window reaches back into
    // them, or if this batch is too short to take over their role.
    if (lookback_unmatched_[tier] && (earliest_opening < width || n < width)) {
      MatchLookback(tier, scratch);
    }
    lookback_unmatched_[tier] = false;
    // This batch's last lines, which hits of the next batch look back on: kept unmatched when
    // they are all in this batch and fit the look-back buffer, matched now otherwise.
    const size_t tail_begin = n > width ? n - width : 0;
    if (n >= width && batch.bytes() - batch.line_begin(tail_begin) <= kLookbackBytes) {
      lookback_unmatched_[tier] = true;
      keep_lines = std::max(keep_lines, width);
    } else {
      ranges_.push_back({tail_begin, n});
    }
    if (ranges_.empty()) continue;
    std::sort(ranges_.begin(), ranges_.end());
    size_t begin = ranges_[0].first;
    size_t end = ranges_[0].second;
    for (size_t r = 1; r <= ranges_.size(); ++r) {
      if (r < ranges_.size() && ranges_[r].first <= end) {
        end = std::max(end, ranges_[r].second);
        continue;
      }
      patterns.MatchWindow(batch, tier, begin, end, scratch, hits_);
      if (r < ranges_.size()) {
        begin = ranges_[r].first;
        end = ranges_[r].second;
      }
    }
  }
  if (hits_.size() != primary_hits) std::sort(hits_.begin(), hits_.end());

  lookback_.Clear();
  if (keep_lines > 0) {
    const size_t from = n - keep_lines;
    const size_t offset = batch.line_begin(from);
    lookback_.AppendLines(batch.text().substr(offset), batch.bytes());
    lookback_first_line_ = first + from;
  }
}

void StreamMatcher::MatchLookback(size_t tier, MatchScratch& scratch) {
  const size_t width = rules_->patterns().window_width(tier);
  const size_t n = lookback_.size();
  lookback_hits_.clear();
  rules_->patterns().MatchWindow(lookback_, tier, n > width ? n - width : 0, n, scratch,
                                 lookback_hits_);
  // Lines already processed: they only tell hits to come what was seen before them.
  for (const PatternSet::Hit& hit : lookback_hits_) {
    last_seen_[hit.pattern] = std::max(last_seen_[hit.pattern], lookback_first_line_ + hit.line);
  }
}

void StreamMatcher::ReleaseLookback(MatchScratch& scratch) {
  for (size_t tier = 0; tier < lookback_unmatched_.size(); ++tier) {
    if (lookback_unmatched_[tier]) MatchLookback(tier, scratch);
    lookback_unmatched_[tier] = false;
  }
  lookback_ = LineBatch();
}

void StreamMatcher::Watch(const LineBatch& batch, uint64_t first) {
  watch_hits_.clear();
  for (const PatternSet::Hit& hit : hits_) {
    const uint32_t mask = rules_->watch_mask(hit.pattern);
    if (mask == 0) continue;
    if (!watch_hits_.empty() && watch_hits_.back().line == hit.line) {
      watch_hits_.back().watches |= mask;
    } else {
      watch_hits_.push_back({hit.line, mask});
    }
  }
  const std::optional<OpenLine> open = EarliestOpenLine();
  watcher_->OnBatch(batch, first, watch_hits_, open ? open->line_number : lines_seen_ + 1);
}

void StreamMatcher::RememberTail(const LineBatch& batch) {
  if (batch.empty()) return;
  const size_t keep = std::min(batch.size(), Finding::kContextLines);
  // Lines of the previous tail that are still among the last kContextLines stay.
  const size_t old_keep = std::min(previous_tail_.size(), Finding::kContextLines - keep);
  previous_tail_.erase(previous_tail_.begin(),
                       previous_tail_.end() - static_cast<std::ptrdiff_t>(old_keep));
  for (size_t i = batch.size() - keep; i < batch.size(); ++i) {
    bool ignored = false;
    previous_tail_.emplace_back(Preview(batch.line(i), kPendingContextBytes, &ignored));
  }
  previous_tail_last_line_ = lines_seen_;
}

void StreamMatcher::TakeContext(uint64_t line_number) {
  context_views_.clear();
  for (uint64_t n = line_number > Finding::kContextLines ? line_number - Finding::kContextLines : 1;
       n < line_number; ++n) {
    if (batch_ != nullptr && n >= batch_first_line_) {
      bool ignored = false;
      context_views_.push_back(
          Preview(batch_->line(n - batch_first_line_), kPreviewBytes, &ignored));
    } else if (n <= previous_tail_last_line_ &&
               previous_tail_last_line_ - n < previous_tail_.size()) {
      context_views_.push_back(
          previous_tail_[previous_tail_.size() - 1 - (previous_tail_last_line_ - n)]);
    }
  }
}

std::optional<StreamMatcher::OpenLine> StreamMatcher::EarliestOpenLine() const {
  std::optional<OpenLine> earliest;
  const auto consider = [&earliest](uint64_t line, uint64_t begin) {
    if (!earliest || line < earliest->line_number) earliest = OpenLine{line, begin};
  };
  for (const Pending& p : pending_) consider(p.line, p.stream_begin);
  for (const SequenceProgress& s : sequences_) {
    if (s.next_step > 0) consider(s.start_line, s.start_begin);
  }
  return earliest;
}

std::vector<PendingHitState> StreamMatcher::PendingHits() const {
  std::vector<PendingHitState> hits;
  for (const Pending& p : pending_) hits.push_back({rules_->rules()[p.rule].id, p.line});
  // A sequence in progress reports its first line when it completes: not counted yet either.
  for (size_t i = 0; i < sequences_.size(); ++i) {
    const SequenceProgress& s = sequences_[i];
    if (s.next_step > 0 && !s.start_line_counted) {
      hits.push_back({rules_->rules()[rules_->sequences()[i].rule].id, s.start_line});
    }
  }
  return hits;
}

void StreamMatcher::SettlePending() {
  while (!pending_.empty()) {
    Settle(pending_.front());
    pending_.pop_front();
  }
  if (watcher_ != nullptr) watcher_->OnSettled();
}

void StreamMatcher::Finish() {
  SettlePending();
  for (SequenceProgress& s : sequences_) s = SequenceProgress{};
  if (watcher_ != nullptr) watcher_->OnFinish();
}

void StreamMatcher::ProcessLine(uint64_t line_number, std::string_view text, uint64_t line_begin,
                                std::span<const PatternSet::Hit> hits) {
  SettleExpired(line_number);
  for (const PatternSet::Hit& hit : hits) last_seen_[hit.pattern] = line_number;

  // Lines that pending hits wait for.
  if (!pending_.empty()) {
    bool changed = false;
    for (const PatternSet::Hit& hit : hits) {
      for (const PatternRef& ref : rules_->refs(hit.pattern)) {
        if (ref.role != PatternRole::kRequires && ref.role != PatternRole::kDowngradeAfter) {
          continue;
        }
        for (Pending& p : pending_) {
          if (p.rule != ref.rule) continue;
          if (ref.role == PatternRole::kRequires) p.confirmed = true;
          if (ref.role == PatternRole::kDowngradeAfter) p.downgraded = true;
          changed = true;
        }
      }
    }
    if (changed) {
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (IsDecided(*it)) {
          Settle(*it);
          it = pending_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }

  // New hits: specific rules first. A generic rule gives way to a specific one that raises the
  // same line; while that specific hit waits for context, the generic one waits with it.
  Outcome specific = Outcome::kNone;
  uint64_t specific_deadline = 0;
  for (const PatternSet::Hit& hit : hits) {
    for (const PatternRef& ref : rules_->refs(hit.pattern)) {
      if (ref.role == PatternRole::kMatch && !rules_->rules()[ref.rule].generic) {
        const Outcome outcome =
            Trigger(ref.rule, line_number, line_number, line_begin, text, false);
        if (outcome == Outcome::kPending) {
          specific_deadline = std::max(specific_deadline, pending_.back().deadline);
        }
        specific = std::max(specific, outcome);
      } else if (ref.role == PatternRole::kSequenceStep) {
        if (sequence_masks_[ref.sequence] == 0) touched_sequences_.push_back(ref.sequence);
        sequence_masks_[ref.sequence] |= 1u << ref.step;
      }
    }
  }
  if (specific != Outcome::kEmitted) {
    for (const PatternSet::Hit& hit : hits) {
      for (const PatternRef& ref : rules_->refs(hit.pattern)) {
        if (ref.role != PatternRole::kMatch || !rules_->rules()[ref.rule].generic) continue;
        if (specific == Outcome::kPending) {
          TriggerYielding(ref.rule, line_number, line_begin, text, specific_deadline);
        } else {
          Trigger(ref.rule, line_number, line_number, line_begin, text, false);
        }
      }
    }
  }
  for (uint32_t seq : touched_sequences_) {
    AdvanceSequence(seq, sequence_masks_[seq], line_number, line_begin, text);
    sequence_masks_[seq] = 0;
  }
  touched_sequences_.clear();
}

void StreamMatcher::AdvanceSequence(uint32_t sequence, uint32_t step_mask, uint64_t line_number,
                                    uint64_t line_begin, std::string_view text) {
  const CompiledSequence& spec = rules_->sequences()[sequence];
  SequenceProgress& progress = sequences_[sequence];
  if (progress.next_step > 0 &&
      line_number - progress.start_line >= static_cast<uint64_t>(spec.within_lines)) {
    progress = SequenceProgress{};  // too far apart: start over
  }
  if (progress.next_step > 0 && (step_mask & (1u << progress.next_step))) {
    if (++progress.next_step == spec.steps) {
      const SequenceProgress done = std::move(progress);
      progress = SequenceProgress{};
      if (!done.start_line_counted) {
        Trigger(spec.rule, done.start_line, line_number, done.start_begin, done.start_text,
                done.start_truncated);
      }
    }
    return;
  }
  if (step_mask & 1u) {
    progress.next_step = 1;
    progress.start_line = line_number;
    progress.start_begin = line_begin;
    progress.start_truncated = false;
    progress.start_text.assign(Preview(text, kPreviewBytes, &progress.start_truncated));
    // Single-line patterns of this line were triggered before sequences advance.
    progress.start_line_counted = last_triggered_[spec.rule] == line_number;
  }
}

bool StreamMatcher::SeenWithin(std::span<const uint32_t> patterns, uint64_t line,
                               int window) const {
  for (uint32_t p : patterns) {
    const uint64_t seen = last_seen_[p];
    if (seen != 0 && seen + static_cast<uint64_t>(window) >= line) return true;
  }
  return false;
}

StreamMatcher::Outcome StreamMatcher::Trigger(uint32_t rule, uint64_t line_number,
                                              uint64_t context_line, uint64_t line_begin,
                                              std::string_view text, bool truncated) {
  // A line counts once per rule, however many of the rule's patterns it matches.
  if (last_triggered_[rule] == line_number) return Outcome::kNone;
  last_triggered_[rule] = std::max(last_triggered_[rule], line_number);
  const Rule& r = rules_->rules()[rule];
  TakeLabels(rule, text);
  TakeContext(line_number);
  if (!r.context) {
    Emit(rule, r.severity, line_number, text, truncated);
    return Outcome::kEmitted;
  }
  const ContextSpec& ctx = *r.context;
  Pending p{rule, line_number, context_line + static_cast<uint64_t>(ctx.within_lines),
            SeenWithin(rules_->requires_any(rule), context_line, ctx.within_lines),
            SeenWithin(rules_->preceded_by(rule), context_line, ctx.within_lines)};
  if (IsDecided(p)) return Settle(p, text, truncated) ? Outcome::kEmitted : Outcome::kNone;
  p.stream_begin = line_begin;
  Enqueue(std::move(p), text, truncated);
  return Outcome::kPending;
}

void StreamMatcher::TriggerYielding(uint32_t rule, uint64_t line_number, uint64_t line_begin,
                                    std::string_view text, uint64_t deadline) {
  if (last_triggered_[rule] == line_number) return;
  last_triggered_[rule] = line_number;
  const Rule& r = rules_->rules()[rule];
  TakeLabels(rule, text);
  TakeContext(line_number);
  Pending p{rule, line_number, deadline, false, false};
  p.yields = true;
  p.stream_begin = line_begin;
  if (r.context) {
    const ContextSpec& ctx = *r.context;
    p.deadline = std::max(deadline, line_number + static_cast<uint64_t>(ctx.within_lines));
    p.confirmed = SeenWithin(rules_->requires_any(rule), line_number, ctx.within_lines);
    p.downgraded = SeenWithin(rules_->preceded_by(rule), line_number, ctx.within_lines);
  }
  ++yielding_;
  Enqueue(std::move(p), text, false);
}

void StreamMatcher::Enqueue(Pending p, std::string_view text, bool truncated) {
  if (pending_.size() >= kMaxPending) {
    Settle(pending_.front());
    pending_.pop_front();
    // Settling reported another hit; this one's labels and context are taken again.
    TakeLabels(p.rule, text);
    TakeContext(p.line);
  }
  p.preview_truncated = truncated;
  p.preview.assign(Preview(text, kPreviewBytes, &p.preview_truncated));
  p.labels = label_values_;
  for (std::string_view line : context_views_) {
    bool ignored = false;
    p.context_before.emplace_back(Preview(line, kPendingContextBytes, &ignored));
  }
  earliest_deadline_ = pending_.empty() ? p.deadline : std::min(earliest_deadline_, p.deadline);
  pending_.push_back(std::move(p));
}

bool StreamMatcher::IsDecided(const Pending& p) const {
  if (p.yields) {
    for (const Pending& other : pending_) {
      if (!other.yields && other.line == p.line) return false;  // the specific hit is undecided
    }
  }
  const std::optional<ContextSpec>& ctx = rules_->rules()[p.rule].context;
  if (!ctx) return true;
  const bool requirement_known = ctx->requires_any.empty() || p.confirmed;
  const bool downgrade_known = ctx->downgrade_if_followed_by.empty() || p.downgraded;
  return requirement_known && downgrade_known;
}

std::optional<Severity> StreamMatcher::SettledSeverity(const Pending& p) const {
  const Rule& r = rules_->rules()[p.rule];
  if (p.yields && std::find(specific_raised_.begin(), specific_raised_.end(), p.line) !=
                      specific_raised_.end()) {
    return std::nullopt;  // a specific rule explained the line
  }
  if (!r.context) return r.severity;
  const ContextSpec& ctx = *r.context;
  Severity severity = r.severity;
  if (!ctx.requires_any.empty() && !p.confirmed) {
    if (!ctx.unconfirmed_severity) return std::nullopt;
    severity = *ctx.unconfirmed_severity;
  }
  if (p.downgraded) severity = std::min(severity, ctx.downgrade_to);
  return severity;
}

bool StreamMatcher::Settle(const Pending& p, std::string_view text, bool truncated) {
  const std::optional<Severity> severity = SettledSeverity(p);
  if (severity) Emit(p.rule, *severity, p.line, text, truncated);
  return severity.has_value();
}

void StreamMatcher::Settle(const Pending& p) {
  const std::optional<Severity> severity = SettledSeverity(p);
  if (p.yields && --yielding_ == 0) specific_raised_.clear();
  if (!severity) return;
  label_values_ = p.labels;
  context_views_.assign(p.context_before.begin(), p.context_before.end());
  Emit(p.rule, *severity, p.line, p.preview, p.preview_truncated);
}

void StreamMatcher::SettleExpired(uint64_t line_number) {
  // Most calls find nothing expired; the earliest deadline says so without walking the queue.
  if (pending_.empty() || line_number <= earliest_deadline_) return;
  // Deadlines grow with the hit line only per rule, so the whole queue is walked.
  earliest_deadline_ = UINT64_MAX;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->deadline < line_number) {
      Settle(*it);
      it = pending_.erase(it);
    } else {
      earliest_deadline_ = std::min(earliest_deadline_, it->deadline);
      ++it;
    }
  }
}

void StreamMatcher::TakeLabels(uint32_t rule, std::string_view text) {
  const auto regexes = rules_->label_regexes(rule);
  label_values_.resize(regexes.size());
  for (size_t i = 0; i < regexes.size(); ++i) {
    re2::StringPiece value;
    if (!RE2::PartialMatch(text, *regexes[i], &value)) value = re2::StringPiece();
    label_values_[i].assign(value.data(), value.size());
  }
}

void StreamMatcher::Emit(uint32_t rule, Severity severity, uint64_t line_number,
                         std::string_view text, bool truncated) {
  if (yielding_ > 0 && !rules_->rules()[rule].generic) specific_raised_.push_back(line_number);
  Finding finding;
  finding.rule = &rules_->rules()[rule];
  finding.rule_index = rule;
  finding.origin = origin_;
  finding.severity = severity;
  finding.line_number = line_number;
  finding.text = text;
  finding.text_truncated = truncated;
  finding.label_values = label_values_;
  finding.context_before = context_views_;
  sink_->OnFinding(finding);
  if (watcher_ != nullptr) watcher_->OnFinding(line_number, rules_->explain_window(rule));
}

}  // namespace faultline
