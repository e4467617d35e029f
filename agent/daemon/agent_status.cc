// Agent::Status: gathers what the status page and /api/v1/status show from the stages that know
// it (tally and latest hits, unrecognised errors, sources, rules, reloads), on the event loop.
#include <map>
#include <string_view>

#include "agent/core/clock.h"
#include "agent/core/version.h"
#include "agent/daemon/agent.h"
#include "agent/framing/utf8.h"

namespace faultline {
namespace {

// Rows the page and the JSON carry; the tally keeps more, and says how many.
constexpr std::size_t kMaxStatusSignatures = 500;
// Templates of unrecognised errors they carry; /api/v1/unrecognised has all of them.
constexpr std::size_t kMaxStatusTemplates = 100;

}  // namespace

StatusReport Agent::Status() {
  StatusReport report;
  report.version = kVersion;
  report.generated_at = SystemNow();
  report.started_at = started_at_;

  std::map<std::string_view, const Rule*> rules_by_id;
  for (const Rule& rule : rules_->rules()) rules_by_id.emplace(rule.id, &rule);
  report.signatures_total = tally_.counts().size();
  report.signatures_forgotten = tally_.forgotten();
  for (const SignatureCount& count : tally_.counts()) {
    if (report.signatures.size() >= kMaxStatusSignatures) break;
    StatusReport::Signature& s = report.signatures.emplace_back();
    s.signature = count.signature;
    s.rule_id = count.rule_id;
    if (const auto rule = rules_by_id.find(count.rule_id); rule != rules_by_id.end()) {
      s.title = rule->second->title;
    }
    s.worst_severity = count.worst_severity;
    s.count = count.count;
    s.first_seen = count.first_seen;
    s.last_seen = count.last_seen;
    if (const FindingEvent* hit = latest_.Find(count.signature)) s.last_hit = *hit;
    if (alerting_ != nullptr) s.state = alerting_->StateName(count.signature);
  }

  for (auto& [id, status] : sources_.Status()) {
    StatusReport::Source& source = report.sources.emplace_back();
    const Metrics::SourceCounters counters = metrics_.ForSource(id);
    source.id = id;
    source.status = std::move(status);
    source.lines = static_cast<uint64_t>(counters.lines->Value());
    source.bytes = static_cast<uint64_t>(counters.bytes->Value());
  }

  report.unrecognised.enabled = config_.discover_enabled;
  const std::vector<const TemplateStats*> templates = discovery_.Sorted();
  report.unrecognised.templates_total = templates.size();
  report.unrecognised.lines = discovery_.lines();
  report.unrecognised.evicted = discovery_.evictions();
  for (const TemplateStats* t : templates) {
    if (report.unrecognised.templates.size() >= kMaxStatusTemplates) break;
    report.unrecognised.templates.push_back({.id = t->id,
                                             .text = SanitizeUtf8(t->text),
                                             .cue = std::string(CueName(t->cue)),
                                             .severity = CueSeverity(t->cue),
                                             .count = t->count,
                                             .first_seen = t->first_seen,
                                             .last_seen = t->last_seen,
                                             .source_id = t->first.source_id,
                                             .stream = SanitizeUtf8(t->first.stream),
                                             .line_number = t->first.line_number,
                                             .first_text = SanitizeUtf8(t->first.text)});
  }

  report.rules.loaded = rules_->rules().size();
  report.rules.patterns = rules_->patterns().size();
  report.rules.paths = config_.rule_paths;
  report.rules.loaded_at = rules_loaded_at_;

  if (last_reload_.has_value()) {
    report.last_reload = StatusReport::Reload{.at = last_reload_->at,
                                              .trigger = last_reload_->trigger,
                                              .ok = last_reload_->ok,
                                              .errors = last_reload_->errors,
                                              .warnings = last_reload_->warnings,
                                              .duration_ms = last_reload_->duration_ms,
                                              .apply_ms = last_reload_->apply_ms};
  }
  report.reloads_ok = reloads_ok_;
  report.reloads_failed = reloads_failed_;
  return report;
}

}  // namespace faultline
