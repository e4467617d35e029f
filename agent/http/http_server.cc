#include "agent/http/http_server.h"

#include <algorithm>
#include <exception>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "agent/core/version.h"

namespace faultline {
namespace {

namespace http = beast::http;
using tcp = asio::ip::tcp;

using Request = http::request<http::empty_body>;
using Response = http::response<http::string_body>;

// After a failed accept (out of file descriptors, most likely) wait before the next one, so the
// loop does not spin while the condition lasts.
constexpr std::chrono::milliseconds kAcceptRetryDelay(100);

// After refusing a request: how long, and how much, to read and discard before closing.
constexpr std::chrono::seconds kLingerTimeout(2);
constexpr std::size_t kDrainChunkBytes = 4096;
constexpr std::size_t kMaxDrainBytes = 1 << 20;

constexpr char kAllowedMethods[] = "GET, HEAD";

std::string ServerHeader() { return std::string("faultline/") + kVersion; }

std::string EndpointText(const tcp::endpoint& endpoint) {
  const std::string address = endpoint.address().to_string();
  const std::string host = endpoint.address().is_v6() ? "[" + address + "]" : address;
  return host + ":" + std::to_string(endpoint.port());
}

Response PlainResponse(http::status status, unsigned version, std::string body) {
  Response res(status, version);
  res.set(http::field::server, ServerHeader());
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

}  // namespace

// State shared by the server object, its pending accept and its connections.
class HttpServer::Impl : public std::enable_shared_from_this<HttpServer::Impl> {
 public:
  Impl(asio::io_context& io, HttpServerOptions options)
      : options_(options), acceptor_(io), accept_retry_(io) {}

  const HttpServerOptions& options() const { return options_; }

  void Handle(std::string path, HttpHandler handler) {
    handlers_[std::move(path)] = std::move(handler);
  }

  bool Listen(const std::string& address, uint16_t port, std::string* error);
  uint16_t port() const { return port_; }
  void Stop();

  Response Respond(const Request& req) const;

  void Register(Connection* c) { connections_.insert(c); }
  void Unregister(Connection* c) { connections_.erase(c); }

 private:
  void Accept();
  void OnAccept(beast::error_code ec, tcp::socket socket);

  const HttpServerOptions options_;
  std::map<std::string, HttpHandler, std::less<>> handlers_;
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  uint16_t port_ = 0;
  bool stopped_ = false;
  // Live connections, so Stop() can close them; each removes itself when destroyed.
  std::unordered_set<Connection*> connections_;
};

// One client connection: read a request, write its response, repeat while keep-alive holds.
// Owned by the completion handlers in flight (shared_from_this); the server only knows it by
// pointer to close it on Stop().
class HttpServer::Connection : public std::enable_shared_from_this<HttpServer::Connection> {
 public:
  Connection(std::shared_ptr<Impl> server, tcp::socket socket)
      : server_(std::move(server)),
        stream_(std::move(socket)),
        // The buffer holds at most one request header plus what a pipelining client sent after
        // it; bounding it bounds the connection's memory.
        buffer_(server_->options().max_header_bytes) {}

  ~Connection() { server_->Unregister(this); }

  void Start() {
    server_->Register(this);
    Read();
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();  // also cancels the stream's timer
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_->options().max_header_bytes));
    stream_.expires_after(server_->options().read_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted) {
      Close();
      return;
    }
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      SendAndClose(PlainResponse(http::status::request_header_fields_too_large, 11,
                                 "request header too large\n"));
      return;
    }
    if (ec == http::error::unexpected_body) {
      SendAndClose(
          PlainResponse(http::status::payload_too_large, 11, "request bodies are not accepted\n"));
      return;
    }
    if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
      SendAndClose(PlainResponse(http::status::bad_request, 11, "malformed request\n"));
      return;
    }
    if (ec) {  // connection reset and other socket errors: nobody to answer
      Close();
      return;
    }
    const Request& req = parser_->get();
    response_ = server_->Respond(req);
    response_.keep_alive(req.keep_alive());
    Write();
  }

  // Answers a request that cannot be served (too large, malformed) and closes. The client may
  // still be sending the rest of it: closing a socket with unread input makes the kernel send a
  // reset, which can destroy the answer before the client reads it, so half-close and drain
  // first.
  void SendAndClose(Response res) {
    response_ = std::move(res);
    response_.keep_alive(false);
    lingering_ = true;
    Write();
  }

  void Linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTimeout);
    Drain(0);
  }

  void Drain(std::size_t drained) {
    buffer_.clear();
    stream_.async_read_some(
        buffer_.prepare(std::min(kDrainChunkBytes, buffer_.max_size())),
        [self = shared_from_this(), drained](beast::error_code ec, std::size_t n) {
          if (ec || drained + n > kMaxDrainBytes) {
            self->Close();
            return;
          }
          self->Drain(drained + n);
        });
  }

  void Write() {
    stream_.expires_after(server_->options().write_timeout);
    http::async_write(
        stream_, response_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnWrite(ec); });
  }

  void OnWrite(beast::error_code ec) {
    if (!ec && lingering_) {
      Linger();
      return;
    }
    if (ec || !response_.keep_alive()) {
      Close();
      return;
    }
    Read();
  }

  const std::shared_ptr<Impl> server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;  // a fresh one per request
  Response response_;       // must live until its write completes
  bool lingering_ = false;  // close after draining input, see SendAndClose
};

