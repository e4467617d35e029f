// HttpServer: a small HTTP/1.1 server (Boost.Beast) for /metrics, health checks and, later, the
// admin API and status page.
//
// The server runs on an io_context that the caller owns and runs; it is built for the agent's one
// event-loop thread, so it takes no locks and every method, and every handler, runs on that
// thread. To stop it from another thread, post: `asio::post(io, [&] { server.Stop(); })`.
//
// Requests are routed by exact path; the query string is ignored for routing. Only GET and HEAD
// are served (HEAD gets the GET headers, no body); another method on a known path gets 405 with
// `Allow: GET, HEAD`, an unknown path 404. Requests must not have a body (413). Each connection
// is one object with a timeout on every read and write, a bounded request header (431 when it is
// exceeded), and keep-alive; an idle keep-alive connection is closed when its read times out.
// Connections beyond max_connections are closed on accept, so a misbehaving client cannot
// exhaust file descriptors.
//
// Failures: Listen reports a bad address or a failed bind (address in use, permission) by
// returning false with the reason. At run time, I/O errors only close the connection they hit.
//
// Lifetime: the io_context must outlive the server. Handlers are called during io_context::run
// and must not throw. Destroying the server stops it; completions still queued on the io_context
// keep the server's internal state alive until they have run.
#ifndef FAULTLINE_HTTP_HTTP_SERVER_H_
#define FAULTLINE_HTTP_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent/core/asio.h"

namespace faultline {

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Produces the response for one GET or HEAD of the path it is registered for. Runs on the loop
// thread; must not throw.
using HttpHandler = std::function<HttpResponse()>;

struct HttpServerOptions {
  // A client that sends nothing for this long (including between keep-alive requests) is
  // disconnected; slow or stuck clients must not pin connections forever.
  std::chrono::steady_clock::duration read_timeout = std::chrono::seconds(30);
  std::chrono::steady_clock::duration write_timeout = std::chrono::seconds(30);
  // Request line plus headers. No legitimate scrape or API call comes near it; it bounds memory
  // per connection.
  std::size_t max_header_bytes = 64 * 1024;
  // Prometheus, a browser and a few curls; more than this is a leak or an attack.
  std::size_t max_connections = 128;
};

class HttpServer {
 public:
  explicit HttpServer(asio::io_context& io, HttpServerOptions options = {});
  ~HttpServer();  // Stop()s the server

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves `path` (exact match, e.g. "/metrics") with `handler`, replacing an earlier handler of
  // the same path. May be called before or after Listen.
  void Handle(std::string path, HttpHandler handler);

  // Binds and starts accepting on `address` (an IP address or a host name that resolves to one,
  // IPv6 without brackets) and `port` (0 picks a free port; see port()). Load-time: on failure
  // returns false and sets *error to a message naming the address and the OS reason.
  // REQUIRES: called at most once.
  bool Listen(const std::string& address, uint16_t port, std::string* error);

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
