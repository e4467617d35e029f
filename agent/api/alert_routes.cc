#include "agent/api/alert_routes.h"

#include <charconv>
#include <nlohmann/json.hpp>

namespace faultline {
namespace {

using nlohmann::json;

constexpr char kSignaturesPrefix[] = "/api/v1/signatures/";
constexpr char kReceiversPrefix[] = "/api/v1/receivers/";

HttpResponse Json(unsigned status, const json& body) {
  return HttpResponse{status, "application/json",
                      body.dump(2, ' ', false, json::error_handler_t::replace) + "\n"};
}

HttpResponse JsonError(unsigned status, const std::string& message) {
  return Json(status, json{{"error", message}});
}

// The body as a JSON object; an empty body is {}.
Result<json> BodyObject(const HttpRequest& request) {
  if (request.body.empty()) return json::object();
  json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return Failure("the body must be a JSON object");
  return body;
}

std::string StringField(const json& body, const char* key) {
  const auto it = body.find(key);
  return it != body.end() && it->is_string() ? it->get<std::string>() : "";
}

// "/api/v1/signatures/<id>/<action>" -> id, action.
bool SplitAction(const std::string& path, std::string_view prefix, std::string* id,
                 std::string* action) {
  const std::string_view rest = std::string_view(path).substr(prefix.size());
  const std::size_t slash = rest.rfind('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) return false;
  *id = PercentDecode(rest.substr(0, slash));
  *action = std::string(rest.substr(slash + 1));
  return true;
}

HttpResponse SignatureAction(Alerting& alerting, const HttpRequest& request) {
  std::string id;
  std::string action;
  if (!SplitAction(request.path, kSignaturesPrefix, &id, &action)) {
    return JsonError(404, "expected /api/v1/signatures/{id}/fix|unfix|mute|unmute");
  }
  const Result<json> body_object = BodyObject(request);
  if (!body_object.ok()) return JsonError(400, body_object.errors().front().message);
  const json& body = body_object.value();
  if (action == "fix") {
    Alerting::FixRequest fix;
    fix.selector = id;
    fix.version = StringField(body, "version");
    fix.note = StringField(body, "note");
    fix.by = StringField(body, "by");
    fix.origin = StringField(body, "origin") == "cli" ? FixOrigin::kCli : FixOrigin::kApi;
    Result<FixRecord> stored = alerting.Fix(fix);
    if (!stored.ok()) {
      const Error& e = stored.errors().front();
      return JsonError(e.key == "signature" ? 404 : 400, e.message);
    }
    const FixRecord& f = stored.value();
    return Json(200, json{{"fixed", id},
                          {"id", f.id},
                          {"fixed_in", f.fixed_in},
                          {"after_version", f.after_version},
                          {"fixed_at", FormatTimestampMs(f.fixed_at_ms)},
                          {"note", f.note},
                          {"by", f.by}});
  }
  if (action == "unfix") {
    const std::size_t n = alerting.Unfix(id);
    if (n == 0) return JsonError(404, "no fix is recorded for '" + id + "'");
    return Json(200, json{{"unfixed", id}, {"fixes_removed", n}});
  }
  if (action == "mute") {
    std::optional<int64_t> duration;
    if (const auto it = body.find("duration_ms"); it != body.end() && it->is_number_integer()) {
      duration = it->get<int64_t>();
    } else if (const std::string text = StringField(body, "for"); !text.empty()) {
      duration = ParseDurationMs(text);
    }
    if (!duration || *duration <= 0) {
      return JsonError(400, "a mute needs \"for\" (8h, 30m, 2d) or \"duration_ms\"");
    }
    const std::string reason = StringField(body, "reason");
    if (reason.empty()) return JsonError(400, "a mute needs a \"reason\"");
    if (!alerting.Mute(id, *duration, reason, StringField(body, "by"))) {
      return JsonError(404, "'" + id + "' names no signature this agent has seen");
    }
    return Json(200, json{{"muted", id}, {"duration_ms", *duration}, {"reason", reason}});
  }
  if (action == "unmute") {
    const std::size_t n = alerting.Unmute(id);
    if (n == 0) return JsonError(404, "'" + id + "' is not muted");
    return Json(200, json{{"unmuted", id}, {"signatures", n}});
  }
  return JsonError(404, "unknown action '" + action + "'; expected fix, unfix, mute or unmute");
}

HttpResponse ReceiverAction(Alerting& alerting, const HttpRequest& request) {
  std::string name;
  std::string action;
  if (!SplitAction(request.path, kReceiversPrefix, &name, &action) || action != "test") {
    return JsonError(404, "expected /api/v1/receivers/{name}/test");
  }
  const Result<json> body_object = BodyObject(request);
  if (!body_object.ok()) return JsonError(400, body_object.errors().front().message);
  const json& body = body_object.value();
  Result<std::vector<std::string>> targets =
      alerting.Test(name, StringField(body, "signature"),
                    [](const std::string&, const RetryDecision&, const DeliveryOutcome&) {});
  if (!targets.ok()) {
    const Error& e = targets.errors().front();
    return JsonError(404, e.message);
  }
  return Json(202, json{{"test", name}, {"targets", targets.value()}});
}

}  // namespace

std::optional<int64_t> ParseDurationMs(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr == text.data() || value < 0) return std::nullopt;
  const std::string_view unit(ptr, static_cast<std::size_t>(end - ptr));
  int64_t scale = 0;
  if (unit.empty() || unit == "ms") scale = 1;
  if (unit == "s") scale = 1000;
  if (unit == "m") scale = 60 * 1000;
  if (unit == "h") scale = 3600 * 1000;
  if (unit == "d") scale = 24 * 3600 * 1000;
  if (scale == 0 || value > INT64_MAX / scale) return std::nullopt;
  return value * scale;
}

std::string PercentDecode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto hex = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

void AddAlertRoutes(HttpServer& http, Alerting& alerting, const std::string& admin_token,
                    CommitRequest commit) {
  http.AddRoute(
      {.path = "/api/v1/signatures", .admin = true, .handler = [&alerting](const HttpRequest&) {
         return HttpResponse{200, "application/json", alerting.SignaturesJson() + "\n"};
       }});
  http.AddRoute(
      {.path = "/api/v1/receivers", .admin = true, .handler = [&alerting](const HttpRequest&) {
         return HttpResponse{200, "application/json", alerting.ReceiversJson() + "\n"};
       }});
  http.AddRoute(
      {.path = kSignaturesPrefix,
       .prefix = true,
       .methods = {HttpMethod::kPost},
       .admin = true,
       .bearer_token = admin_token,
       .deferred_handler = [&alerting, commit](const HttpRequest& r, HttpResponder respond) {
         HttpResponse response = SignatureAction(alerting, r);
         if (response.status != 200) {
           respond(std::move(response));
           return;
         }
         // Acknowledged only once durable (see the header).
         commit([response = std::move(response),
                 respond = std::move(respond)](const std::string& error) mutable {
           if (error.empty()) {
             respond(std::move(response));
             return;
           }
           respond(JsonError(503,
                             "recorded in the running agent, but not durable "
                             "yet: " +
                                 error +
                                 " (the next checkpoint that "
                                 "succeeds writes it)"));
         });
       }});
  http.AddRoute(
      {.path = kReceiversPrefix,
       .prefix = true,
       .methods = {HttpMethod::kPost},
       .admin = true,
       .bearer_token = admin_token,
       .handler = [&alerting](const HttpRequest& r) { return ReceiverAction(alerting, r); }});
}

}  // namespace faultline
