#include "agent/alert/alertmanager_body.h"

#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "agent/alert/text_budget.h"

namespace faultline {
namespace {

using nlohmann::json;

// Annotations are for people; Alertmanager keeps them in memory for every alert.
constexpr std::size_t kMaxAnnotationChars = 2000;
// A test alert fires briefly and then resolves by itself.
constexpr int64_t kTestAlertMs = 5 * 60 * 1000;

// A Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*, anything else becomes '_'.
std::string LabelName(std::string_view name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    out.push_back(ok ? c : '_');
  }
  return out.empty() ? "_" : out;
}

json Alert(const Notification& n, const AlertItem& item) {
  static const std::set<std::string, std::less<>> kOwn = {
      "alertname", "signature", "rule", "severity", "source", "host", "faultline_test"};
  json labels{{"alertname", kAlertmanagerAlertName},
              {"signature", item.signature},
              {"rule", item.rule_id},
              {"severity", SeverityName(item.severity)}};
  if (!item.source.empty()) labels["source"] = item.source;
  if (!item.host.empty()) labels["host"] = item.host;
  for (const auto& [name, value] : item.labels) {
    std::string key = LabelName(name);
    if (kOwn.contains(key)) key = "label_" + key;
    labels[key] = value;
  }
  if (n.test) labels["faultline_test"] = "true";

  const auto text = [](std::string_view s) { return CutToCodePoints(s, kMaxAnnotationChars); };
  json annotations{{"summary", text((n.test ? "[TEST] " : "") + ItemSummary(item))},
                   {"kind", AlertKindName(item.kind)},
                   {"title", text(item.title)},
                   {"description", text(item.hit)},
                   {"count", std::to_string(item.count)}};
  const auto add = [&](const char* key, std::string_view value) {
    if (!value.empty()) annotations[key] = text(value);
  };
  add("root_cause", item.root_cause);
  add("fix", item.fix);
  add("fix_command", item.fix_command);
  if (!item.file.empty()) add("file", item.file + ":" + std::to_string(item.line));
  add("first_seen", FormatTimestampMs(item.first_seen_ms));
  add("last_seen", FormatTimestampMs(item.last_seen_ms));
  add("package", item.package);
  add("seen_in_version", item.seen_in_version);
  add("fixed_in_version", item.fixed_in_version);
  add("fix_note", item.fix_note);
  add("detail", item.detail);
  std::string consequences;
  for (const std::string& signature : item.consequences) {
    consequences += (consequences.empty() ? "" : ", ") + signature;
  }
  add("consequences", consequences);

  // A regression or a recurrence fires anew, after a fix or a quiet spell ended the alert: it
  // starts at that occurrence. Alertmanager flushes a group at once for an alert that started
  // longer than group_wait ago, so a first-seen start would send each node's regression alone
  // instead of grouping the fleet's.
  const bool anew = item.kind == AlertKind::kRegression || item.kind == AlertKind::kRecurrence;
  int64_t starts = anew ? item.last_seen_ms : item.first_seen_ms;
  if (starts == 0) starts = n.created_ms;
  int64_t ends = item.active_until_ms;
  if (item.kind == AlertKind::kResolved) ends = n.created_ms;
  if (n.test) ends = n.created_ms + kTestAlertMs;
  json alert{
      {"labels", labels}, {"annotations", annotations}, {"startsAt", FormatTimestampMs(starts)}};
  if (ends > 0) alert["endsAt"] = FormatTimestampMs(std::max(ends, starts));
  return alert;
}

}  // namespace

std::string RenderAlertmanagerAlerts(const Notification& n) {
  json alerts = json::array();
  for (const AlertItem& item : n.items) alerts.push_back(Alert(n, item));
  return alerts.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace faultline
