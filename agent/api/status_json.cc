#include "agent/api/status_json.h"

#include <ctime>
#include <nlohmann/json.hpp>

#include "agent/core/clock.h"

namespace faultline {
namespace {

using TimePoint = StatusReport::TimePoint;

nlohmann::json Time(TimePoint t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json Hit(const FindingEvent& e) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [name, value] : e.labels) labels[name] = value;
  nlohmann::json hit = {{"severity", SeverityName(e.severity)},
                        {"labels", labels},
                        {"source", e.source_id},
                        {"stream", e.stream_name},
                        {"line", e.line_number},
                        {"observed_at", Time(e.observed_at)},
                        {"observed_at_ms", UnixMs(e.observed_at)},
                        {"text", e.text},
                        {"text_truncated", e.text_truncated},
                        {"context_before", e.context_before}};
  if (e.line_time) {
    hit["line_time"] = Time(*e.line_time);
    hit["line_time_ms"] = UnixMs(*e.line_time);
  }
  return hit;
}

}  // namespace

std::string StatusJson(const StatusReport& r) {
  nlohmann::json signatures = nlohmann::json::array();
  for (const auto& s : r.signatures) {
    signatures.push_back({{"signature", s.signature},
                          {"rule_id", s.rule_id},
                          {"title", s.title},
                          {"worst_severity", SeverityName(s.worst_severity)},
                          {"state", s.state.empty() ? nlohmann::json() : nlohmann::json(s.state)},
                          {"count", s.count},
                          {"first_seen", Time(s.first_seen)},
                          {"last_seen", Time(s.last_seen)},
                          {"last_hit", s.last_hit ? Hit(*s.last_hit) : nlohmann::json()}});
  }
  nlohmann::json templates = nlohmann::json::array();
  for (const auto& t : r.unrecognised.templates) {
    templates.push_back({{"template_id", t.id},
                         {"template", t.text},
                         {"signature", "unrecognised." + t.id},
                         {"cue", t.cue},
                         {"severity", SeverityName(t.severity)},
                         {"count", t.count},
                         {"first_seen", Time(t.first_seen)},
                         {"last_seen", Time(t.last_seen)},
                         {"first",
                          {{"source", t.source_id},
                           {"file", t.stream},
                           {"line", t.line_number},
                           {"text", t.first_text}}}});
  }
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& s : r.sources) {
    nlohmann::json streams = nlohmann::json::array();
    for (const auto& stream : s.status.streams) {
      streams.push_back({{"name", stream.name},
                         {"read_bytes", stream.read_bytes},
                         {"lag_bytes", stream.lag_bytes},
                         {"open", stream.open},
                         {"draining", stream.draining}});
    }
    nlohmann::json problems = nlohmann::json::array();
    for (const auto& p : s.status.problems) {
      problems.push_back({{"name", p.name}, {"message", p.message}});
    }
    sources.push_back({{"id", s.id},
                       {"type", s.status.type},
                       {"lines", s.lines},
                       {"bytes", s.bytes},
                       {"streams", streams},
                       {"problems", problems}});
  }
  nlohmann::json reload = nullptr;
  if (r.last_reload.has_value()) {
    const auto& last = *r.last_reload;
    reload = {
        {"at", Time(last.at)},      {"trigger", last.trigger},   {"ok", last.ok},
        {"errors", last.errors},    {"warnings", last.warnings}, {"duration_ms", last.duration_ms},
        {"apply_ms", last.apply_ms}};
  }
  const nlohmann::json out = {
      {"version", r.version},
      {"generated_at", Time(r.generated_at)},
      {"started_at", Time(r.started_at)},
      {"signatures", signatures},
      {"signatures_total", r.signatures_total},
      {"signatures_forgotten", r.signatures_forgotten},
      {"unrecognised",
       {{"enabled", r.unrecognised.enabled},
        {"templates", templates},
        {"templates_total", r.unrecognised.templates_total},
        {"lines", r.unrecognised.lines},
        {"evicted", r.unrecognised.evicted}}},
      {"sources", sources},
      {"rules",
       {{"loaded", r.rules.loaded},
        {"patterns", r.rules.patterns},
        {"paths", r.rules.paths},
        {"loaded_at", Time(r.rules.loaded_at)}}},
      {"reloads", {{"ok", r.reloads_ok}, {"failed", r.reloads_failed}, {"last", reload}}},
  };
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace faultline
