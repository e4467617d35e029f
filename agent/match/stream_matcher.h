// StreamMatcher: applies a RuleSet to the lines of one stream (a file, a connection, stdin) and
// reports Findings, with the state that spans lines: context windows, multi-line sequences and
// hits whose severity is still pending on lines to come.
//
// Severity of a hit of a rule with `context` (rules/README.md):
//   - requires_any: satisfied when one of its patterns is seen within `within_lines` before or
//     after the hit; otherwise the hit is reported at `unconfirmed_severity`, or dropped.
//   - downgrade_if_preceded_by / downgrade_if_followed_by: a benign pattern within the window
//     lowers the severity to `downgrade_to`.
// A hit that still waits on lines after it is *pending*. It is settled, and reported, as soon as
// the answer is known: the awaited line arrives, the window has passed (checked at every hit and
// at the end of every batch), or SettlePending() is called because the stream has been quiet, or
// Finish() at end of input. So pending context never loses a finding and delays one at most by the
// window or the owner's quiet timeout. Findings come out in the order they are settled.
//
// When several rules raise one line, each counts it once; a `generic` rule (a catch-all such as a
// `CUDA error: <message>` line) stays silent on a line whose fingerprint a rule that is not generic
// also matched, since that rule explains the line better.
//
// Memory is bounded per stream: a pending hit keeps a preview of its line (kPreviewBytes), its
// label values and a few context lines (kPendingContextBytes each), never the whole line, so
// kMaxPending hits of 64 MiB lines cost a few MiB, not GiBs; the last lines of a batch kept for
// the context of the next one are at most kLookbackBytes, and freed when the stream goes quiet.
//
// A LineWatcher (line_watcher.h), when given, is handed the lines the RuleSet's watch patterns
// matched after each batch, and every finding as it is reported.
//
// Lines with no candidate pattern cost nothing here; work is per hit. Process never throws and,
// after warm-up, allocates only for hits that become pending or carry labels.
// Not thread-safe: one StreamMatcher per stream, used on one thread. The RuleSet, the sink and
// the watcher must outlive it.
#ifndef FAULTLINE_MATCH_STREAM_MATCHER_H_
#define FAULTLINE_MATCH_STREAM_MATCHER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/framing/line_batch.h"
#include "agent/match/finding.h"
#include "agent/match/line_watcher.h"
#include "agent/match/pattern_set.h"
#include "agent/match/rule_set.h"
#include "agent/match/stream_state.h"

namespace faultline {

class StreamMatcher {
 public:
  // Pending hits kept per stream; beyond this the oldest is settled early with what is known,
  // so a flood of context hits costs bounded memory.
  static constexpr size_t kMaxPending = 1024;
  // What a finding keeps of a line that is not at hand any more (a pending hit, the first line
  // of a sequence, the lines before a batch): enough to read the message, not a 64 MiB blob.
  static constexpr size_t kPreviewBytes = 4096;
  static constexpr size_t kPendingContextBytes = 512;
  // At most this many bytes of a batch's last lines are kept for the context of the next batch's
  // hits; longer tails are matched at once instead (MatchWindows).
  static constexpr size_t kLookbackBytes = 256 * 1024;

  // `origin`, when given, is stamped on every finding and must outlive the matcher.
  StreamMatcher(std::shared_ptr<const RuleSet> rules, FindingSink* sink,
                const StreamOrigin* origin = nullptr, LineWatcher* watcher = nullptr);

  // Matches the lines of `batch`, numbered from lines_seen() + 1.
  void Process(const LineBatch& batch, MatchScratch& scratch);
  // Process, for a batch whose primary pass (PatternSet::Match with this matcher's rules) was
  // already run, on another thread (match_ahead.h): `primary_hits` are its hits. They are taken
  // over; the vector is left holding an earlier batch's hits, so its memory circulates.
  void ProcessMatched(const LineBatch& batch, std::vector<PatternSet::Hit>& primary_hits,
                      MatchScratch& scratch);
  // Settles every pending hit now: the stream has been quiet. Sequences in progress are kept (a
  // message's next line may come after a pause).
  void SettlePending();
  // End of input: settles every pending hit and forgets sequences in progress.
  void Finish();

