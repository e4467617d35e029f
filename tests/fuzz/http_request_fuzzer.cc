// Fuzzes HTTP request parsing and routing: the bytes of one connection go through HttpSession,
// the object every server connection runs, with the router's checks (methods, bearer token,
// admin Host) in front of handlers that assert what they may see. Whatever the bytes, the
// session must never stall (no empty read buffer while it wants input), never answer without
// consuming a request (the shortest, "X / HTTP/1.1\r\n\r\n", is 17 bytes; a malformed one ends
// the connection), keep bodies within the limit, and produce responses Beast can serialise. Input:
// byte 0 picks the header and body limits, byte 1 seeds the read sizes, the rest is what the client
// sends.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <string_view>

#include "agent/core/asio.h"
#include "agent/http/http_router.h"
#include "agent/http/http_session.h"

namespace faultline {
namespace {

namespace http = beast::http;
using Next = HttpSession::Next;

constexpr char kToken[] = "fuzz-token";

void Check(bool ok) {
  if (!ok) std::abort();
}

HttpRouter MakeRouter(const HttpLimits& limits, const HttpEndpoint& endpoint) {
  HttpRouter router;
  router.Add({.path = "/metrics", .handler = [](const HttpRequest& req) {
                Check(req.method == HttpMethod::kGet || req.method == HttpMethod::kHead);
                Check(req.body.empty());
                return HttpResponse{200, "text/plain", "up 1\n"};
              }});
  router.Add({.path = "/echo",
              .methods = {HttpMethod::kGet, HttpMethod::kPost},
              .handler = [limits](const HttpRequest& req) {
                Check(req.body.size() <= limits.max_body_bytes);
                Check(req.method == HttpMethod::kPost || req.body.empty());
                std::string out = req.path + "?" + req.query + "\n";
                for (const auto& [k, v] : req.query_params) out += k + "=" + v + "\n";
                return HttpResponse{200, "text/plain", out + req.body, {{"X-Seen", "1"}}};
              }});
  router.Add({.path = "/secret", .bearer_token = kToken, .handler = [](const HttpRequest& req) {
                const std::string_view auth = req.header("Authorization");
                Check(auth.find(kToken) != std::string_view::npos);
                return HttpResponse{200, "text/plain", "secret\n"};
              }});
  router.Add({.path = "/admin",
              .methods = {HttpMethod::kPost},
              .admin = true,
              .handler = [endpoint](const HttpRequest& req) {
                Check(HostIsAllowed(req.header("Host"), endpoint));
                return HttpResponse{204, "text/plain", ""};
              }});
  router.Add({.path = "/throws", .handler = [](const HttpRequest&) -> HttpResponse {
                throw std::runtime_error("handler failed");
              }});
  return router;
}

}  // namespace
}  // namespace faultline

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  if (size < 2) return 0;
  const size_t header_limits[] = {64, 512, 8192};
  const size_t body_limits[] = {0, 16, 4096};
  HttpLimits limits;
  limits.max_header_bytes = header_limits[data[0] % 3];
  limits.max_body_bytes = body_limits[(data[0] / 3) % 3];
  uint32_t state = data[1] * 2654435761u + 1;
  const std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);

  const HttpEndpoint endpoint{"agent.example", "10.0.0.7", 9464};
  const HttpRouter router = MakeRouter(limits, endpoint);
  HttpSession session(router, limits, endpoint);

  constexpr size_t kShortestRequest = 17;
  size_t fed = 0;
  size_t responses = 0;
  Next next = Next::kRead;
  while (next != Next::kClose) {
    if (next == Next::kWrite) {
      HttpSession::Response& res = session.response();
      std::ostringstream wire;
      wire << res;
      Check(wire.str().rfind("HTTP/1.", 0) == 0);
      ++responses;
      Check(responses <= fed / kShortestRequest + 1);
      next = session.OnWritten();
      continue;
    }
    if (next == Next::kContinue) {  // the interim response is fixed text; go on reading
      next = Next::kRead;
      continue;
    }
    if (fed == input.size()) break;  // the client is done: end of stream
    const asio::mutable_buffer space = session.ReadBuffer();
    Check(space.size() > 0);
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    const size_t n = std::min({size_t{1} + state % 64, space.size(), input.size() - fed});
    std::memcpy(space.data(), input.data() + fed, n);
    fed += n;
    next = session.OnRead(n);
  }
  return 0;
}
