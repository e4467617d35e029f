// SocketPeer: who is at the other end of a network source's connection or datagram, as the
// stream's name (shown in findings and alerts) and as the host a syslog message without a
// HOSTNAME is attributed to.
//
//   TCP, UDP:           name "10.0.0.5:51234" or "[2001:db8::5]:51234" (IPv4-mapped IPv6 shown
//                       as IPv4), host "10.0.0.5"
//   Unix socket:        name "<socket path>: pid 4242, uid 1000" from the kernel's credentials
//                       (SO_PEERCRED, SCM_CREDENTIALS), or the sender's own socket path when it
//                       bound one; host: this machine's name
// Pure functions of their arguments except LocalHostName (gethostname, read once). Never throw.
#ifndef FAULTLINE_SOURCE_SOCKET_PEER_H_
#define FAULTLINE_SOURCE_SOCKET_PEER_H_

#include <sys/socket.h>
#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/source/stream_consumer.h"

namespace faultline {

struct SocketPeer {
  std::string name;
  std::string host;
};

// Makes the consumer of the stream of a new connection or datagram peer.
using PeerConsumerFactory = std::function<std::unique_ptr<StreamConsumer>(const SocketPeer& peer)>;

// The kernel's word on a local peer: SO_PEERCRED or SCM_CREDENTIALS.
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
};

SocketPeer InetPeer(const sockaddr* address, socklen_t length);
// `address` may be null or unnamed (an unbound sender); `credentials` may be unknown.
SocketPeer UnixPeer(const std::string& socket_path, const sockaddr* address, socklen_t length,
                    const std::optional<PeerCredentials>& credentials);

// This machine's host name; "localhost" when it has none.
const std::string& LocalHostName();

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_SOCKET_PEER_H_