  // Matches the last lines of the previous batch that were kept for the context of hits to come
  // (see MatchWindows) and frees them: the stream is quiet, its memory is better given back.
  void ReleaseLookback(MatchScratch& scratch);

  // Goes on with `rules` (a reloaded rule set) from the next line, keeping what the stream knows
  // by rule id and pattern text: pending hits of rules that still exist stay pending (and are
  // decided by the new rule's context), a sequence in progress survives when its rule still has
  // that sequence with the same steps, and the context seen before a hit is kept for patterns
  // both sets have. Pending hits of rules that are gone are settled first, with the old rules,
  // so the sink sees them before it is rebound. Call ReleaseLookback first, with the old rules'
  // scratch, or the context of the lines before is lost. Never throws.
  void Rebind(std::shared_ptr<const RuleSet> rules);

  bool has_pending() const { return !pending_.empty(); }
  uint64_t lines_seen() const { return lines_seen_; }
  // A stream resumed from a checkpoint numbers its lines on from `lines_before`.
  // REQUIRES: nothing processed yet.
  void ResumeAtLine(uint64_t lines_before) { lines_seen_ = lines_before; }

  // The earliest line still open (a hit waiting for context, the first line of a sequence in
  // progress): where a restarted reader must begin so that nothing open is lost.
  struct OpenLine {
    uint64_t line_number;
    uint64_t stream_begin;
  };
  std::optional<OpenLine> EarliestOpenLine() const;
  // The findings not reported yet whose lines were seen: hits waiting for context, and the first
  // lines of sequences in progress (a sequence's finding carries its first line).
  std::vector<PendingHitState> PendingHits() const;

 private:
  struct Pending {
    uint32_t rule;
    uint64_t line;
    uint64_t deadline;  // last line that can still decide it
    bool confirmed;
    bool downgraded;
    // A generic hit waiting for the specific hits of its line: dropped if one of them is raised.
    bool yields = false;
    uint64_t stream_begin = 0;  // stream offset of the hit line
    std::string preview;        // at most kPreviewBytes of the hit line
    bool preview_truncated = false;
    std::vector<std::string> labels;  // taken from the whole line when it was seen
    std::vector<std::string> context_before;
  };
  struct SequenceProgress {
    uint32_t next_step = 0;
    uint64_t start_line = 0;
    uint64_t start_begin = 0;  // stream offset of the first step's line
    std::string start_text;    // at most kPreviewBytes of the first step's line
    bool start_truncated = false;
    // The rule was already raised on the start line by a single-line pattern: completing the
    // sequence must not count that line again.
    bool start_line_counted = false;
  };

