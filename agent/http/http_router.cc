#include "agent/http/http_router.h"

#include <algorithm>
#include <charconv>
#include <exception>
#include <utility>

namespace faultline {
namespace {

constexpr char kBearerChallenge[] = "Bearer realm=\"faultline\"";
constexpr char kBearerInvalid[] = "Bearer realm=\"faultline\", error=\"invalid_token\"";

HttpResponse Plain(unsigned status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body)};
}

std::string AllowValue(const std::vector<HttpMethod>& methods) {
  const auto takes = [&](HttpMethod m) {
    return std::find(methods.begin(), methods.end(), m) != methods.end();
  };
  std::string allow;
  const auto add = [&](std::string_view name) {
    if (!allow.empty()) allow += ", ";
    allow += name;
  };
  if (takes(HttpMethod::kGet)) add("GET");
  if (takes(HttpMethod::kGet) || takes(HttpMethod::kHead)) add("HEAD");
  if (takes(HttpMethod::kPost)) add("POST");
  return allow;
}

bool Takes(const HttpRoute& route, HttpMethod method) {
  const auto has = [&](HttpMethod m) {
    return std::find(route.methods.begin(), route.methods.end(), m) != route.methods.end();
  };
  return has(method) || (method == HttpMethod::kHead && has(HttpMethod::kGet));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// An IPv6 literal as it appears in a Host header.
std::string Bracketed(const std::string& address) {
  return address.find(':') != std::string::npos ? "[" + address + "]" : address;
}

// The token of "Bearer <token>", or nullopt when the header is absent or another scheme.
std::optional<std::string_view> BearerToken(std::string_view authorization) {
  authorization = Trim(authorization);
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() ||
      !EqualsIgnoringCase(authorization.substr(0, kScheme.size()), kScheme) ||
      authorization[kScheme.size()] != ' ') {
    return std::nullopt;
  }
  return Trim(authorization.substr(kScheme.size()));
}

}  // namespace

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // On a length mismatch `b` is compared with itself, so the loop runs the same either way.
  const std::string_view probe = a.size() == b.size() ? a : b;
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = diff | static_cast<unsigned char>(probe[i] ^ b[i]);
  }
  return diff == 0;
}

bool HostIsAllowed(std::string_view host, const HttpEndpoint& endpoint) {
  host = Trim(host);
  std::string_view name = host;
  std::optional<std::string_view> port_text;
  if (host.starts_with('[')) {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = host.substr(0, close + 1);
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port_text = rest.substr(1);
    }
  } else if (const size_t colon = host.find(':'); colon != std::string_view::npos) {
    name = host.substr(0, colon);
    port_text = host.substr(colon + 1);
  }
  if (name.empty()) return false;
  unsigned port = 80;  // what an absent port means
  if (port_text.has_value()) {
    const char* end = port_text->data() + port_text->size();
    const auto [ptr, ec] = std::from_chars(port_text->data(), end, port);
    if (port_text->empty() || ec != std::errc() || ptr != end || port > 65535) return false;
  }
  // Whatever the port: a client on this machine may reach the agent through a port forward.
  for (std::string_view loopback : {"localhost", "127.0.0.1", "[::1]"}) {
    if (EqualsIgnoringCase(name, loopback)) return true;
  }
  // Another name only with this server's port.
  if (port != endpoint.port) return false;
  for (const std::string* address : {&endpoint.listen_host, &endpoint.local_address}) {
    if (!address->empty() && EqualsIgnoringCase(name, Bracketed(*address))) return true;
  }
  return false;
}

void HttpRouter::Add(HttpRoute route) {
  std::string path = route.path;
  auto& table = route.prefix ? prefix_routes_ : routes_;
  table[std::move(path)] = std::make_shared<const HttpRoute>(std::move(route));
}

std::shared_ptr<const HttpRoute> HttpRouter::Find(const std::string& path) const {
  if (const auto it = routes_.find(path); it != routes_.end()) return it->second;
  std::shared_ptr<const HttpRoute> best;
  for (const auto& [prefix, route] : prefix_routes_) {
    if (path.size() > prefix.size() && path.starts_with(prefix) &&
        (best == nullptr || prefix.size() > best->path.size())) {
      best = route;
    }
  }
  return best;
}

std::shared_ptr<const HttpRoute> HttpRouter::Admit(std::optional<HttpMethod> method,
                                                   const HttpRequest& request, bool body_follows,
                                                   const HttpEndpoint& endpoint,
                                                   HttpResponse* refusal) const {
  const std::shared_ptr<const HttpRoute> found = Find(request.path);
  if (found == nullptr) {
    *refusal = Plain(404, "not found\n");
    return nullptr;
  }
  const HttpRoute& route = *found;
  if (!method.has_value() || !Takes(route, *method)) {
    *refusal = Plain(405, "method not allowed\n");
    refusal->headers.emplace_back("Allow", AllowValue(route.methods));
    return nullptr;
  }
  if (route.admin && !HostIsAllowed(request.header("Host"), endpoint)) {
    *refusal = Plain(403,
                     "this route answers only requests addressed to this agent's own "
                     "address or to localhost\n");
    return nullptr;
  }
  if (!route.bearer_token.empty()) {
    const std::optional<std::string_view> token = BearerToken(request.header("Authorization"));
    if (!token.has_value()) {
      *refusal = Plain(401, "this route needs an Authorization: Bearer token\n");
      refusal->headers.emplace_back("WWW-Authenticate", kBearerChallenge);
      return nullptr;
    }
    if (!ConstantTimeEquals(*token, route.bearer_token)) {
      *refusal = Plain(401, "wrong bearer token\n");
      refusal->headers.emplace_back("WWW-Authenticate", kBearerInvalid);
      return nullptr;
    }
  }
  if (body_follows && *method != HttpMethod::kPost) {
    *refusal = Plain(413, "request bodies are accepted only with POST\n");
    return nullptr;
  }
  return found;
}

HttpResponse HttpRouter::Respond(const HttpRoute& route, const HttpRequest& request) {
  try {
    return route.handler(request);
  } catch (const std::exception& e) {
    // Handlers must not throw; if one does anyway, one failed request beats a dead agent.
    return Plain(500, std::string("internal error: ") + e.what() + "\n");
  }
}

}  // namespace faultline
