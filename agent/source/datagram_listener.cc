#include "agent/source/datagram_listener.h"

#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "agent/source/listen_address.h"
#include "agent/source/unix_socket_file.h"

namespace faultline {
namespace {

using Clock = std::chrono::steady_clock;
using DatagramProtocol = asio::generic::datagram_protocol;

constexpr std::chrono::seconds kDatagramLogEvery(10);
// Asked of the kernel so a burst survives while the loop does other work.
constexpr int kReceiveBufferBytes = 4 << 20;

std::optional<PeerCredentials> CredentialsOf(msghdr& message) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
        c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
      ucred cred{};
      std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
      return PeerCredentials{cred.pid, cred.uid};
    }
  }
  return std::nullopt;
}

bool IsNamedUnix(const sockaddr_storage& from, socklen_t length) {
  const auto* un = reinterpret_cast<const sockaddr_un*>(&from);
  return from.ss_family == AF_UNIX && length > offsetof(sockaddr_un, sun_path) &&
         un->sun_path[0] != '\0';
}

}  // namespace

class DatagramListener::Impl : public std::enable_shared_from_this<DatagramListener::Impl> {
 public:
  Impl(asio::io_context& io, DatagramListenerOptions options, PeerConsumerFactory factory)
      : io_(io),
        options_(std::move(options)),
        factory_(std::move(factory)),
        where_(options_.unix_socket ? "unixgram socket " + options_.path
                                    : "udp " + options_.host + ":" + std::to_string(options_.port)),
        socket_(io),
        sweep_(io),
        buffer_(kMaxDatagramBytes + 1) {}

