// HttpRouter: the routes of the HTTP server and the checks that stand before their handlers.
//
// A route is an exact path, the methods it takes (GET implies HEAD), its handler and two guards:
// a bearer token (compared in constant time) and the admin flag, under which the Host header
// must name this server (its listen address or the address the client connected to, with the
// port) or the loopback host (localhost, 127.0.0.1, [::1]), so a web page whose own name was
// rebound to 127.0.0.1 (DNS rebinding) cannot reach the route through a browser.
//
// Admit decides from the request line and header alone, before a body is read, in this order:
// unknown path 404; method not taken 405 with Allow; admin route and a foreign Host 403; token
// missing or wrong 401 with WWW-Authenticate; a body on a method other than POST 413.
//
// Not thread-safe: routes are added and requests routed on the event-loop thread. Handlers run
// there too; one that throws anyway gets a 500 for that request, the agent lives on.
#ifndef FAULTLINE_HTTP_HTTP_ROUTER_H_
#define FAULTLINE_HTTP_HTTP_ROUTER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/http/http_message.h"

namespace faultline {

// Produces the response to one request of its route. Runs on the loop thread; must not throw.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;
// For a route whose answer takes work off the loop (a reload): the handler starts the work and
// returns; the responder is called later, once, on the loop thread, with the response. It keeps
// the connection alive until it is called or destroyed; calling it after the connection was
// closed does nothing. The route's owner must call it (or drop it) in bounded time: the
// connection waits for it without a deadline of its own.
using HttpResponder = std::function<void(HttpResponse)>;
using HttpDeferredHandler = std::function<void(const HttpRequest&, HttpResponder)>;

struct HttpRoute {
  std::string path;  // exact, e.g. "/metrics"
  std::vector<HttpMethod> methods = {HttpMethod::kGet};
  // Admin routes change or reveal the agent's state: they check the Host header (see above).
  bool admin = false;
  // When not empty, a request must carry "Authorization: Bearer <token>" with this token.
  // (Members default to {} so routes can be written with designated initializers.)
  std::string bearer_token = {};
  HttpHandler handler = {};
  // Set instead of `handler` for a route that answers later (see HttpDeferredHandler).
  HttpDeferredHandler deferred_handler = {};
};

// Where a connection arrived, for the Host check of admin routes.
struct HttpEndpoint {
  std::string listen_host;    // as given to Listen: an IP literal or a name
  std::string local_address;  // the IP the client connected to (IPv4-mapped IPv6 as IPv4)
  uint16_t port = 0;
};

class HttpRouter {
 public:
  // Adds `route`, replacing an earlier route of the same path.
  void Add(HttpRoute route);

  // The route that takes this request, or null with *refusal set (see the order above).
  // `method` is null for a method no route can take (PUT, DELETE, ...); `request` has everything
  // but the body; `body_follows` says whether the request announced one.
  std::shared_ptr<const HttpRoute> Admit(std::optional<HttpMethod> method,
                                         const HttpRequest& request, bool body_follows,
                                         const HttpEndpoint& endpoint, HttpResponse* refusal) const;

  // Runs the route's handler; never throws.
  static HttpResponse Respond(const HttpRoute& route, const HttpRequest& request);

 private:
  // Shared so a request admitted before a route is replaced still finishes on the old route.
  std::map<std::string, std::shared_ptr<const HttpRoute>, std::less<>> routes_;
};

// Whether `a` equals `b`, in time that depends on the length of `b` only, not on the position of
// the first difference: a token compare an attacker cannot time byte by byte.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// Whether a Host header value names `endpoint` or the loopback host (see the comment at the top).
bool HostIsAllowed(std::string_view host, const HttpEndpoint& endpoint);

}  // namespace faultline

#endif  // FAULTLINE_HTTP_HTTP_ROUTER_H_
