#include "agent/source/stream_listener.h"

#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "agent/source/listen_address.h"
#include "agent/source/unix_socket_file.h"

namespace faultline {
namespace {

using Clock = std::chrono::steady_clock;
using Protocol = asio::generic::stream_protocol;

// After a failed accept (out of descriptors, most likely), wait before the next one so the loop
// does not spin while the condition lasts.
constexpr std::chrono::milliseconds kAcceptRetryDelay(100);
// Warnings about what a flood does are logged at most this often, with a count of the others.
constexpr std::chrono::seconds kLogEvery(10);
// One read: large enough to amortise the call, and it is the listener's only buffer.
constexpr std::size_t kReadChunkBytes = 64 * 1024;

}  // namespace

class StreamListener::Connection {
 public:
  Connection(Protocol::socket socket, std::string name, std::unique_ptr<StreamConsumer> consumer,
             Clock::time_point now)
      : socket_(std::move(socket)),
        name_(std::move(name)),
        consumer_(std::move(consumer)),
        last_active_(now) {}

  Protocol::socket& socket() { return socket_; }
  const std::string& name() const { return name_; }
  uint64_t read_bytes() const { return read_bytes_; }
  StreamConsumer& consumer() { return *consumer_; }
  Clock::time_point last_active() const { return last_active_; }
  bool closed() const { return closed_; }

