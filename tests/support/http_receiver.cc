#include "tests/support/http_receiver.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

namespace faultline::testing {
namespace {

bool EqualsIgnoringCase(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 410: return "Gone";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

struct Connection {
  std::string in;
  bool hung = false;
};

}  // namespace

std::string ReceivedRequest::header(const std::string& name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoringCase(n, name)) return v;
  }
  return "";
}

TestReceiver::TestReceiver(uint16_t port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 64) != 0) {
    throw std::runtime_error(std::string("test receiver cannot listen: ") + std::strerror(errno));
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe");
  thread_ = std::thread([this] { Run(); });
}

TestReceiver::~TestReceiver() { Stop(); }

std::string TestReceiver::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void TestReceiver::Script(std::vector<ScriptedResponse> responses) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& r : responses) script_.push_back(std::move(r));
}

void TestReceiver::SetDefault(ScriptedResponse fallback) {
  std::lock_guard<std::mutex> lock(mutex_);
  fallback_ = std::move(fallback);
}

std::vector<ReceivedRequest> TestReceiver::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_;
}

std::size_t TestReceiver::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_.size();
}

bool TestReceiver::WaitFor(std::size_t n, std::chrono::milliseconds timeout) const {
  return Eventually([&] { return count() >= n; }, timeout);
}

void TestReceiver::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return;
    stop_ = true;
  }
  const char byte = 0;
  (void)!write(wake_[1], &byte, 1);
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  close(wake_[0]);
  close(wake_[1]);
}

void TestReceiver::Run() {
  std::map<int, Connection> connections;
  for (;;) {
    std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    for (const auto& [fd, c] : connections) fds.push_back({fd, POLLIN, 0});
    poll(fds.data(), fds.size(), 1000);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_) break;
    }
    if (fds[0].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) connections[fd] = Connection{};
    }
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const int fd = fds[i].fd;
      Connection& c = connections[fd];
      char buffer[65536];
      const ssize_t n = read(fd, buffer, sizeof buffer);
      if (n <= 0) {
        close(fd);
        connections.erase(fd);
        continue;
      }
      c.in.append(buffer, static_cast<std::size_t>(n));
      // Every complete request in the buffer.
      for (;;) {
        const std::size_t end = c.in.find("\r\n\r\n");
        if (end == std::string::npos) break;
        ReceivedRequest request;
        std::size_t line_end = c.in.find("\r\n");
        const std::string first = c.in.substr(0, line_end);
        const std::size_t sp1 = first.find(' ');
        const std::size_t sp2 = first.find(' ', sp1 + 1);
        request.method = first.substr(0, sp1);
        request.target = first.substr(sp1 + 1, sp2 - sp1 - 1);
        std::size_t at = line_end + 2;
        while (at < end) {
          const std::size_t next = c.in.find("\r\n", at);
          const std::string h = c.in.substr(at, next - at);
          const std::size_t colon = h.find(':');
          if (colon != std::string::npos) {
            std::string value = h.substr(colon + 1);
            value.erase(0, value.find_first_not_of(' '));
            request.headers.emplace_back(h.substr(0, colon), value);
          }
          at = next + 2;
        }
        const std::string length = request.header("Content-Length");
        const std::size_t body_length = length.empty() ? 0 : std::stoul(length);
        if (c.in.size() < end + 4 + body_length) break;
        request.body = c.in.substr(end + 4, body_length);
        c.in.erase(0, end + 4 + body_length);
        request.at = std::chrono::system_clock::now();
        ScriptedResponse response;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          requests_.push_back(request);
          if (!script_.empty()) {
            response = script_.front();
            script_.pop_front();
          } else {
            response = fallback_;
          }
        }
        if (response.hang) {
          c.hung = true;
          break;
        }
        std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                          Reason(response.status) + "\r\nContent-Length: " +
                          std::to_string(response.body.size()) + "\r\n";
        for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
        out += "\r\n" + response.body;
        (void)!write(fd, out.data(), out.size());
      }
    }
  }
  for (const auto& [fd, c] : connections) close(fd);
}

}  // namespace faultline::testing
