// GCC 12 with optimisation and sanitizers reports a false -Wmaybe-uninitialized inside Beast
// 1.74's parser (a boost::optional in basic_parser::do_field, instantiated here by put). The
// pragma comes first because the warning is attributed to Beast's header lines.
#if defined(__GNUC__) && !defined(__clang__)  // clang has no such warning (fuzz preset)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "agent/http/http_session.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "agent/core/version.h"

namespace faultline {
namespace {

namespace http = beast::http;

// Read in pieces of at most this much: small enough to bound what one read adds to the buffer.
constexpr std::size_t kReadChunkBytes = 16 * 1024;

std::string ServerHeader() { return std::string("faultline/") + kVersion; }

std::optional<HttpMethod> MethodOf(http::verb verb) {
  switch (verb) {
    case http::verb::get:
      return HttpMethod::kGet;
    case http::verb::head:
      return HttpMethod::kHead;
    case http::verb::post:
      return HttpMethod::kPost;
    default:
      return std::nullopt;
  }
}

std::string Text(beast::string_view s) { return std::string(s.data(), s.size()); }

HttpResponse PlainResponse(unsigned status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body)};
}

}  // namespace

HttpSession::HttpSession(const HttpRouter& router, HttpLimits limits, HttpEndpoint endpoint)
    : router_(router),
      limits_(limits),
      endpoint_(std::move(endpoint)),
      // The buffer holds at most one request header plus what a pipelining client sent after
      // it; a body passes through it into the parser. Bounding it bounds the session's memory.
      buffer_(limits.max_header_bytes) {}

asio::mutable_buffer HttpSession::ReadBuffer() {
  return buffer_.prepare(std::min(kReadChunkBytes, buffer_.max_size() - buffer_.size()));
}

HttpSession::Next HttpSession::OnRead(std::size_t n) {
  buffer_.commit(n);
  return Parse();
}

HttpSession::Next HttpSession::OnWritten() {
  answering_ = false;
  if (close_) return Next::kClose;
  return Parse();
}

HttpSession::Next HttpSession::Deliver(HttpResponse response) {
  deferred_ = false;
  SetResponse(std::move(response), deferred_keep_alive_, false);
  parser_.reset();
  route_.reset();
  return Next::kWrite;
}

HttpSession::Phase HttpSession::phase() const {
  if (answering_ || deferred_) return Phase::kAnswer;
  if (!parser_.has_value() || !parser_->got_some()) {
    return buffer_.size() == 0 ? Phase::kIdle : Phase::kHeader;
  }
  return parser_->is_header_done() ? Phase::kBody : Phase::kHeader;
}

HttpSession::Next HttpSession::Parse() {
  while (true) {
    if (!parser_.has_value()) {
      parser_.emplace();
      parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
      // No limit until the route is known: a body the route would refuse anyway must get the
      // route's answer (405, 404), not 413. Admit checks Content-Length and sets the limit.
      parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
      admitted_ = false;
    }
    if (buffer_.size() == 0) return Next::kRead;
    beast::error_code ec;
    const std::size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == http::error::need_more) {
      // A header too large is reported by the parser itself; this is a chunk header (with its
      // extensions) that does not fit the buffer.
      if (buffer_.size() == buffer_.max_size()) {
        return Refuse(PlainResponse(400, "malformed request\n"), false, true);
      }
      return Next::kRead;
    }
    if (ec == http::error::header_limit) {
      return Refuse(PlainResponse(431, "request header too large\n"), false, true);
    }
    if (ec == http::error::body_limit) {
      return Refuse(PlainResponse(413, "request body too large\n"), false, true);
    }
    if (ec) return Refuse(PlainResponse(400, "malformed request\n"), false, true);
    if (parser_->is_header_done() && !admitted_) {
      admitted_ = true;
      const Next next = Admit();
      if (next != Next::kRead) return next;
    }
    if (parser_->is_done()) return Complete();
    if (used == 0) return Next::kRead;
  }
}

HttpSession::Next HttpSession::Admit() {
  const http::request<http::string_body>& req = parser_->get();
  const beast::string_view target = req.target();
  const std::size_t question = target.find('?');
  request_ = HttpRequest();
  request_.path = Text(target.substr(0, question));
  if (question != beast::string_view::npos) {
    request_.query = Text(target.substr(question + 1));
    request_.query_params = ParseQueryString(request_.query);
  }
  for (const auto& field : req) {
    request_.headers.emplace_back(Text(field.name_string()), Text(field.value()));
  }
  const std::optional<HttpMethod> method = MethodOf(req.method());
  if (method.has_value()) request_.method = *method;
  head_ = method == HttpMethod::kHead;

  const bool body_follows = !parser_->is_done();
  HttpResponse refusal;
  route_ = router_.Admit(method, request_, body_follows, endpoint_, &refusal);
  if (route_ == nullptr) {
    // Without a body the connection can go on; with one, what follows is not a request.
    return Refuse(std::move(refusal), !body_follows && parser_->keep_alive(), body_follows);
  }
  if (!body_follows) return Next::kRead;
  const boost::optional<std::uint64_t> length = parser_->content_length();
  if (length.has_value() && *length > limits_.max_body_bytes) {
    return Refuse(PlainResponse(413, "request body too large\n"), false, true);
  }
  parser_->body_limit(limits_.max_body_bytes);  // a chunked body is checked as it comes
  if (parser_->get().version() >= 11 &&
      EqualsIgnoringCase(request_.header("Expect"), "100-continue")) {
    return Next::kContinue;
  }
  return Next::kRead;
}

HttpSession::Next HttpSession::Complete() {
  request_.body = std::move(parser_->get().body());
  if (route_->deferred_handler) {
    deferred_ = true;
    deferred_keep_alive_ = parser_->keep_alive();
    return Next::kDefer;
  }
  SetResponse(HttpRouter::Respond(*route_, request_), parser_->keep_alive(), false);
  parser_.reset();
  route_.reset();
  return Next::kWrite;
}

HttpSession::Next HttpSession::Refuse(HttpResponse response, bool keep_alive, bool drain) {
  SetResponse(std::move(response), keep_alive, drain);
  parser_.reset();
  route_.reset();
  return Next::kWrite;
}

void HttpSession::SetResponse(HttpResponse out, bool keep_alive, bool drain) {
  const unsigned version =
      parser_.has_value() && parser_->is_header_done() ? parser_->get().version() : 11;
  response_ = Response(static_cast<http::status>(out.status), version);
  response_.set(http::field::server, ServerHeader());
  response_.set(http::field::content_type, out.content_type);
  for (const auto& [name, value] : out.headers) response_.insert(name, value);
  if (head_) {
    // HEAD announces the GET body's length without sending it.
    response_.content_length(out.body.size());
  } else {
    response_.body() = std::move(out.body);
    response_.prepare_payload();
  }
  response_.keep_alive(keep_alive);
  close_ = !keep_alive;
  drain_ = drain;
  answering_ = true;
  head_ = false;
}

}  // namespace faultline