  // Everything of Process after the primary pass, whose hits are in hits_.
  void ProcessHits(const LineBatch& batch, MatchScratch& scratch);
  void ProcessLine(uint64_t line_number, std::string_view text, uint64_t line_begin,
                   std::span<const PatternSet::Hit> hits);
  // What became of a hit, ordered so that the strongest of several is their maximum.
  enum class Outcome { kNone, kPending, kEmitted };
  // A hit of `rule` reported at `line_number`. Context windows are measured from `context_line`:
  // the hit line itself, or the line that completed a sequence. `truncated`: `text` is a preview.
  // `line_begin` is the stream offset of the hit line.
  Outcome Trigger(uint32_t rule, uint64_t line_number, uint64_t context_line, uint64_t line_begin,
                  std::string_view text, bool truncated);
  // A hit of generic `rule` on a line whose specific hits are pending until `deadline`.
  void TriggerYielding(uint32_t rule, uint64_t line_number, uint64_t line_begin,
                       std::string_view text, uint64_t deadline);
  // Keeps `p` pending, with a preview of `text` and the labels and context taken for it.
  void Enqueue(Pending p, std::string_view text, bool truncated);
  void AdvanceSequence(uint32_t sequence, uint32_t step_mask, uint64_t line_number,
                       uint64_t line_begin, std::string_view text);
  bool SeenWithin(std::span<const uint32_t> patterns, uint64_t line, int window) const;
  bool IsDecided(const Pending& p) const;
  // The severity `p` is reported at with what is known now; nothing when it is dropped.
  std::optional<Severity> SettledSeverity(const Pending& p) const;
  // Reports `p` with what is known now: from its stored preview, or from its line at hand, with
  // the labels and context already taken for it.
  void Settle(const Pending& p);
  // Returns whether it was reported (not dropped).
  bool Settle(const Pending& p, std::string_view text, bool truncated);
  void SettleExpired(uint64_t line_number);
  // Fills label_values_ with `rule`'s label captures from `text`.
  void TakeLabels(uint32_t rule, std::string_view text);
  // Points context_views_ at the lines before `line_number` that are still at hand.
  void TakeContext(uint64_t line_number);
  // Reports a finding whose labels are in label_values_ and context in context_views_.
  void Emit(uint32_t rule, Severity severity, uint64_t line_number, std::string_view text,
            bool truncated);
  // Adds to hits_ the hits of the RuleSet's window tiers (patterns only context conditions use)
  // on the lines that can need them: within a tier's width of a hit that opens a window, the
  // lines that windows of earlier batches still cover, and the batch's last lines, which hits in
  // the next batch look back on. Those last lines are copied (lookback_) rather than matched when
  // they fit kLookbackBytes, and matched only if the next batch's hits reach back to them. Every
  // line within a rule's window of its hit is matched, so context decides exactly as if those
  // patterns were matched on every line.
  void MatchWindows(const LineBatch& batch, MatchScratch& scratch);
  // Matches window tier `tier` on the kept lines of the previous batch, for last_seen_.
  void MatchLookback(size_t tier, MatchScratch& scratch);
  // Keeps the last lines of `batch` for the context of hits early in the next batch.
  void RememberTail(const LineBatch& batch);
  // Hands the watch hits of `batch` (numbered from `first`) to the watcher.
  void Watch(const LineBatch& batch, uint64_t first);

  std::shared_ptr<const RuleSet> rules_;
  FindingSink* const sink_;
  const StreamOrigin* const origin_;
  LineWatcher* const watcher_;

  uint64_t lines_seen_ = 0;
  std::vector<PatternSet::Hit> hits_;
  // Per window tier: the last stream line its patterns must still be matched on, 0 for none.
  std::vector<uint64_t> window_until_;
  std::vector<std::pair<size_t, size_t>> ranges_;  // line ranges of the batch to match a tier on
  // The previous batch's last lines (as many as the widest tier kept), its stream line number of
  // the first, and per tier whether they are still unmatched for it.
  LineBatch lookback_;
  uint64_t lookback_first_line_ = 0;
  std::vector<bool> lookback_unmatched_;
  std::vector<PatternSet::Hit> lookback_hits_;
  std::vector<LineWatcher::Hit> watch_hits_;
  std::vector<uint64_t> last_seen_;       // per pattern: last line it matched, 0 = never
  std::vector<uint64_t> last_triggered_;  // per rule: last line that raised it, 0 = never
  std::deque<Pending> pending_;
  uint64_t earliest_deadline_ = 0;  // of pending_; may be stale-low, never too high
  std::vector<SequenceProgress> sequences_;
  std::vector<uint32_t> sequence_masks_;  // per sequence: steps matched on the current line
  std::vector<uint32_t> touched_sequences_;
  std::vector<std::string> label_values_;
  std::vector<std::string_view> context_views_;
  // Pending generic hits that yield, and the lines specific rules raised while there were any.
  size_t yielding_ = 0;
  std::vector<uint64_t> specific_raised_;
  // The batch being processed and the stream line number of its first line, for context.
  const LineBatch* batch_ = nullptr;
  uint64_t batch_first_line_ = 0;
  // The last lines of the previous batch (previews), oldest first, and the number of the last.
  std::vector<std::string> previous_tail_;
  uint64_t previous_tail_last_line_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_STREAM_MATCHER_H_
