#include "agent/http/http_server.h"

#include <array>
#include <exception>
#include <map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace faultline {
namespace {

namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using Phase = HttpSession::Phase;
using Next = HttpSession::Next;

// After a failed accept (out of file descriptors, most likely) wait before the next one, so the
// loop does not spin while the condition lasts.
constexpr std::chrono::milliseconds kAcceptRetryDelay(100);

// After refusing a request: how long, and how much, to read and discard before closing.
constexpr std::chrono::seconds kLingerTimeout(2);
constexpr std::size_t kDrainChunkBytes = 4096;
constexpr std::size_t kMaxDrainBytes = 1 << 20;

std::string EndpointText(const tcp::endpoint& endpoint) {
  const std::string address = endpoint.address().to_string();
  const std::string host = endpoint.address().is_v6() ? "[" + address + "]" : address;
  return host + ":" + std::to_string(endpoint.port());
}

// A client reaching a dual-stack socket over IPv4 is the same client as over plain IPv4.
asio::ip::address Unmapped(const asio::ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
  }
  return address;
}

}  // namespace

// State shared by the server object, its pending accept and its connections.
class HttpServer::Impl : public std::enable_shared_from_this<HttpServer::Impl> {
 public:
  Impl(asio::io_context& io, HttpServerOptions options)
      : options_(options), acceptor_(io), accept_retry_(io) {}

  const HttpServerOptions& options() const { return options_; }
  const HttpRouter& router() const { return router_; }
  void AddRoute(HttpRoute route) { router_.Add(std::move(route)); }

  Result<void> Listen(const std::string& address, uint16_t port);
  uint16_t port() const { return port_; }
  void Stop();

  void Register(Connection* c);
  void Unregister(Connection* c);
  // Orders idle connections: the one that became idle first has the smallest tick.
  uint64_t NextIdleTick() { return ++idle_ticks_; }

 private:
  void Accept();
  void OnAccept(beast::error_code ec, tcp::socket socket);
  // Frees a slot for a newcomer from `peer`, evicting idle connections at the caps; false when
  // the newcomer must be refused.
  bool MakeRoom(const asio::ip::address& peer);
  // The connection idle longest, among those of `peer` when not null; null when none is idle.
  Connection* OldestIdle(const asio::ip::address* peer) const;

  const HttpServerOptions options_;
  HttpRouter router_;
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  std::string listen_host_;
  uint16_t port_ = 0;
  bool stopped_ = false;
  uint64_t idle_ticks_ = 0;
  // Open connections; each removes itself when it closes. At most max_connections, so the
  // linear scans for eviction stay cheap.
  std::unordered_set<Connection*> connections_;
  std::map<asio::ip::address, std::size_t> per_client_;
};

// One client connection: the socket, its deadlines, and the HttpSession that makes sense of the
// bytes. Owned by the completion handlers in flight (shared_from_this); the server only knows it
// by pointer, to evict it or close it on Stop().
class HttpServer::Connection : public std::enable_shared_from_this<HttpServer::Connection> {
 public:
  Connection(std::shared_ptr<Impl> server, tcp::socket socket, asio::ip::address peer,
             HttpEndpoint endpoint)
      : server_(std::move(server)),
        peer_(peer),
        stream_(std::move(socket)),
        session_(server_->router(), server_->options().limits, std::move(endpoint)),
        // The first request's header counts from the accept, however slowly its first byte comes.
        deadline_(Clock::now() + server_->options().header_timeout),
        idle_tick_(server_->NextIdleTick()) {}

  ~Connection() {
    if (!closed_) server_->Unregister(this);
  }

  const asio::ip::address& peer() const { return peer_; }

  // Waiting for a request that has not begun, or draining after a refusal: nobody is served by
  // this connection, so a newcomer may take its slot.
  bool idle() const { return !closed_ && (lingering_ || (reading_ && phase_ == Phase::kIdle)); }
  uint64_t idle_tick() const { return idle_tick_; }

  void Start() {
    server_->Register(this);
    Read();
  }

  // Idempotent; the slot is free as soon as this returns.
  void Close() {
    if (closed_) return;
    closed_ = true;
    server_->Unregister(this);
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();  // also cancels the pending operation and the stream's timer
  }

