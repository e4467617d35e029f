// DatagramListener: receives datagrams on a UDP address or a Unix datagram socket and hands them
// to one stream per peer, named by the peer (socket_peer.h): its address for UDP; for a Unix
// socket the sender's own socket path when it bound one, else its pid (the kernel's
// SCM_CREDENTIALS), so `logger -u` and two programs writing to the socket are kept apart.
//
// A datagram holds one or more lines: each is handed to its stream's consumer in one OnBytes call
// that ends in a line terminator (a '\n' is added when it has none), so the last line of one
// datagram never joins the first of the next. A datagram larger than the receive buffer
// (kMaxDatagramBytes; UDP cannot carry more than 65,507 bytes anyway) is cut there by the
// kernel, and the cut is logged.
//
// Bounds: at most max_peers streams at once; a new peer beyond that ends the stream of the peer
// heard from least recently (its consumer gets OnEnd). A peer silent for idle_timeout has its
// stream ended; one silent for quiet_after gets OnQuiet once. One turn of the loop reads at most
// read_budget bytes, then lets everything else that is ready run, so a flood of datagrams cannot
// starve the HTTP server or other sources; what the kernel's receive buffer cannot hold in the
// meantime is dropped by the kernel, as UDP does.
//
// A Unix socket file is handled by UnixSocketFile (stale one removed at Open, mode set, removed
// at Stop). Runs on the caller's io_context (one thread, no locks); consumers are called on it
// and must not throw. Open fails (false and the reason) only at load time; afterwards nothing
// throws. The io_context must outlive the listener.
#ifndef FAULTLINE_SOURCE_DATAGRAM_LISTENER_H_
#define FAULTLINE_SOURCE_DATAGRAM_LISTENER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/core/asio.h"
#include "agent/core/result.h"
#include "agent/source/socket_peer.h"
#include "agent/source/source_status.h"

namespace faultline {

struct DatagramListenerOptions {
  // A Unix datagram socket at `path` (mode: its permission bits), else UDP on host:port (port 0
  // picks a free one; see DatagramListener::port()).
  bool unix_socket = false;
  std::string host;
  uint16_t port = 0;
  std::string path;
  uint32_t mode = 0660;

  std::size_t max_peers = 256;  // REQUIRES: >= 1
  std::chrono::milliseconds idle_timeout{std::chrono::hours(1)};
  std::chrono::milliseconds quiet_after{2000};
  std::size_t read_budget = 256 * 1024;
};

class DatagramListener {
 public:
  // A Unix datagram can be as large as the sender's socket buffer allows (about 208 KiB by
  // default); this covers it. A UDP datagram is at most 65,507 bytes.
  static constexpr std::size_t kMaxDatagramBytes = 256 * 1024;

  DatagramListener(asio::io_context& io, DatagramListenerOptions options,
                   PeerConsumerFactory factory);
  ~DatagramListener();  // Stop()s
  DatagramListener(const DatagramListener&) = delete;
  DatagramListener& operator=(const DatagramListener&) = delete;

  // Binds. Load time; an error with the reason (address in use, a live socket file).
  Result<void> Open();
  void Start();  // REQUIRES: Open succeeded
  // Ends every peer's stream (OnEnd), closes the socket, removes the socket file. Idempotent.
  void Stop();

  uint16_t port() const;  // UDP: the port bound; 0 otherwise
  std::size_t peers() const;
  uint64_t datagrams() const;
  // The live peer streams, by name: what each has sent so far (the status page).
  std::vector<SourceStreamStatus> Streams() const;

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_DATAGRAM_LISTENER_H_
