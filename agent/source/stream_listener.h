// StreamListener: accepts connections on a TCP address or a Unix stream socket and hands each
// connection's bytes, in order, to a consumer of its own: one stream per connection, named by
// its peer (socket_peer.h). The consumer frames them like a file (a line cut at max_line_bytes,
// `\r`, ANSI) and gets OnEnd when the connection ends, so a last line without a newline counts.
//
// What one sender can do to the others, and what is done about it:
// - Slow or stuck senders cost nothing: nothing ever blocks on a socket. A connection waits for
//   readability; then it reads until the socket is empty or it has taken read_budget bytes
//   this turn, and then lets every other ready connection (and the HTTP server) have a turn
//   before its next one. A peer flooding at memory speed gets its share of the loop, no more.
// - A line of any length costs max_line_bytes at most (the consumer cuts it), garbage bytes are
//   just bytes.
// - At most max_connections are held. At the cap a newcomer takes the slot of the connection
//   that has been silent longest, if that one has been silent for evictable_after at least;
//   otherwise the newcomer is closed at once. So a dead peer (a build machine that rebooted
//   without closing its connection) or an idle one gives way to a live sender, while a burst of
//   new connections can never push out a sender that is actively logging; every newcomer
//   beyond that is closed as soon as it is accepted, so a flood never holds descriptors.
// - A connection silent for idle_timeout is closed; its stream ends. TCP keep-alive is on, so
//   the kernel also finds peers that vanished.
// - Out of descriptors, accept is retried after a short delay; the loop never spins.
// A consumer whose connection has been silent for quiet_after gets OnQuiet once, to settle hits
// waiting for context. Evictions, refusals and accept failures are logged at most once per 10 s.
//
// A Unix socket file is handled by UnixSocketFile: a stale one is removed at Open, its mode set
// after bind, and it is removed at Stop.
//
// Runs on the caller's io_context (one thread, no locks); consumers are called on it and must not
// throw. Open fails (false and the reason) only at load time; after that nothing throws and I/O
// errors only end the connection they hit. The io_context must outlive the listener.
#ifndef FAULTLINE_SOURCE_STREAM_LISTENER_H_
#define FAULTLINE_SOURCE_STREAM_LISTENER_H_

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

struct StreamListenerOptions {
  // A Unix stream socket at `path` (mode: its permission bits), else TCP on host:port (port 0
  // picks a free one; see StreamListener::port()).
  bool unix_socket = false;
  std::string host;
  uint16_t port = 0;
  std::string path;
  uint32_t mode = 0660;

  std::size_t max_connections = 256;  // REQUIRES: >= 1
  // At the cap, a connection silent this long may be closed to make room for a newcomer.
  std::chrono::milliseconds evictable_after{std::chrono::seconds(10)};
  std::chrono::milliseconds idle_timeout{std::chrono::hours(1)};
  std::chrono::milliseconds quiet_after{2000};
  // Bytes one connection may read per turn of the loop before others get theirs.
  std::size_t read_budget = 256 * 1024;
};

class StreamListener {
 public:
  StreamListener(asio::io_context& io, StreamListenerOptions options, PeerConsumerFactory factory);
  ~StreamListener();  // Stop()s
  StreamListener(const StreamListener&) = delete;
  StreamListener& operator=(const StreamListener&) = delete;

  // Binds and listens. Load time; an error with the reason (address in use, a live socket file).
  Result<void> Open();
  // Starts accepting. REQUIRES: Open succeeded.
  void Start();
  // Closes the listener and every connection (each stream gets OnEnd), removes the socket file.
  // Idempotent.
  void Stop();

  uint16_t port() const;  // TCP: the port bound; 0 before Open and for Unix sockets
  std::size_t connections() const;
  uint64_t evicted() const;  // connections closed to make room for a newcomer
  uint64_t refused() const;  // newcomers closed at the cap
  // The open connections, by name: what each has sent so far (the status page).
  std::vector<SourceStreamStatus> Streams() const;

 private:
  class Impl;
  class Connection;
  // Shared with pending completions, which may run after the listener is gone.
  std::shared_ptr<Impl> impl_;
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_STREAM_LISTENER_H_
