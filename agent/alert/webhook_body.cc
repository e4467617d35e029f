#include "agent/alert/webhook_body.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "agent/alert/text_budget.h"
#include "agent/alert/webhook_signing.h"

namespace faultline {
namespace {

using nlohmann::json;

// How far hit lines are cut when the body is still too large without context, then again.
constexpr std::size_t kShortHitChars = 2000;
constexpr std::size_t kShortestHitChars = 200;

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
  j["consequences"] = item.consequences;
  return j;
}

// The body with `items` (the JSON of the first items of `n`); the rest are counted in `more`.
std::string Render(const Notification& n, std::vector<json> items) {
  json body{{"type", "faultline.alert"},
            {"id", n.id},
            {"timestamp", FormatTimestampMs(n.created_ms)},
            {"test", n.test}};
  if (!items.empty()) {
    for (const auto& [key, value] : items.front().items()) body[key] = value;
  }
  const std::size_t listed = items.size();
  body["alerts"] = std::move(items);
  body["more"] = n.more + (n.items.size() - listed);
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

// As many leading items of `n` as fit in the body, built with `with_context` and `max_hit`.
std::vector<json> Fitting(const Notification& n, bool with_context, std::size_t max_hit) {
  // The first item appears twice (flattened at the top and in `alerts`); the envelope is small.
  constexpr std::size_t kEnvelopeBytes = 512;
  std::vector<json> items;
  std::size_t used = kEnvelopeBytes;
  for (const AlertItem& item : n.items) {
    json j = ItemJson(item, with_context, max_hit);
    const std::size_t size = j.dump(-1, ' ', false, json::error_handler_t::replace).size() + 1;
    used += items.empty() ? 2 * size : size;
    if (used > kMaxWebhookBodyBytes) break;
    items.push_back(std::move(j));
  }
  return items;
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
  // Each item is built and measured once per step; the first step that lists every item wins,
  // else the last lists as many as fit.
  std::vector<json> items = Fitting(n, true, SIZE_MAX);
  if (items.size() < n.items.size()) items = Fitting(n, false, SIZE_MAX);
  if (items.size() < n.items.size()) items = Fitting(n, false, kShortHitChars);
  if (items.size() < n.items.size()) items = Fitting(n, false, kShortestHitChars);
  return Render(n, std::move(items));
}

}  // namespace faultline
