// HttpServer: a small HTTP/1.1 server (Boost.Beast) for /metrics, health checks and, later, the
// admin API and status page.
//
// The server runs on an io_context that the caller owns and runs; it is built for the agent's one
// event-loop thread, so it takes no locks and every method, and every handler, runs on that
// thread. To stop it from another thread, post: `asio::post(io, [&] { server.Stop(); })`.
//
// Routes (http_router.h) are registered with AddRoute, the one registration point: an exact
// path, its methods, optional bearer token and admin Host check. Requests are parsed and answered
// by an HttpSession per connection (http_session.h: limits, 405/413/431/400).
//
// Abuse: every connection has a deadline for what it is doing. A request's line and header must
// arrive within header_timeout (from the accept, or from the first byte of a later request on a
// kept-alive connection), so a client trickling bytes (slowloris) is cut; a body within
// body_timeout; a response must be taken within write_timeout; a kept-alive connection waiting
// for its next request is closed after idle_timeout. Connections are capped in total
// (max_connections) and per client address (max_connections_per_client). At either cap the
// newcomer takes the slot of the oldest idle connection (one waiting for a request, or draining
// after a refusal) of that scope, so idle sockets can never lock /metrics or a liveness probe
// out; only when every connection in the scope is busy with a request is the newcomer closed.
//
// Failures: Listen reports a bad address or a failed bind (address in use, permission) by
// returning false with the reason. At run time, I/O errors only close the connection they hit; a
// failed accept (out of descriptors) is retried after a short delay.
//
// Lifetime: the io_context must outlive the server. Destroying the server stops it; completions
// still queued on the io_context keep the server's internal state alive until they have run.
#ifndef FAULTLINE_HTTP_HTTP_SERVER_H_
#define FAULTLINE_HTTP_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "agent/core/asio.h"
#include "agent/core/result.h"
#include "agent/http/http_message.h"
#include "agent/http/http_router.h"
#include "agent/http/http_session.h"

namespace faultline {

struct HttpServerOptions {
  using Duration = std::chrono::steady_clock::duration;
  // Request line plus header, from the accept or from the first byte of a later request. A
  // scrape or an API call sends its header in one packet; a few seconds cover any real client.
  Duration header_timeout = std::chrono::seconds(5);
  // A kept-alive connection with no request. Scrapers reconnect at no cost when it is closed.
  Duration idle_timeout = std::chrono::seconds(30);
  // From the end of the header to the end of a (bounded) body, and for writing a response.
  Duration body_timeout = std::chrono::seconds(30);
  Duration write_timeout = std::chrono::seconds(30);
  HttpLimits limits;
  // Prometheus, a probe, a browser and a few curls; more than this is a leak or an attack.
  // REQUIRES: both at least 1.
  std::size_t max_connections = 128;
  std::size_t max_connections_per_client = 16;
};

class HttpServer {
 public:
  explicit HttpServer(asio::io_context& io, HttpServerOptions options = {});
  ~HttpServer();  // Stop()s the server

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves `route`, replacing an earlier route of the same path. May be called before or after
  // Listen; a request already admitted finishes on the route it was admitted to.
  void AddRoute(HttpRoute route);

  // Binds and starts accepting on `address` (an IP address or a host name that resolves to one,
  // IPv6 without brackets) and `port` (0 picks a free port; see port()). Load-time: on failure
  // an error naming the address and the OS reason. REQUIRES: called at most once.
  Result<void> Listen(const std::string& address, uint16_t port);

  // The port actually bound; 0 before a successful Listen.
  uint16_t port() const;

  // Closes the listener and every open connection, so io_context::run returns once their
  // completions have run. Idempotent.
  void Stop();

 private:
  class Impl;
  class Connection;

  // Shared with pending completions and connections, which may outlive this object.
  std::shared_ptr<Impl> impl_;
};

}  // namespace faultline

#endif  // FAULTLINE_HTTP_HTTP_SERVER_H_