  void Read(std::size_t bytes, Clock::time_point now) {
    read_bytes_ += bytes;
    last_active_ = now;
    quiet_ = false;
  }
  // OnQuiet once per silence.
  void QuietIfSilentSince(Clock::time_point since) {
    if (quiet_ || last_active_ > since) return;
    quiet_ = true;
    consumer_->OnQuiet();
  }
  // Ends the stream (its partial line becomes a line) and closes the socket, which cancels a
  // pending wait. Idempotent.
  void Close() {
    if (closed_) return;
    closed_ = true;
    consumer_->OnEnd();
    // A completion still queued may keep this object a while; the stream is over now.
    consumer_.reset();
    boost::system::error_code ignored;
    socket_.shutdown(Protocol::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  Protocol::socket socket_;
  const std::string name_;
  std::unique_ptr<StreamConsumer> consumer_;
  Clock::time_point last_active_;
  uint64_t read_bytes_ = 0;
  bool quiet_ = false;
  bool closed_ = false;
};

class StreamListener::Impl : public std::enable_shared_from_this<StreamListener::Impl> {
  // Lets one message through per kLogEvery and counts those held back.
  class Throttle {
   public:
    bool Allow(Clock::time_point now, uint64_t* held_back) {
      if (now < next_) {
        ++held_back_;
        return false;
      }
      *held_back = held_back_;
      held_back_ = 0;
      next_ = now + kLogEvery;
      return true;
    }

   private:
    Clock::time_point next_{};
    uint64_t held_back_ = 0;
  };

 public:
  Impl(asio::io_context& io, StreamListenerOptions options, PeerConsumerFactory factory)
      : io_(io),
        options_(std::move(options)),
        factory_(std::move(factory)),
        where_(options_.unix_socket ? "unix socket " + options_.path
                                    : "tcp " + options_.host + ":" + std::to_string(options_.port)),
        acceptor_(io),
        accept_retry_(io),
        sweep_(io),
        buffer_(kReadChunkBytes) {}

  Result<void> Open() { return options_.unix_socket ? OpenUnix() : OpenTcp(); }

  void Start() {
    if (!acceptor_.is_open() || stopped_) return;
    spdlog::info("listening on {}", where_);
    Accept();
    Sweep();
  }

  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
    sweep_.cancel();
    // Close() is called on a copy: it removes the connection from the map.
    std::vector<std::shared_ptr<Connection>> open;
    for (auto& [key, c] : connections_) open.push_back(c);
    for (const std::shared_ptr<Connection>& c : open) Close(c.get());
    socket_file_.Remove();
  }

  uint16_t port() const { return port_; }
  std::size_t connections() const { return connections_.size(); }
  uint64_t evicted() const { return evicted_; }
  uint64_t refused() const { return refused_; }

  std::vector<SourceStreamStatus> Streams() const {
    std::vector<SourceStreamStatus> streams;
    streams.reserve(connections_.size());
    for (const auto& [key, c] : connections_) {
      streams.push_back(
          SourceStreamStatus{.name = c->name(), .read_bytes = c->read_bytes(), .open = true});
    }
    std::sort(streams.begin(), streams.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    return streams;
  }

 private:
  Result<void> OpenTcp() {
    Result<BoundAddress> bound = ListenOnFirstAddress<asio::ip::tcp>(
        io_, "tcp", options_.host, options_.port, acceptor_,
        [](auto& acceptor, boost::system::error_code& ec) {
          acceptor.listen(asio::socket_base::max_listen_connections, ec);
        });
    if (!bound.ok()) return bound.errors();
    port_ = bound.value().port;
    where_ = std::move(bound).value().where;
    return {};
  }

  Result<void> OpenUnix() {
    if (Result<void> free = UnixSocketFile::Prepare(options_.path, SOCK_STREAM); !free.ok())
      return free;
    boost::system::error_code ec;
    acceptor_.open(Protocol(asio::local::stream_protocol()), ec);
    if (!ec) {
      acceptor_.bind(Protocol::endpoint(asio::local::stream_protocol::endpoint(options_.path)), ec);
    }
    if (ec) {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      return Failure("cannot listen on " + options_.path + ": " + ec.message());
    }
    if (Result<void> adopted = socket_file_.Adopt(options_.path, options_.mode); !adopted.ok()) {
      return adopted;
    }
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return Failure("cannot listen on " + options_.path + ": " + ec.message());
    return {};
  }

  void Accept() {
    acceptor_.async_accept(
        [self = shared_from_this()](const boost::system::error_code& ec, Protocol::socket socket) {
          self->OnAccept(ec, std::move(socket));
        });
  }

  void OnAccept(const boost::system::error_code& ec, Protocol::socket socket) {
    if (stopped_) return;
    const Clock::time_point now = Clock::now();
    if (ec) {
      uint64_t held_back = 0;
      if (accept_throttle_.Allow(now, &held_back)) {
        spdlog::warn(
            "{}: cannot accept a connection: {}; retrying ({} more failures since the "
            "last report)",
            where_, ec.message(), held_back);
      }
      accept_retry_.expires_after(kAcceptRetryDelay);
      accept_retry_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (!e && !self->stopped_) self->Accept();
      });
      return;
    }
    if (!MakeRoom(now)) {
      ++refused_;
      uint64_t held_back = 0;
      if (cap_throttle_.Allow(now, &held_back)) {
        spdlog::warn(
            "{}: {} connections, every one active in the last {} ms: a new connection "
            "was closed ({} more since the last report)",
            where_, connections_.size(), options_.evictable_after.count(), held_back);
      }
      boost::system::error_code ignored;
      socket.close(ignored);
      Accept();
      return;
    }
    boost::system::error_code option_ec;
    socket.non_blocking(true, option_ec);
    if (!options_.unix_socket) socket.set_option(asio::socket_base::keep_alive(true), option_ec);
    const SocketPeer peer = PeerOf(socket);
    spdlog::debug("{}: connection from {}", where_, peer.name);
    auto c = std::make_shared<Connection>(std::move(socket), peer.name, factory_(peer), now);
    connections_.emplace(c.get(), c);
    ReadTurn(c);  // bytes may have come with the connection
    Accept();
  }

  SocketPeer PeerOf(Protocol::socket& socket) const {
    boost::system::error_code ec;
    const Protocol::endpoint remote = socket.remote_endpoint(ec);
    if (!options_.unix_socket) {
      return ec ? SocketPeer{"unknown peer", "unknown"} : InetPeer(remote.data(), remote.size());
    }
    std::optional<PeerCredentials> credentials;
    ucred cred{};
    socklen_t length = sizeof(cred);
    if (getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0) {
      credentials = PeerCredentials{cred.pid, cred.uid};
    }
    return UnixPeer(options_.path, ec ? nullptr : remote.data(), ec ? 0 : remote.size(),
                    credentials);
  }

  // Frees a slot at the cap by closing the connection silent longest, if it has been silent
  // long enough to be presumed dead or idle; false when the newcomer must be refused.
  bool MakeRoom(Clock::time_point now) {
    if (connections_.size() < options_.max_connections) return true;
    Connection* victim = nullptr;
    for (const auto& [key, c] : connections_) {
      if (victim == nullptr || c->last_active() < victim->last_active()) victim = key;
    }
    if (victim == nullptr || now - victim->last_active() < options_.evictable_after) return false;
    ++evicted_;
    uint64_t held_back = 0;
    if (cap_throttle_.Allow(now, &held_back)) {
      spdlog::warn(
          "{}: {} connections: closed the one silent longest for a new connection ({} "
          "more since the last report)",
          where_, connections_.size(), held_back);
    }
    Close(victim);
    return true;
  }

