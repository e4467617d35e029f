#include "agent/api/status_page.h"

#include <cstdio>
#include <ctime>

#include "agent/http/html.h"

namespace faultline {
namespace {

using TimePoint = StatusReport::TimePoint;

constexpr char kStyle[] = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1d1d1f;background:#fff}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.6em 0 .4em}
.meta{color:#555}table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #ddd;padding:.35em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,monospace}
pre.log{font:12px/1.35 ui-monospace,monospace;margin:.3em 0 0;padding:.4em;background:#f7f7f9;
white-space:pre-wrap;overflow-wrap:anywhere;max-height:16em;overflow:auto;unicode-bidi:isolate;
direction:ltr}
pre.log .hit{background:#fff3bf;display:block}
.esc{border:1px solid #c00;color:#c00;font-size:.85em;padding:0 .15em;margin:0 .1em}
.cut{color:#777;font-style:italic}
.sev-critical,.sev-error{color:#b00020;font-weight:600}.sev-warning{color:#a15c00}
.sev-info{color:#555}.ok{color:#1b7f3b}.bad{color:#b00020;font-weight:600}
ul.errors{margin:.3em 0;padding-left:1.2em;color:#b00020}
)";

void Text(std::string& out, std::string_view text) { AppendHtmlText(out, text); }

std::string Utc(TimePoint t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string Ago(TimePoint now, TimePoint t) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(now - t).count();
  if (s < 0) return "just now";
  if (s < 120) return std::to_string(s) + " s ago";
  if (s < 7200) return std::to_string(s / 60) + " min ago";
  if (s < 172800) return std::to_string(s / 3600) + " h ago";
  return std::to_string(s / 86400) + " days ago";
}

void Time(std::string& out, TimePoint now, TimePoint t) {
  out += "<time datetime=\"" + Utc(t) + "\" title=\"" + Utc(t) + "\">" + Ago(now, t) + "</time>";
}

std::string Bytes(uint64_t n) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return buf;
}

void SeverityCell(std::string& out, Severity severity) {
  const std::string name(SeverityName(severity));
  out += "<span class=\"sev-" + name + "\">" + name + "</span>";
}

void LastHit(std::string& out, const FindingEvent& hit) {
  out += "<div class=\"meta\">";
  Text(out, hit.source_id);
  out += " · <code>";
  Text(out, hit.stream_name);
  out += ":" + std::to_string(hit.line_number) + "</code></div><pre class=\"log\">";
  for (const std::string& line : hit.context_before) {
    AppendBoundedHtmlText(out, line, kStatusMaxLineBytes);
    out += '\n';
  }
  out += "<span class=\"hit\">";
  AppendBoundedHtmlText(out, hit.text, kStatusMaxLineBytes);
  if (hit.text_truncated) out += "<span class=\"cut\"> … (line cut)</span>";
  out += "</span></pre>";
}

void Signatures(std::string& out, const StatusReport& r) {
  out += "<section id=\"signatures\"><h2>Signatures seen (" + std::to_string(r.signatures_total) +
         ")</h2>";
  if (r.signatures.empty()) {
    out += "<p class=\"meta\">No known failure seen since the agent started.</p></section>";
    return;
  }
  bool any_state = false;
  for (const auto& s : r.signatures) any_state = any_state || !s.state.empty();
  out += "<table><thead><tr>";
  if (any_state) out += "<th>State</th>";
  out +=
      "<th>Signature</th><th>Severity</th><th>Count</th><th>First seen</th>"
      "<th>Last seen</th><th>Last hit</th></tr></thead><tbody>";
  for (const auto& s : r.signatures) {
    out += "<tr class=\"signature\">";
    if (any_state) {
      out += "<td>";
      Text(out, s.state);
      out += "</td>";
    }
    out += "<td><code class=\"sig\">";
    Text(out, s.signature);
    out += "</code><div>";
    Text(out, s.title);
    out += "</div></td><td>";
    SeverityCell(out, s.worst_severity);
    out += "</td><td class=\"n\">" + std::to_string(s.count) + "</td><td>";
    Time(out, r.generated_at, s.first_seen);
    out += "</td><td>";
    Time(out, r.generated_at, s.last_seen);
    out += "</td><td>";
    if (s.last_hit.has_value()) LastHit(out, *s.last_hit);
    out += "</td></tr>";
  }
  out += "</tbody></table>";
  if (r.signatures.size() < r.signatures_total) {
    out += "<p class=\"meta\">Showing the " + std::to_string(r.signatures.size()) +
           " most recent; <a href=\"/api/v1/status\">/api/v1/status</a> has them all.</p>";
  }
  if (r.signatures_forgotten > 0) {
    out += "<p class=\"meta\">" + std::to_string(r.signatures_forgotten) +
           " signatures seen longest ago were forgotten to bound memory.</p>";
  }
  out += "</section>";
}

void Unrecognised(std::string& out, const StatusReport& r) {
  const auto& u = r.unrecognised;
  out += "<section id=\"unrecognised\"><h2>Unrecognised errors (" +
         std::to_string(u.templates_total) + " templates, " + std::to_string(u.lines) +
         " lines)</h2>";
  if (!u.enabled) {
    out += "<p class=\"meta\">Off (<code>discover.enabled: false</code>).</p></section>";
    return;
  }
  if (u.templates.empty()) {
    out += "<p class=\"meta\">No error line that no rule explains since the agent "
           "started.</p></section>";
    return;
  }
  out += "<p class=\"meta\">Lines that look like errors and that no rule explains, grouped into "
         "templates. <code>faultline rules suggest --from FILE --template ID</code> drafts a rule "
         "from one.</p>";
  out +=
      "<table><thead><tr><th>Template</th><th>Severity</th><th>Count</th><th>First seen</th>"
      "<th>Last seen</th><th>First line</th></tr></thead><tbody>";
  for (const auto& t : u.templates) {
    out += "<tr class=\"template\"><td><code class=\"tpl\">";
    AppendBoundedHtmlText(out, t.text, kStatusMaxLineBytes);
    out += "</code><div class=\"meta\"><code>" + t.id + "</code> · ";
    Text(out, t.cue);
    out += "</div></td><td>";
    SeverityCell(out, t.severity);
    out += "</td><td class=\"n\">" + std::to_string(t.count) + "</td><td>";
    Time(out, r.generated_at, t.first_seen);
    out += "</td><td>";
    Time(out, r.generated_at, t.last_seen);
    out += "</td><td><div class=\"meta\">";
    Text(out, t.source_id);
    out += " · <code>";
    Text(out, t.stream);
    out += ":" + std::to_string(t.line_number) + "</code></div><pre class=\"log\">";
    AppendBoundedHtmlText(out, t.first_text, kStatusMaxLineBytes);
    out += "</pre></td></tr>";
  }
  out += "</tbody></table>";
  if (u.templates.size() < u.templates_total) {
    out += "<p class=\"meta\">Showing the " + std::to_string(u.templates.size()) +
           " with most lines; <a href=\"/api/v1/unrecognised\">/api/v1/unrecognised</a> has "
           "them all.</p>";
  }
  if (u.evicted > 0) {
    out += "<p class=\"meta\">" + std::to_string(u.evicted) +
           " templates seen longest ago were forgotten (<code>discover.max_templates</code>).</p>";
  }
  out += "</section>";
}

void Sources(std::string& out, const StatusReport& r) {
  out += "<section id=\"sources\"><h2>Sources (" + std::to_string(r.sources.size()) + ")</h2>";
  if (r.sources.empty()) {
    out += "<p class=\"meta\">No source configured.</p></section>";
    return;
  }
  out +=
      "<table><thead><tr><th>Source</th><th>Lines</th><th>Bytes</th><th>Streams</th>"
      "</tr></thead><tbody>";
  for (const auto& s : r.sources) {
    out += "<tr class=\"source\"><td><code>";
    Text(out, s.id);
    out += "</code><div class=\"meta\">";
    Text(out, s.status.type);
    out += "</div></td><td class=\"n\">" + std::to_string(s.lines) + "</td><td class=\"n\">" +
           Bytes(s.bytes) + "</td><td>";
    if (s.status.streams.empty()) out += "<span class=\"meta\">none yet</span>";
    for (const auto& stream : s.status.streams) {
      out += "<div><code>";
      Text(out, stream.name);
      out += "</code> read " + Bytes(stream.read_bytes) + ", lag ";
      out += stream.lag_bytes == 0 ? std::string("0") : "<b>" + Bytes(stream.lag_bytes) + "</b>";
      if (!stream.open) out += " <span class=\"meta\">(closed, followed by stat)</span>";
      if (stream.draining) out += " <span class=\"meta\">(rotated away, draining)</span>";
      out += "</div>";
    }
    if (!s.status.problems.empty()) {
      out += "<ul class=\"errors\">";
      for (const auto& p : s.status.problems) {
        out += "<li><code>";
        Text(out, p.name);
        out += "</code>: ";
        Text(out, p.message);
        out += "</li>";
      }
      out += "</ul>";
    }
    out += "</td></tr>";
  }
  out += "</tbody></table></section>";
}

void Rules(std::string& out, const StatusReport& r) {
  out += "<section id=\"rules\"><h2>Rules</h2><p>" + std::to_string(r.rules.loaded) +
         " rules loaded (" + std::to_string(r.rules.patterns) + " patterns) ";
  Time(out, r.generated_at, r.rules.loaded_at);
  out += " from ";
  for (std::size_t i = 0; i < r.rules.paths.size(); ++i) {
    if (i > 0) out += ", ";
    out += "<code>";
    Text(out, r.rules.paths[i]);
    out += "</code>";
  }
  out += ".</p>";
  out += "<p id=\"reload\">Reloads: " + std::to_string(r.reloads_ok) + " applied, " +
         std::to_string(r.reloads_failed) + " rejected. ";
  if (!r.last_reload.has_value()) {
    out += "No reload since the agent started (SIGHUP or <code>POST /-/reload</code>).</p>";
  } else {
    const auto& last = *r.last_reload;
    out += "Last: ";
    Time(out, r.generated_at, last.at);
    out += " by ";
    Text(out, last.trigger);
    out += last.ok ? ", <span class=\"ok\">applied</span>"
                   : ", <span class=\"bad\">rejected"
                     "</span> (the previous config "
                     "keeps running)";
    char ms[64];
    std::snprintf(ms, sizeof ms, " in %.1f ms.</p>", last.duration_ms);
    out += ms;
    for (const auto* list : {&last.errors, &last.warnings}) {
      if (list->empty()) continue;
      out += list == &last.errors ? "<ul class=\"errors\">" : "<ul>";
      for (const std::string& e : *list) {
        out += "<li>";
        Text(out, e);
        out += "</li>";
      }
      out += "</ul>";
    }
  }
  out += "</section>";
}

}  // namespace

std::string RenderStatusHtml(const StatusReport& r) {
  std::string out;
  out.reserve(16 * 1024);
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"refresh\" content=\"" +
      std::to_string(kStatusRefreshSeconds) +
      "\"><meta name=\"viewport\" content=\"width=device-width\">"
      "<title>faultline status</title><style>";
  out += kStyle;
  out += "</style></head><body><header><h1>faultline</h1><p class=\"meta\">version ";
  Text(out, r.version);
  out += " · up since ";
  Time(out, r.generated_at, r.started_at);
  out += " · page of " + Utc(r.generated_at) + ", refreshed every " +
         std::to_string(kStatusRefreshSeconds) +
         " s · <a href=\"/api/v1/status\">JSON</a> · <a href=\"/metrics\">metrics</a></p></header>";
  Signatures(out, r);
  Unrecognised(out, r);
  Sources(out, r);
  Rules(out, r);
  out += "</body></html>\n";
  return out;
}

std::vector<std::pair<std::string, std::string>> StatusPageHeaders() {
  return {{"Content-Security-Policy",
           "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
           "frame-ancestors 'none'"},
          {"X-Content-Type-Options", "nosniff"},
          {"Referrer-Policy", "no-referrer"},
          {"Cache-Control", "no-store"}};
}

}  // namespace faultline
