// StatusReport: what the status page (`GET /`) and `GET /api/v1/status` show, as one value taken
// on the event loop and rendered by pure functions: RenderStatusHtml (status_page.h) and
// StatusJson (status_json.h), so the page and the API never disagree.
//
// Log text in it (a hit and its context lines) comes from FindingEvents: valid UTF-8 and
// bounded, but hostile; the renderers escape it. Everything else is the agent's own (rule ids
// and titles, paths, messages). A plain value; copyable.
#ifndef FAULTLINE_API_STATUS_REPORT_H_
#define FAULTLINE_API_STATUS_REPORT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/rules/finding_event.h"
#include "agent/rules/rule.h"
#include "agent/source/source_status.h"

namespace faultline {

struct StatusReport {
  using TimePoint = std::chrono::system_clock::time_point;

  std::string version;
  TimePoint generated_at;
  TimePoint started_at;

  struct Signature {
    std::string signature;  // rule id plus bounded labels
    std::string rule_id;
    std::string title;                          // of the rule now loaded
    Severity worst_severity = Severity::kInfo;  // the worst it was raised at
    // The lifecycle state (new, active, quiet, fixed, regressed, muted, resolved, flapping) with
    // alerts; empty without them (or for a signature below alerts.min_severity), and the page
    // shows no state.
    std::string state;
    uint64_t count = 0;  // hits since the agent started
    TimePoint first_seen;
    TimePoint last_seen;
    std::optional<FindingEvent> last_hit;  // with its context lines
  };
  // Most recently seen first, at most max_signatures of them.
  std::vector<Signature> signatures;
  std::size_t signatures_total = 0;   // before the cut
  uint64_t signatures_forgotten = 0;  // dropped by the tally's bound

  struct Source {
    std::string id;
    SourceStatus status;
    uint64_t lines = 0;
    uint64_t bytes = 0;
  };
  std::vector<Source> sources;

  // Unrecognised errors (agent/discover/): templates of error lines no rule explained, most lines
  // first, at most max_templates of them. Their text is made valid UTF-8 when taken.
  struct Template {
    std::string id;
    std::string text;  // variables as <*>
    std::string cue;   // CueName
    Severity severity = Severity::kError;
    uint64_t count = 0;
    TimePoint first_seen;
    TimePoint last_seen;
    std::string source_id;  // of the first line
    std::string stream;
    uint64_t line_number = 0;
    std::string first_text;
  };
  struct Unrecognised {
    bool enabled = false;  // discover.enabled
    std::vector<Template> templates;
    std::size_t templates_total = 0;  // held, before the cut
    uint64_t lines = 0;
    uint64_t evicted = 0;  // templates forgotten to stay within discover.max_templates
  } unrecognised;

  struct Rules {
    std::size_t loaded = 0;
    std::size_t patterns = 0;
    std::vector<std::string> paths;
    TimePoint loaded_at;
  } rules;

  // The latest reload attempt, if there was one.
  struct Reload {
    TimePoint at;
    std::string trigger;  // "SIGHUP", "HTTP", "file change"
    bool ok = false;
    std::vector<std::string> errors;    // file:line: key: message, when rejected
    std::vector<std::string> warnings;  // settings that need a restart, sources restarted
    double duration_ms = 0;             // from request to applied or rejected
    double apply_ms = 0;                // of that, time the event loop spent applying
  };
  std::optional<Reload> last_reload;
  uint64_t reloads_ok = 0;
  uint64_t reloads_failed = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_API_STATUS_REPORT_H_
