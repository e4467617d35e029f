// Discovery: the agent's record of error lines no rule explained ("unrecognised"), grouped into
// templates; and StreamDiscovery, the per-stream stage that finds them.
//
// StreamDiscovery is the LineWatcher (agent/match/line_watcher.h) of one stream. The matcher
// hands it the lines that showed an error cue (error_cues.h) in the same pass that matches the
// rules; it also looks at the lines after a Python traceback's first line for the exception
// line. A cue line is unrecognised unless a finding explains it: a rule raised the line itself,
// or raised a line within that rule's explain window of it (RuleSet::explain_window: its
// context window). Since such a finding may come later (a hit waiting for context), a cue line
// is held until no finding can explain it any more (the matcher says where findings are still
// possible; the widest window of the rule set says how far back they reach), the stream goes
// quiet, or it ends; at most kMaxHeld lines are held per stream (beyond that the oldest is
// decided early), each cut to kHeldBytes. Then it is recorded in the Discovery.
//
// Discovery masks each recorded line (masker.h) and adds it to its TemplateMiner, keeping per
// template: its text and id, count, cue, the first occurrence (source, stream, line, text) and
// up to kMaxExamples distinct example lines of at most kExampleBytes. It holds at most
// max_templates templates; the least recently seen is evicted (and counted) when a new one
// needs room. Two hooks leave it: the alert hook is called once per template id when its count
// reaches alert_after (an owned FindingEvent for signature `unrecognised.<template id>`, what
// the alerts stage turns into a `new` event), and an observer sees every recorded line with
// its template (tools measure with it).
//
// Not thread-safe: one Discovery per agent (or scan), on the event loop; it must outlive its
// StreamDiscoverys. Nothing here fails or throws; recording allocates, but only for cue lines.
#ifndef FAULTLINE_DISCOVER_DISCOVERY_H_
#define FAULTLINE_DISCOVER_DISCOVERY_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/clock.h"
#include "agent/discover/error_cues.h"
#include "agent/discover/template_miner.h"
#include "agent/match/line_watcher.h"
#include "agent/rules/finding_event.h"

namespace faultline {

// One unrecognised line, as a stream hands it over; the views live for the call.
struct UnrecognisedLine {
  ErrorCue cue = ErrorCue::kErrorLevel;
  std::string_view source_id;  // the config's source id; empty in scan
  std::string_view stream;     // a path as the user named it, a peer, "-" for stdin
  uint64_t line_number = 0;
  std::string_view text;  // at most StreamDiscovery::kHeldBytes of the line
};

struct TemplateStats {
  std::string id;    // TemplateId(text)
  std::string text;  // tokens joined by spaces, variables as <*>
  ErrorCue cue = ErrorCue::kErrorLevel;  // of its first line
  uint64_t count = 0;
  struct Occurrence {
    std::string source_id;
    std::string stream;
    uint64_t line_number = 0;
    std::string text;  // raw bytes, at most Discovery::kExampleBytes
  };
  Occurrence first;
  std::vector<std::string> examples;  // distinct lines, the first one first
  WallTime first_seen;
  WallTime last_seen;
  uint64_t created = 0;  // order of creation, to sort ties by age
  bool alerted = false;
};

struct DiscoveryOptions {
  std::size_t max_templates = 1000;
  uint64_t alert_after = 3;
};

class Discovery {
 public:
  static constexpr std::size_t kExampleBytes = 512;
  static constexpr std::size_t kMaxExamples = 3;
  using AlertHook = std::function<void(const FindingEvent&)>;
  using Observer = std::function<void(const UnrecognisedLine&, const TemplateStats&)>;

  explicit Discovery(DiscoveryOptions options = {}, WallClock clock = SystemNow);

  void Record(const UnrecognisedLine& line);

  // Live templates, most lines first, then oldest first.
  std::vector<const TemplateStats*> Sorted() const;
  const TemplateStats* Find(std::string_view id) const;
  uint64_t lines() const { return lines_; }
  uint64_t evictions() const { return miner_.evictions(); }
  std::size_t size() const { return miner_.size(); }
  // Bytes of templates, examples and the miner's tree, for memory figures.
  std::size_t ApproximateBytes() const;

  void SetAlertHook(AlertHook hook) { alert_hook_ = std::move(hook); }
  void SetObserver(Observer observer) { observer_ = std::move(observer); }

 private:
  const DiscoveryOptions options_;
  const WallClock clock_;
  TemplateMiner miner_;
  std::vector<TemplateStats> stats_;  // by miner slot
  std::vector<std::string> tokens_;
  uint64_t lines_ = 0;
  uint64_t created_ = 0;
  AlertHook alert_hook_;
  Observer observer_;
};

class StreamDiscovery : public LineWatcher {
 public:
  static constexpr std::size_t kMaxHeld = 256;
  static constexpr std::size_t kHeldBytes = 1024;
  // A traceback whose exception line has not come after this many lines is given up.
  static constexpr uint64_t kMaxTracebackLines = 1000;

  // `explain_window`: the widest explain window of the stream's rules
  // (RuleSet::max_explain_window). `discovery` must outlive this object.
  StreamDiscovery(Discovery& discovery, std::string source_id, std::string stream,
                  uint32_t explain_window);

  // Lines recorded as unrecognised so far.
  uint64_t unrecognised_lines() const { return unrecognised_; }
  std::size_t held() const { return held_.size(); }
  // The stream's rules were reloaded: `explain_window` is the new rules' widest.
  void SetExplainWindow(uint32_t explain_window) { explain_window_ = explain_window; }

  void OnBatch(const LineBatch& batch, uint64_t first_line, std::span<const Hit> hits,
               uint64_t open_from) override;
  void OnFinding(uint64_t line, uint32_t window) override;
  void OnSettled() override;
  void OnFinish() override;

 private:
  struct Held {
    uint64_t line;
    ErrorCue cue;
    std::string text;
  };
  struct Interval {
    uint64_t from;
    uint64_t to;
  };

  // A cue line: held unless a finding already explains it.
  void Consider(uint64_t line, ErrorCue cue, std::string_view text);
  // What a line after an open traceback's first line is to it. Its frames and source lines are
  // never candidates of their own, even behind a logger header that says ERROR (vLLM prints
  // every line of a logged traceback behind "(APIServer pid=N) ERROR <time> [file:line] "): the
  // exception line stands for the traceback.
  enum class TracebackPart { kNone, kBody, kExceptionLine };
  TracebackPart AfterTraceback(uint64_t line, std::string_view text);
  bool Explained(uint64_t line) const;
  void Release(const Held& held);
  void ReleaseBefore(uint64_t line);

  Discovery& discovery_;
  const std::string source_id_;
  const std::string stream_;
  uint32_t explain_window_;

  std::deque<Held> held_;
  std::vector<Interval> explained_;  // lines findings explain; merged, roughly in order
  uint64_t unrecognised_ = 0;
  bool in_traceback_ = false;
  uint64_t traceback_line_ = 0;
  std::string traceback_prefix_;
};

}  // namespace faultline

#endif  // FAULTLINE_DISCOVER_DISCOVERY_H_