bool HttpServer::Impl::Listen(const std::string& address, uint16_t port, std::string* error) {
  const std::string where =
      (address.find(':') != std::string::npos ? "[" + address + "]" : address) + ":" +
      std::to_string(port);
  if (acceptor_.is_open() || stopped_) {
    *error = "cannot listen on " + where + ": the server is already listening or stopped";
    return false;
  }
  beast::error_code ec;
  tcp::resolver resolver(acceptor_.get_executor());
  const tcp::resolver::results_type endpoints = resolver.resolve(
      address, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec) {
    *error = "cannot listen on " + where + ": cannot resolve '" + address + "': " + ec.message();
    return false;
  }
  // A name may resolve to several addresses (localhost: ::1 and 127.0.0.1); the first that binds
  // wins, and the last failure is the one reported.
  for (const tcp::resolver::results_type::value_type& entry : endpoints) {
    const tcp::endpoint endpoint = entry.endpoint();
    beast::error_code ignored;
    acceptor_.close(ignored);
    // Reuse the address so a restarted agent can bind while old connections sit in TIME_WAIT.
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) port_ = acceptor_.local_endpoint(ec).port();
    if (ec) {
      *error = "cannot listen on " + EndpointText(endpoint) + ": " + ec.message();
      continue;
    }
    error->clear();
    Accept();
    return true;
  }
  beast::error_code ignored;
  acceptor_.close(ignored);
  if (endpoints.empty()) *error = "cannot listen on " + where + ": no address found";
  return false;
}

void HttpServer::Impl::Stop() {
  if (stopped_) return;
  stopped_ = true;
  beast::error_code ignored;
  acceptor_.close(ignored);
  accept_retry_.cancel();
  // Closing does not destroy a connection (its completions, now aborted, still hold it), so the
  // set does not change under this loop.
  for (Connection* c : connections_) c->Close();
}

void HttpServer::Impl::Accept() {
  acceptor_.async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
    self->OnAccept(ec, std::move(socket));
  });
}

void HttpServer::Impl::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (stopped_) return;
  if (ec) {
    accept_retry_.expires_after(kAcceptRetryDelay);
    accept_retry_.async_wait([self = shared_from_this()](beast::error_code wait_ec) {
      if (!wait_ec && !self->stopped_) self->Accept();
    });
    return;
  }
  if (connections_.size() >= options_.max_connections) {
    beast::error_code ignored;
    socket.close(ignored);
  } else {
    std::make_shared<Connection>(shared_from_this(), std::move(socket))->Start();
  }
  Accept();
}

Response HttpServer::Impl::Respond(const Request& req) const {
  // Beast 1.74 has its own string_view type.
  std::string_view target(req.target().data(), req.target().size());
  target = target.substr(0, target.find('?'));
  const auto it = handlers_.find(target);
  if (it == handlers_.end()) {
    return PlainResponse(http::status::not_found, req.version(), "not found\n");
  }
  const bool head = req.method() == http::verb::head;
  if (!head && req.method() != http::verb::get) {
    Response res =
        PlainResponse(http::status::method_not_allowed, req.version(), "method not allowed\n");
    res.set(http::field::allow, kAllowedMethods);
    return res;
  }

  HttpResponse out;
  try {
    out = it->second();
  } catch (const std::exception& e) {
    // Handlers must not throw; if one does anyway, one failed request beats a dead agent.
    return PlainResponse(http::status::internal_server_error, req.version(),
                         std::string("internal error: ") + e.what() + "\n");
  }
  Response res(static_cast<http::status>(out.status), req.version());
  res.set(http::field::server, ServerHeader());
  res.set(http::field::content_type, out.content_type);
  if (head) {
    // HEAD announces the GET body's length without sending it.
    res.content_length(out.body.size());
  } else {
    res.body() = std::move(out.body);
    res.prepare_payload();
  }
  return res;
}

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options)
    : impl_(std::make_shared<Impl>(io, options)) {}

HttpServer::~HttpServer() { impl_->Stop(); }

void HttpServer::Handle(std::string path, HttpHandler handler) {
  impl_->Handle(std::move(path), std::move(handler));
}

bool HttpServer::Listen(const std::string& address, uint16_t port, std::string* error) {
  return impl_->Listen(address, port, error);
}

uint16_t HttpServer::port() const { return impl_->port(); }

void HttpServer::Stop() { impl_->Stop(); }

}  // namespace faultline