  // One turn of a connection: read until the socket is empty (then wait for more) or the turn's
  // budget is spent (then queue the next turn behind everything else that is ready).
  void ReadTurn(const std::shared_ptr<Connection>& c) {
    std::size_t taken = 0;
    while (!c->closed()) {
      boost::system::error_code ec;
      const std::size_t want = std::min(buffer_.size(), options_.read_budget - taken);
      const std::size_t n = c->socket().read_some(asio::buffer(buffer_.data(), want), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) {
        Wait(c);
        return;
      }
      if (ec == asio::error::interrupted) continue;
      if (ec) {  // end of stream, reset: the stream ends, its last partial line counts
        Close(c.get());
        return;
      }
      c->Read(n, Clock::now());
      c->consumer().OnBytes(std::string_view(buffer_.data(), n));
      taken += n;
      if (taken >= options_.read_budget) {
        asio::post(io_, [self = shared_from_this(), c] {
          if (!c->closed()) self->ReadTurn(c);
        });
        return;
      }
    }
  }

  void Wait(const std::shared_ptr<Connection>& c) {
    c->socket().async_wait(Protocol::socket::wait_read,
                           [self = shared_from_this(), c](const boost::system::error_code& ec) {
                             if (c->closed()) return;
                             if (ec) {
                               self->Close(c.get());
                               return;
                             }
                             self->ReadTurn(c);
                           });
  }

  void Close(Connection* c) {
    const auto it = connections_.find(c);
    if (it == connections_.end()) return;
    const std::shared_ptr<Connection> keep = it->second;  // alive until Close returns
    connections_.erase(it);
    keep->Close();
  }

  // Every sweep interval: OnQuiet for connections quiet for quiet_after, and close those silent
  // for idle_timeout.
  void Sweep() {
    const auto shortest = std::min(options_.quiet_after, options_.idle_timeout);
    sweep_.expires_after(std::clamp<std::chrono::milliseconds>(
        shortest / 4, std::chrono::milliseconds(50), std::chrono::milliseconds(1000)));
    sweep_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->stopped_) return;
      self->SweepNow(Clock::now());
      self->Sweep();
    });
  }

  void SweepNow(Clock::time_point now) {
    std::vector<Connection*> idle;
    for (const auto& [key, c] : connections_) {
      if (now - c->last_active() >= options_.idle_timeout) {
        idle.push_back(key);
      } else {
        c->QuietIfSilentSince(now - options_.quiet_after);
      }
    }
    for (Connection* c : idle) {
      spdlog::debug("{}: closing a connection silent for {} ms", where_,
                    options_.idle_timeout.count());
      Close(c);
    }
  }

  asio::io_context& io_;
  const StreamListenerOptions options_;
  const PeerConsumerFactory factory_;
  std::string where_;
  asio::basic_socket_acceptor<Protocol> acceptor_;
  asio::steady_timer accept_retry_;
  asio::steady_timer sweep_;
  UnixSocketFile socket_file_;
  // Every connection reads into this one buffer and hands the bytes on before the next read.
  std::vector<char> buffer_;
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections_;
  Throttle accept_throttle_;
  Throttle cap_throttle_;
  uint16_t port_ = 0;
  uint64_t evicted_ = 0;
  uint64_t refused_ = 0;
  bool stopped_ = false;
};

StreamListener::StreamListener(asio::io_context& io, StreamListenerOptions options,
                               PeerConsumerFactory factory)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(factory))) {}

StreamListener::~StreamListener() { impl_->Stop(); }

Result<void> StreamListener::Open() { return impl_->Open(); }
void StreamListener::Start() { impl_->Start(); }
void StreamListener::Stop() { impl_->Stop(); }
uint16_t StreamListener::port() const { return impl_->port(); }
std::size_t StreamListener::connections() const { return impl_->connections(); }
uint64_t StreamListener::evicted() const { return impl_->evicted(); }
uint64_t StreamListener::refused() const { return impl_->refused(); }
std::vector<SourceStreamStatus> StreamListener::Streams() const { return impl_->Streams(); }

}  // namespace faultline
