// http_idle_client: scrape latency of an HTTP /metrics endpoint, first with no other connection
// open, then while IDLE connections that never send a byte are held open (what a scanner, a
// leaking client or a slowloris attacker leaves behind). Used by tests/bench/http_idle.sh against
// `faultline run` and mtail in the same run; not a test.
//
//   http_idle_client HOST PORT PATH SCRAPES IDLE
//
// Each scrape is a fresh connection (a probe or a scraper after its keep-alive expired): connect,
// "GET PATH" with Connection: close, read to EOF; the time is from connect() to EOF, and a scrape
// is ok when the status line says 200 within kScrapeTimeoutMs. Prints one line per phase:
//   idle=N scrapes=S ok=K p50_ms=... p99_ms=... max_ms=...
// (percentiles over the ok scrapes; a failed scrape counts as kScrapeTimeoutMs in max_ms).
// Raises its descriptor soft limit to the hard limit for the idle sockets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kScrapeTimeoutMs = 5000;
// After opening the idle connections: time for the server to accept them all before scraping.
constexpr std::chrono::milliseconds kSettle(500);

int Connect(const sockaddr_in& address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One scrape; its duration in milliseconds, or a negative value when it failed.
double Scrape(const sockaddr_in& address, const std::string& request) {
  const Clock::time_point start = Clock::now();
  const int fd = Connect(address);
  if (fd < 0) return -1;
  bool ok = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size());
  std::string response;
  char buffer[16384];
  while (ok) {
    const int left =
        kScrapeTimeoutMs -
        static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, left) <= 0) {
      ok = false;
      break;
    }
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0) ok = false;
    if (n <= 0) break;
    response.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  const size_t eol = response.find("\r\n");
  const bool status_ok =
      eol != std::string::npos && response.substr(0, eol).find(" 200 ") != std::string::npos;
  return ok && status_ok ? ms : -1;
}

void Phase(const sockaddr_in& address, const std::string& request, int scrapes, int idle) {
  std::vector<double> times;
  int failed = 0;
  for (int i = 0; i < scrapes; ++i) {
    const double ms = Scrape(address, request);
    if (ms < 0) {
      ++failed;
    } else {
      times.push_back(ms);
    }
  }
  std::sort(times.begin(), times.end());
  const auto at = [&](double q) {
    if (times.empty()) return 0.0;
    return times[std::min(times.size() - 1, static_cast<size_t>(q * (times.size() - 1) + 0.5))];
  };
  const double max = failed > 0 ? kScrapeTimeoutMs : (times.empty() ? 0.0 : times.back());
  std::printf("idle=%d scrapes=%d ok=%zu p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", idle, scrapes,
              times.size(), at(0.50), at(0.99), max);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s HOST PORT PATH SCRAPES IDLE\n", argv[0]);
    return 2;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[2])));
  if (::inet_pton(AF_INET, argv[1], &address.sin_addr) != 1) {
    std::fprintf(stderr, "%s: not an IPv4 address\n", argv[1]);
    return 2;
  }
  const std::string request = std::string("GET ") + argv[3] + " HTTP/1.1\r\nHost: " + argv[1] +
                              ":" + argv[2] + "\r\nConnection: close\r\n\r\n";
  const int scrapes = std::atoi(argv[4]);
  const int idle = std::atoi(argv[5]);

  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }

  Phase(address, request, scrapes, 0);
  std::vector<int> held;
  for (int i = 0; i < idle; ++i) {
    const int fd = Connect(address);
    if (fd < 0) {
      std::fprintf(stderr, "could open only %d idle connections: %s\n", i, std::strerror(errno));
      break;
    }
    held.push_back(fd);
  }
  std::this_thread::sleep_for(kSettle);
  Phase(address, request, scrapes, static_cast<int>(held.size()));
  for (int fd : held) ::close(fd);
  return 0;
}