 private:
  void Do(Next next) {
    switch (next) {
      case Next::kRead:
        Read();
        return;
      case Next::kWrite:
        Write();
        return;
      case Next::kContinue:
        WriteContinue();
        return;
      case Next::kClose:
        if (session_.drain_after_write()) {
          Linger();
        } else {
          Close();
        }
        return;
      case Next::kDefer:
        Defer();
        return;
    }
  }

  // The route answers later; until then nothing is read (a pipelined request waits its turn).
  void Defer() {
    phase_ = Phase::kAnswer;
    const HttpRoute& route = session_.deferred_route();
    // The responder owns the connection until it answers: nothing else is in flight for it.
    HttpResponder respond = [self = shared_from_this()](HttpResponse response) {
      if (self->closed_ || self->delivered_) return;
      self->delivered_ = true;
      self->Do(self->session_.Deliver(std::move(response)));
    };
    delivered_ = false;
    try {
      route.deferred_handler(session_.deferred_request(), std::move(respond));
    } catch (const std::exception& e) {
      // Handlers must not throw; as for a plain handler, one failed request beats a dead agent.
      if (!delivered_) {
        delivered_ = true;
        Do(session_.Deliver(
            HttpResponse{500, "text/plain; charset=utf-8",
                         std::string("internal error: ") + e.what() + "\n"}));
      }
    }
  }

  void Read() {
    UpdateDeadline();
    reading_ = true;
    stream_.expires_at(deadline_);
    stream_.async_read_some(session_.ReadBuffer(),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->reading_ = false;
                              if (self->closed_) return;
                              if (ec) {  // end of stream, timeout, reset: nobody to answer
                                self->Close();
                                return;
                              }
                              self->Do(self->session_.OnRead(n));
                            });
  }

  // The deadline follows what the session waits for; it moves only when that changes, so a
  // client trickling a header byte by byte gets no more time than one sending it at once.
  void UpdateDeadline() {
    const Phase phase = session_.phase();
    if (phase == phase_) return;
    const HttpServerOptions& options = server_->options();
    switch (phase) {
      case Phase::kIdle:
        deadline_ = Clock::now() + options.idle_timeout;
        idle_tick_ = server_->NextIdleTick();
        break;
      case Phase::kHeader:
        // On a fresh connection the header deadline runs from the accept.
        if (served_ > 0 || phase_ != Phase::kIdle) {
          deadline_ = Clock::now() + options.header_timeout;
        }
        break;
      case Phase::kBody:
        deadline_ = Clock::now() + options.body_timeout;
        break;
      case Phase::kAnswer:
        break;
    }
    phase_ = phase;
  }

  void Write() {
    phase_ = Phase::kAnswer;
    stream_.expires_after(server_->options().write_timeout);
    http::async_write(stream_, session_.response(),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (self->closed_) return;
                        if (ec) {
                          self->Close();
                          return;
                        }
                        ++self->served_;
                        self->Do(self->session_.OnWritten());
                      });
  }

  void WriteContinue() {
    stream_.expires_after(server_->options().write_timeout);
    asio::async_write(stream_, asio::buffer(HttpSession::kContinueResponse),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (self->closed_) return;
                        if (ec) {
                          self->Close();
                          return;
                        }
                        self->Read();
                      });
  }

  void Linger() {
    lingering_ = true;
    idle_tick_ = server_->NextIdleTick();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTimeout);
    Drain(0);
  }

  void Drain(std::size_t drained) {
    stream_.async_read_some(asio::buffer(drain_buffer_), [self = shared_from_this(), drained](
                                                             beast::error_code ec, std::size_t n) {
      if (self->closed_) return;
      if (ec || drained + n > kMaxDrainBytes) {
        self->Close();
        return;
      }
      self->Drain(drained + n);
    });
  }

  const std::shared_ptr<Impl> server_;
  const asio::ip::address peer_;
  bool delivered_ = false;  // the deferred handler of the current request has answered
  beast::tcp_stream stream_;
  HttpSession session_;
  Clock::time_point deadline_;
  Phase phase_ = Phase::kIdle;  // what the deadline was last set for
  uint64_t idle_tick_;          // when the connection last became idle, see Impl::NextIdleTick
  uint64_t served_ = 0;         // responses written
  bool reading_ = false;        // a read is pending
  bool lingering_ = false;
  bool closed_ = false;
  std::array<char, kDrainChunkBytes> drain_buffer_;
};

