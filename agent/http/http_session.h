// HttpSession: the HTTP/1.1 side of one connection, without the socket: bytes in, responses out.
//
// The connection (http_server.cc) reads into ReadBuffer(), reports how many bytes came with
// OnRead, and does what the returned Next says: read more, write response() (then call
// OnWritten), write the interim "100 Continue", or close. The fuzz target drives the same object
// from a buffer, so what it exercises is exactly what the server runs.
//
// One request at a time, pipelined requests queue in the input buffer. Every request is parsed
// (Beast's parser) within the limits: the request line plus header in max_header_bytes (431
// beyond), a body only on a route that takes POST and at most max_body_bytes (413 beyond, decided
// from Content-Length before any of the body is read). Routing and its refusals happen once the
// header is in (HttpRouter::Admit), so a wrong method gets 405 however large its body. A refusal
// of a request whose body is still coming, and any malformed request (400), ends the connection
// after the response; close_after_write() and drain_after_write() say so.
//
// Memory: the input buffer is bounded by max_header_bytes, the body by max_body_bytes.
// Not thread-safe; never throws except std::bad_alloc. The router must outlive the session.
#ifndef FAULTLINE_HTTP_HTTP_SESSION_H_
#define FAULTLINE_HTTP_HTTP_SESSION_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

#include "agent/core/asio.h"
#include "agent/http/http_message.h"
#include "agent/http/http_router.h"

namespace faultline {

struct HttpLimits {
  // Request line plus header. No legitimate scrape or API call comes near it; it bounds memory
  // per connection.
  std::size_t max_header_bytes = 64 * 1024;
  // A request body, on routes that take POST.
  std::size_t max_body_bytes = 1024 * 1024;
};

class HttpSession {
 public:
  using Response = beast::http::response<beast::http::string_body>;

  // Where the session stands, for the connection's timeouts.
  enum class Phase {
    kIdle,    // no byte of the next request yet
    kHeader,  // reading a request line and header
    kBody,    // the header was admitted, reading its body
    kAnswer,  // a response is ready or being written
  };

  enum class Next {
    kRead,      // read more into ReadBuffer()
    kWrite,     // write response(), then call OnWritten()
    kContinue,  // write kContinueResponse, then read more (the client waits for it to send a body)
    kClose,     // close the connection (after draining input, if drain_after_write())
    kDefer,     // call deferred_route()'s deferred_handler, then Deliver() its response
  };

  static constexpr std::string_view kContinueResponse = "HTTP/1.1 100 Continue\r\n\r\n";

  HttpSession(const HttpRouter& router, HttpLimits limits, HttpEndpoint endpoint);

  // Where the next read goes. Never empty while the session can take input.
  asio::mutable_buffer ReadBuffer();
  // `n` bytes were read into ReadBuffer(). REQUIRES: the last Next was kRead or kContinue.
  Next OnRead(std::size_t n);
  // The response was written: go on with the next request (already buffered ones first).
  Next OnWritten();
  // After kDefer: the route whose deferred handler answers the request, and the request.
  const HttpRoute& deferred_route() const { return *route_; }
  const HttpRequest& deferred_request() const { return request_; }
  // The deferred handler's response. REQUIRES: the last Next was kDefer. Returns kWrite.
  Next Deliver(HttpResponse response);

  Phase phase() const;
  // The response to write; valid after kWrite until OnWritten.
  Response& response() { return response_; }
  // After writing the response the connection ends; drain_after_write(): the client may still be
  // sending, so read and discard its input for a while before closing (an unread input makes
  // the kernel answer the close with a reset, which can destroy the response before the client
  // has read it).
  bool close_after_write() const { return close_; }
  bool drain_after_write() const { return drain_; }

 private:
  using Parser = beast::http::request_parser<beast::http::string_body>;

  Next Parse();
  Next Admit();
  Next Complete();
  Next Refuse(HttpResponse response, bool keep_alive, bool drain);
  void SetResponse(HttpResponse response, bool keep_alive, bool drain);

  const HttpRouter& router_;
  const HttpLimits limits_;
  const HttpEndpoint endpoint_;

  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;            // a fresh one per request
  HttpRequest request_;                     // the request being read, filled once its header is in
  bool head_ = false;                       // request_ is a HEAD: its responses carry no body
  bool admitted_ = false;                   // Admit ran for the current request
  std::shared_ptr<const HttpRoute> route_;  // the admitted route while the body is read
  Response response_;
  bool answering_ = false;  // response_ is ready and not yet written
  bool deferred_ = false;   // a deferred handler owes the response
  bool deferred_keep_alive_ = false;
  bool close_ = false;
  bool drain_ = false;
};

}  // namespace faultline

#endif  // FAULTLINE_HTTP_HTTP_SESSION_H_
