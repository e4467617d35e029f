#include "agent/alert/webhook_body.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>

#include "agent/alert/text_budget.h"
#include "agent/alert/webhook_signing.h"

namespace faultline {
namespace {

using nlohmann::json;

// How far a hit line is cut when the body is still too large without context.
constexpr std::size_t kShortHitChars = 2000;

json ItemJson(const AlertItem& item, bool with_context, std::size_t max_hit_chars) {
  json labels = json::object();
  for (const auto& [name, value] : item.labels) labels[name] = value;
  json versions{{"package", item.package},
                {"seen_in", item.seen_in_version},
                {"seen", item.versions_seen},
                {"fixed_in", item.fixed_in_version},
                {"fixed_at", FormatTimestampMs(item.fixed_at_ms)},
                {"fixed_by", item.fixed_by},
                {"note", item.fix_note},
                {"basis", item.regression_basis}};
  json j{{"kind", AlertKindName(item.kind)},
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
         {"hit", CutToCodePoints(item.hit, max_hit_chars)},
         {"context_before", with_context ? json(item.context_before) : json::array()},
         {"context_after", with_context ? json(item.context_after) : json::array()},
         {"count", item.count},
         {"count_since_last", item.count_since_last},
         {"first_seen", FormatTimestampMs(item.first_seen_ms)},
         {"last_seen", FormatTimestampMs(item.last_seen_ms)},
         {"versions", versions},
         {"event_id", item.event_id},
         {"alert_id", AlertIdOf(item.signature)}};
  if (!item.detail.empty()) j["detail"] = item.detail;
  return j;
}

std::string Render(const Notification& n, std::size_t listed, bool with_context,
                   std::size_t max_hit_chars) {
  json body{{"type", "faultline.alert"},
            {"id", n.id},
            {"timestamp", FormatTimestampMs(n.created_ms)},
            {"test", n.test}};
  json alerts = json::array();
  for (std::size_t i = 0; i < listed && i < n.items.size(); ++i) {
    alerts.push_back(ItemJson(n.items[i], with_context, max_hit_chars));
  }
  if (!alerts.empty()) {
    for (const auto& [key, value] : alerts.front().items()) body[key] = value;
  }
  body["alerts"] = alerts;
  body["more"] = n.more + (n.items.size() - std::min(listed, n.items.size()));
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string AlertIdOf(std::string_view signature) {
  // FNV-1a, 64 bits: stable across builds and platforms, which std::hash is not.
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : signature) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(hash >> (56 - 8 * i));
  return "sig_" + HexEncode(bytes);
}

std::string RenderWebhookBody(const Notification& n) {
  std::size_t listed = n.items.size();
  std::string body = Render(n, listed, true, SIZE_MAX);
  if (body.size() <= kMaxWebhookBodyBytes) return body;
  body = Render(n, listed, false, SIZE_MAX);
  if (body.size() <= kMaxWebhookBodyBytes) return body;
  body = Render(n, listed, false, kShortHitChars);
  while (body.size() > kMaxWebhookBodyBytes && listed > 1) {
    listed = listed > 2 ? listed / 2 : 1;
    body = Render(n, listed, false, kShortHitChars);
  }
  if (body.size() > kMaxWebhookBodyBytes) body = Render(n, listed, false, 200);
  return body;
}

}  // namespace faultline