void HttpServer::Impl::Register(Connection* c) {
  connections_.insert(c);
  ++per_client_[c->peer()];
}

void HttpServer::Impl::Unregister(Connection* c) {
  if (connections_.erase(c) == 0) return;
  const auto it = per_client_.find(c->peer());
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
}

Result<void> HttpServer::Impl::Listen(const std::string& address, uint16_t port) {
  const std::string where =
      (address.find(':') != std::string::npos ? "[" + address + "]" : address) + ":" +
      std::to_string(port);
  if (acceptor_.is_open() || stopped_) {
    return Failure("cannot listen on " + where + ": the server is already listening or stopped");
  }
  beast::error_code ec;
  tcp::resolver resolver(acceptor_.get_executor());
  const tcp::resolver::results_type endpoints = resolver.resolve(
      address, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec) {
    return Failure("cannot listen on " + where + ": cannot resolve '" + address +
                   "': " + ec.message());
  }
  Error last = Failure("cannot listen on " + where + ": no address found");
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
      last = Failure("cannot listen on " + EndpointText(endpoint) + ": " + ec.message());
      continue;
    }
    listen_host_ = address;
    Accept();
    return {};
  }
  beast::error_code ignored;
  acceptor_.close(ignored);
  return last;
}

void HttpServer::Impl::Stop() {
  if (stopped_) return;
  stopped_ = true;
  beast::error_code ignored;
  acceptor_.close(ignored);
  accept_retry_.cancel();
  // Close() unregisters, so walk a copy.
  const std::vector<Connection*> open(connections_.begin(), connections_.end());
  for (Connection* c : open) c->Close();
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
  beast::error_code peer_ec;
  beast::error_code local_ec;
  const tcp::endpoint peer = socket.remote_endpoint(peer_ec);
  const tcp::endpoint local = socket.local_endpoint(local_ec);
  const asio::ip::address client = Unmapped(peer.address());
  if (peer_ec || local_ec || !MakeRoom(client)) {
    beast::error_code ignored;
    socket.close(ignored);
  } else {
    HttpEndpoint endpoint{listen_host_, Unmapped(local.address()).to_string(), port_};
    std::make_shared<Connection>(shared_from_this(), std::move(socket), client, std::move(endpoint))
        ->Start();
  }
  Accept();
}

bool HttpServer::Impl::MakeRoom(const asio::ip::address& peer) {
  const auto it = per_client_.find(peer);
  if (it != per_client_.end() && it->second >= options_.max_connections_per_client) {
    Connection* victim = OldestIdle(&peer);
    if (victim == nullptr) return false;
    victim->Close();
  }
  if (connections_.size() >= options_.max_connections) {
    Connection* victim = OldestIdle(nullptr);
    if (victim == nullptr) return false;
    victim->Close();
  }
  return true;
}

HttpServer::Connection* HttpServer::Impl::OldestIdle(const asio::ip::address* peer) const {
  Connection* oldest = nullptr;
  for (Connection* c : connections_) {
    if (!c->idle() || (peer != nullptr && c->peer() != *peer)) continue;
    if (oldest == nullptr || c->idle_tick() < oldest->idle_tick()) oldest = c;
  }
  return oldest;
}

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options)
    : impl_(std::make_shared<Impl>(io, options)) {}

HttpServer::~HttpServer() { impl_->Stop(); }

void HttpServer::AddRoute(HttpRoute route) { impl_->AddRoute(std::move(route)); }

Result<void> HttpServer::Listen(const std::string& address, uint16_t port) {
  return impl_->Listen(address, port);
}

uint16_t HttpServer::port() const { return impl_->port(); }

void HttpServer::Stop() { impl_->Stop(); }

}  // namespace faultline
