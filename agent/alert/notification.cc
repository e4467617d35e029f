#include "agent/alert/notification.h"

#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

namespace faultline {
namespace {

using nlohmann::json;

constexpr std::pair<AlertKind, std::string_view> kKindNames[] = {
    {AlertKind::kNew, "new"},
    {AlertKind::kRegression, "regression"},
    {AlertKind::kRecurrence, "recurrence"},
    {AlertKind::kOngoing, "ongoing"},
    {AlertKind::kResolved, "resolved"},
    {AlertKind::kMuteEnded, "mute_ended"},
    {AlertKind::kReceiverDisabled, "receiver_disabled"},
};

json ItemToJson(const AlertItem& item) {
  json labels = json::array();
  for (const auto& [name, value] : item.labels) labels.push_back({name, value});
  return json{{"event_id", item.event_id},
              {"kind", AlertKindName(item.kind)},
              {"signature", item.signature},
              {"rule_id", item.rule_id},
              {"labels", labels},
              {"title", item.title},
              {"severity", SeverityName(item.severity)},
              {"state", item.state},
              {"root_cause", item.root_cause},
              {"fix", item.fix},
              {"fix_command", item.fix_command},
              {"source", item.source},
              {"host", item.host},
              {"file", item.file},
              {"line", item.line},
              {"context_before", item.context_before},
              {"hit", item.hit},
              {"context_after", item.context_after},
              {"count", item.count},
              {"count_since_last", item.count_since_last},
              {"first_seen_ms", item.first_seen_ms},
              {"last_seen_ms", item.last_seen_ms},
              {"package", item.package},
              {"seen_in_version", item.seen_in_version},
              {"versions_seen", item.versions_seen},
              {"fixed_in_version", item.fixed_in_version},
              {"fixed_at_ms", item.fixed_at_ms},
              {"fix_note", item.fix_note},
              {"fixed_by", item.fixed_by},
              {"regression_basis", item.regression_basis},
              {"active_until_ms", item.active_until_ms},
              {"detail", item.detail},
              {"consequences", item.consequences}};
}

AlertItem ItemFromJson(const json& j) {
  AlertItem item;
  item.event_id = j.at("event_id").get<std::string>();
  item.kind = ParseAlertKind(j.at("kind").get<std::string>()).value_or(AlertKind::kNew);
  item.signature = j.at("signature").get<std::string>();
  item.rule_id = j.at("rule_id").get<std::string>();
  for (const auto& pair : j.at("labels")) {
    item.labels.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
  }
  item.title = j.at("title").get<std::string>();
  item.severity = ParseSeverity(j.at("severity").get<std::string>()).value_or(Severity::kError);
  item.state = j.at("state").get<std::string>();
  item.root_cause = j.at("root_cause").get<std::string>();
  item.fix = j.at("fix").get<std::string>();
  item.fix_command = j.at("fix_command").get<std::string>();
  item.source = j.at("source").get<std::string>();
  item.host = j.at("host").get<std::string>();
  item.file = j.at("file").get<std::string>();
  item.line = j.at("line").get<uint64_t>();
  item.context_before = j.at("context_before").get<std::vector<std::string>>();
  item.hit = j.at("hit").get<std::string>();
  item.context_after = j.at("context_after").get<std::vector<std::string>>();
  item.count = j.at("count").get<uint64_t>();
  item.count_since_last = j.at("count_since_last").get<uint64_t>();
  item.first_seen_ms = j.at("first_seen_ms").get<int64_t>();
  item.last_seen_ms = j.at("last_seen_ms").get<int64_t>();
  item.package = j.at("package").get<std::string>();
  item.seen_in_version = j.at("seen_in_version").get<std::string>();
  item.versions_seen = j.at("versions_seen").get<std::vector<std::string>>();
  item.fixed_in_version = j.at("fixed_in_version").get<std::string>();
  item.fixed_at_ms = j.at("fixed_at_ms").get<int64_t>();
  item.fix_note = j.at("fix_note").get<std::string>();
  item.fixed_by = j.at("fixed_by").get<std::string>();
  item.regression_basis = j.at("regression_basis").get<std::string>();
  item.active_until_ms = j.at("active_until_ms").get<int64_t>();
  item.detail = j.at("detail").get<std::string>();
  // Absent in entries written before consequences were grouped.
  item.consequences = j.value("consequences", std::vector<std::string>{});
  return item;
}

}  // namespace

std::string_view AlertKindName(AlertKind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "new";
}

std::optional<AlertKind> ParseAlertKind(std::string_view name) {
  for (const auto& [k, n] : kKindNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

std::string KindHeadline(AlertKind kind) {
  std::string name(AlertKindName(kind));
  for (char& c : name) {
    if (c == '_') c = ' ';
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return name;
}

std::string FormatTimestampMs(int64_t unix_ms) {
  if (unix_ms == 0) return "";
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[64];
  const int millis = static_cast<int>(unix_ms % 1000);
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                millis < 0 ? 0 : millis);
  return buffer;
}

std::string ItemSummary(const AlertItem& item) {
  std::string s = KindHeadline(item.kind) + ": " + item.signature;
  switch (item.kind) {
    case AlertKind::kRegression:
      s += " seen in " + (item.seen_in_version.empty() ? std::string("version unknown")
                                                       : item.package + " " + item.seen_in_version);
      if (!item.fixed_in_version.empty()) {
        s += ", fixed in " + item.package + " " + item.fixed_in_version;
      } else if (item.fixed_at_ms != 0) {
        s += ", marked fixed " + FormatTimestampMs(item.fixed_at_ms);
      }
      break;
    case AlertKind::kOngoing:
      s += ": " + std::to_string(item.count_since_last) + " more occurrence(s)";
      break;
    case AlertKind::kMuteEnded:
    case AlertKind::kReceiverDisabled:
      if (!item.detail.empty()) s += ": " + item.detail;
      break;
    default:
      break;
  }
  if (!item.title.empty() && item.kind != AlertKind::kReceiverDisabled) {
    s += " - " + item.title;
  }
  if (!item.source.empty())
    s += " (" + item.source + (item.host.empty() ? "" : " on " + item.host) + ")";
  return s;
}

std::string NotificationToJson(const Notification& n) {
  json items = json::array();
  for (const AlertItem& item : n.items) items.push_back(ItemToJson(item));
  return json{{"id", n.id},     {"receiver", n.receiver}, {"created_ms", n.created_ms},
              {"test", n.test}, {"items", items},         {"more", n.more}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<Notification> NotificationFromJson(std::string_view text) {
  try {
    const json j = json::parse(text);
    Notification n;
    n.id = j.at("id").get<std::string>();
    n.receiver = j.at("receiver").get<std::string>();
    n.created_ms = j.at("created_ms").get<int64_t>();
    n.test = j.at("test").get<bool>();
    for (const auto& item : j.at("items")) n.items.push_back(ItemFromJson(item));
    n.more = j.at("more").get<uint64_t>();
    return n;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

}  // namespace faultline
