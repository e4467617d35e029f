// Test helpers: plain blocking client sockets on loopback and Unix sockets, as a sender would
// open them (nc, logger).
#ifndef FAULTLINE_TESTS_UNIT_SOURCE_SOCKET_CLIENT_H_
#define FAULTLINE_TESTS_UNIT_SOURCE_SOCKET_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace faultline::testing {

// A connected socket closed on destruction; fd() is -1 when the connection failed.
class Client {
 public:
  Client() = default;
  explicit Client(int fd) : fd_(fd) {}
  Client(Client&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Client& operator=(Client&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Client() { Close(); }

  static Client Tcp(uint16_t port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      close(fd);
      return Client();
    }
    return Client(fd);
  }
  static Client Udp(uint16_t port) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      close(fd);
      return Client();
    }
    return Client(fd);
  }
  // `type`: SOCK_STREAM or SOCK_DGRAM. `bind_to`, when not empty, names the client's own socket.
  static Client Unix(const std::string& path, int type, const std::string& bind_to = "") {
    const int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (!bind_to.empty()) {
      sockaddr_un own{};
      own.sun_family = AF_UNIX;
      std::memcpy(own.sun_path, bind_to.data(), bind_to.size());
      if (bind(fd, reinterpret_cast<sockaddr*>(&own), sizeof(own)) != 0) {
        close(fd);
        return Client();
      }
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.data(), path.size());
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      close(fd);
      return Client();
    }
    return Client(fd);
  }

  int fd() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  // Writes all of `bytes` (one datagram on a datagram socket); false on error.
  bool Send(std::string_view bytes) const {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Ends both directions; wakes a thread blocked in Send on this socket (Close would not).
  void Shutdown() const { shutdown(fd_, SHUT_RDWR); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace faultline::testing

#endif  // FAULTLINE_TESTS_UNIT_SOURCE_SOCKET_CLIENT_H_
