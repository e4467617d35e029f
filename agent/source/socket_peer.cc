#include "agent/source/socket_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace faultline {

SocketPeer InetPeer(const sockaddr* address, socklen_t length) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address != nullptr && address->sa_family == AF_INET &&
      length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    return SocketPeer{std::string(text) + ":" + std::to_string(ntohs(in->sin_port)), text};
  }
  if (address != nullptr && address->sa_family == AF_INET6 &&
      length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    const std::string port = std::to_string(ntohs(in6->sin6_port));
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], text, sizeof(text));
      return SocketPeer{std::string(text) + ":" + port, text};
    }
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    return SocketPeer{"[" + std::string(text) + "]:" + port, text};
  }
  return SocketPeer{"unknown peer", "unknown"};
}

SocketPeer UnixPeer(const std::string& socket_path, const sockaddr* address, socklen_t length,
                    const std::optional<PeerCredentials>& credentials) {
  const size_t path_offset = offsetof(sockaddr_un, sun_path);
  if (address != nullptr && address->sa_family == AF_UNIX &&
      static_cast<size_t>(length) > path_offset) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(address);
    const size_t max = static_cast<size_t>(length) - path_offset;
    // An abstract address (leading NUL) names nothing a reader would recognise.
    if (un->sun_path[0] != '\0') {
      return SocketPeer{std::string(un->sun_path, strnlen(un->sun_path, max)), LocalHostName()};
    }
  }
  std::string name = socket_path + ": ";
  if (credentials) {
    name += "pid " + std::to_string(credentials->pid) + ", uid " + std::to_string(credentials->uid);
  } else {
    name += "unnamed peer";
  }
  return SocketPeer{std::move(name), LocalHostName()};
}

const std::string& LocalHostName() {
  static const std::string name = [] {
    char buffer[256] = {};
    if (gethostname(buffer, sizeof(buffer) - 1) != 0 || buffer[0] == '\0')
      return std::string("localhost");
    return std::string(buffer);
  }();
  return name;
}

}  // namespace faultline