  Result<void> Open() {
    if (Result<void> opened = options_.unix_socket ? OpenUnix() : OpenUdp(); !opened.ok())
      return opened;
    // Past net.core.rmem_max only with CAP_NET_ADMIN (SO_RCVBUFFORCE); else what the limit allows.
    const int bytes = kReceiveBufferBytes;
    if (setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)) !=
        0) {
      boost::system::error_code ignored;
      socket_.set_option(asio::socket_base::receive_buffer_size(kReceiveBufferBytes), ignored);
    }
    return {};
  }

  void Start() {
    if (!socket_.is_open() || stopped_) return;
    spdlog::info("listening on {}", where_);
    ReadTurn();
    Sweep();
  }

  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    boost::system::error_code ignored;
    socket_.close(ignored);
    sweep_.cancel();
    for (Peer& peer : peers_) peer.consumer->OnEnd();
    peers_.clear();
    by_key_.clear();
    socket_file_.Remove();
  }

  uint16_t port() const { return port_; }
  std::size_t peers() const { return peers_.size(); }
  uint64_t datagrams() const { return datagrams_; }

  std::vector<SourceStreamStatus> Streams() const {
    std::vector<SourceStreamStatus> streams;
    streams.reserve(peers_.size());
    for (const Peer& peer : peers_) {
      // Open: the peer's stream is live on the source's socket.
      streams.push_back(
          SourceStreamStatus{.name = peer.name, .read_bytes = peer.read_bytes, .open = true});
    }
    std::sort(streams.begin(), streams.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    return streams;
  }

 private:
  struct Peer {
    std::string key;
    std::string name;  // the stream's (socket_peer.h)
    std::unique_ptr<StreamConsumer> consumer;
    Clock::time_point last_active;
    bool quiet = false;
    uint64_t read_bytes = 0;
  };

  Result<void> OpenUdp() {
    Result<BoundAddress> bound =
        ListenOnFirstAddress<asio::ip::udp>(io_, "udp", options_.host, options_.port, socket_,
                                            [](auto&, boost::system::error_code&) {});
    if (!bound.ok()) return bound.errors();
    port_ = bound.value().port;
    where_ = std::move(bound).value().where;
    return {};
  }

  Result<void> OpenUnix() {
    if (Result<void> free = UnixSocketFile::Prepare(options_.path, SOCK_DGRAM); !free.ok())
      return free;
    boost::system::error_code ec;
    socket_.open(DatagramProtocol(asio::local::datagram_protocol()), ec);
    if (!ec) {
      socket_.bind(DatagramProtocol::endpoint(asio::local::datagram_protocol::endpoint(options_.path)), ec);
    }
    if (ec) {
      boost::system::error_code ignored;
      socket_.close(ignored);
      return Failure("cannot listen on " + options_.path + ": " + ec.message());
    }
    if (Result<void> adopted = socket_file_.Adopt(options_.path, options_.mode); !adopted.ok()) {
      return adopted;
    }
    // The kernel then tells the pid of every sender, bound or not.
    const int on = 1;
    if (setsockopt(socket_.native_handle(), SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0) {
      spdlog::warn(
          "{}: cannot ask for senders' credentials ({}); unbound senders share one "
          "stream",
          where_, std::strerror(errno));
    }
    return {};
  }

  // One turn: receive until the socket is empty (then wait) or the budget is spent (then queue
  // the next turn behind everything else that is ready).
  void ReadTurn() {
    std::size_t taken = 0;
    const int fd = socket_.native_handle();
    while (!stopped_) {
      sockaddr_storage from{};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
      iovec chunk{buffer_.data(), kMaxDatagramBytes};
      msghdr message{};
      message.msg_name = &from;
      message.msg_namelen = sizeof(from);
      message.msg_iov = &chunk;
      message.msg_iovlen = 1;
      if (options_.unix_socket) {
        message.msg_control = control;
        message.msg_controllen = sizeof(control);
      }
      const ssize_t n = recvmsg(fd, &message, MSG_DONTWAIT);
      const Clock::time_point now = Clock::now();
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) Warn(now, std::strerror(errno));
        Wait();
        return;
      }
      ++datagrams_;
      if ((message.msg_flags & MSG_TRUNC) != 0) {
        Warn(now, "a datagram larger than " + std::to_string(kMaxDatagramBytes) +
                      " bytes was cut there");
      }
      taken += static_cast<std::size_t>(n);
      if (n > 0) Deliver(PeerFor(from, message, now), static_cast<std::size_t>(n), now);
      if (taken >= options_.read_budget) {
        asio::post(io_, [self = shared_from_this()] {
          if (!self->stopped_) self->ReadTurn();
        });
        return;
      }
    }
  }

  void Deliver(Peer& peer, std::size_t length, Clock::time_point now) {
    peer.read_bytes += length;
    // The buffer has a byte of room past the largest datagram for this.
    if (buffer_[length - 1] != '\n') buffer_[length++] = '\n';
    peer.last_active = now;
    peer.quiet = false;
    peer.consumer->OnBytes(std::string_view(buffer_.data(), length));
  }

  void Wait() {
    socket_.async_wait(DatagramProtocol::socket::wait_read,
                       [self = shared_from_this()](const boost::system::error_code& ec) {
                         if (ec || self->stopped_) return;
                         self->ReadTurn();
                       });
  }

  // The stream of the sender of `message`, made (and the least recently heard peer's ended, at
  // the cap) when it is new; it becomes the most recently heard.
  Peer& PeerFor(const sockaddr_storage& from, msghdr& message, Clock::time_point now) {
    std::optional<PeerCredentials> credentials;
    key_.clear();
    if (!options_.unix_socket) {
      key_.assign(reinterpret_cast<const char*>(&from), message.msg_namelen);
    } else if (IsNamedUnix(from, message.msg_namelen)) {
      key_.assign(reinterpret_cast<const char*>(&from), message.msg_namelen);
    } else {
      credentials = CredentialsOf(message);
      key_ = credentials ? "pid " + std::to_string(credentials->pid) : "unnamed";
    }
    if (const auto it = by_key_.find(key_); it != by_key_.end()) {
      peers_.splice(peers_.begin(), peers_, it->second);
      return peers_.front();
    }
    if (peers_.size() >= options_.max_peers) {
      Peer& oldest = peers_.back();
      spdlog::debug("{}: {} peers: ending the stream of the one heard from least recently", where_,
                    peers_.size());
      oldest.consumer->OnEnd();
      by_key_.erase(oldest.key);
      peers_.pop_back();
    }
    const auto* address = reinterpret_cast<const sockaddr*>(&from);
    const SocketPeer peer = options_.unix_socket
                                ? UnixPeer(options_.path, address, message.msg_namelen, credentials)
                                : InetPeer(address, message.msg_namelen);
    peers_.push_front(Peer{key_, peer.name, factory_(peer), now});
    by_key_.emplace(key_, peers_.begin());
    return peers_.front();
  }

  void Warn(Clock::time_point now, const std::string& what) {
    if (now < next_warning_) {
      ++warnings_held_back_;
      return;
    }
    spdlog::warn("{}: {} ({} more since the last report)", where_, what, warnings_held_back_);
    warnings_held_back_ = 0;
    next_warning_ = now + kDatagramLogEvery;
  }

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
    for (auto it = peers_.begin(); it != peers_.end();) {
      if (now - it->last_active >= options_.idle_timeout) {
        it->consumer->OnEnd();
        by_key_.erase(it->key);
        it = peers_.erase(it);
        continue;
      }
      if (!it->quiet && now - it->last_active >= options_.quiet_after) {
        it->quiet = true;
        it->consumer->OnQuiet();
      }
      ++it;
    }
  }

  asio::io_context& io_;
  const DatagramListenerOptions options_;
  const PeerConsumerFactory factory_;
  std::string where_;
  DatagramProtocol::socket socket_;
  asio::steady_timer sweep_;
  UnixSocketFile socket_file_;
  std::vector<char> buffer_;  // one datagram at a time, plus a byte for its terminator
  std::list<Peer> peers_;     // most recently heard first
  std::unordered_map<std::string, std::list<Peer>::iterator> by_key_;
  std::string key_;  // scratch: the key of the datagram at hand
  Clock::time_point next_warning_{};
  uint64_t warnings_held_back_ = 0;
  uint16_t port_ = 0;
  uint64_t datagrams_ = 0;
  bool stopped_ = false;
};

DatagramListener::DatagramListener(asio::io_context& io, DatagramListenerOptions options,
                                   PeerConsumerFactory factory)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(factory))) {}

DatagramListener::~DatagramListener() { impl_->Stop(); }

Result<void> DatagramListener::Open() { return impl_->Open(); }
void DatagramListener::Start() { impl_->Start(); }
void DatagramListener::Stop() { impl_->Stop(); }
uint16_t DatagramListener::port() const { return impl_->port(); }
std::size_t DatagramListener::peers() const { return impl_->peers(); }
uint64_t DatagramListener::datagrams() const { return impl_->datagrams(); }
std::vector<SourceStreamStatus> DatagramListener::Streams() const { return impl_->Streams(); }

}  // namespace faultline
