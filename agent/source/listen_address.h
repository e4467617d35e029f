// ListenOnFirstAddress: binds a network source's socket (a TCP acceptor or a UDP socket, both of
// asio's generic protocols) to the first address `host:port` resolves to, as the stream and
// datagram listeners both do: localhost may be ::1 or 127.0.0.1, and the first that binds wins;
// the last failure is the one reported.
//
// Pure helpers of their arguments; ListenOnFirstAddress runs on the caller's thread, blocks only
// on resolving a numeric or local name (AI_PASSIVE), and never throws: it returns the reason
// ("cannot listen on tcp 127.0.0.1:5170: Address already in use") as an error, or the bound port
// (port 0 asks for a free one) and the listener's name in logs.
#ifndef FAULTLINE_SOURCE_LISTEN_ADDRESS_H_
#define FAULTLINE_SOURCE_LISTEN_ADDRESS_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "agent/core/asio.h"
#include "agent/core/result.h"

namespace faultline {

// The port of an IPv4 or IPv6 socket address; 0 for any other family.
uint16_t PortOf(const sockaddr* address);

// "host:port", with an IPv6 host in brackets.
std::string HostPortText(const std::string& host, uint16_t port);

struct BoundAddress {
  uint16_t port = 0;
  std::string where;  // "tcp 127.0.0.1:5170"
};

// `InternetProtocol` is asio::ip::tcp or asio::ip::udp; `Socket` a generic acceptor or socket;
// `after_bind(socket, ec)` is what follows the bind (listen() for an acceptor).
template <class InternetProtocol, class Socket, class AfterBind>
Result<BoundAddress> ListenOnFirstAddress(asio::io_context& io, const std::string& scheme,
                                          const std::string& host, uint16_t port, Socket& socket,
                                          const AfterBind& after_bind) {
  using Protocol = typename Socket::protocol_type;
  const std::string wanted = scheme + " " + HostPortText(host, port);
  boost::system::error_code ec;
  typename InternetProtocol::resolver resolver(io);
  const auto endpoints = resolver.resolve(
      host, std::to_string(port),
      InternetProtocol::resolver::passive | InternetProtocol::resolver::numeric_service, ec);
  if (ec) {
    return Failure("cannot listen on " + wanted + ": cannot resolve '" + host +
                   "': " + ec.message());
  }
  Error last = Failure("cannot listen on " + wanted + ": no address found");
  for (const auto& entry : endpoints) {
    const typename InternetProtocol::endpoint endpoint = entry.endpoint();
    boost::system::error_code ignored;
    socket.close(ignored);
    socket.open(Protocol(endpoint.protocol()), ec);
    // A restarted agent binds at once, whatever its old connections left in TIME_WAIT.
    if (!ec) socket.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) socket.bind(typename Protocol::endpoint(endpoint), ec);
    if (!ec) after_bind(socket, ec);
    BoundAddress bound;
    if (!ec) bound.port = PortOf(socket.local_endpoint(ec).data());
    if (!ec) {
      bound.where = scheme + " " + HostPortText(endpoint.address().to_string(), bound.port);
      return bound;
    }
    last = Failure("cannot listen on " + wanted + ": " + ec.message());
  }
  boost::system::error_code ignored;
  socket.close(ignored);
  return last;
}

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_LISTEN_ADDRESS_H_
