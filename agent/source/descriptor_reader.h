// DescriptorReader: reads one descriptor to its end on the event loop and hands its bytes, in
// order, to a callback. It is how a pipe, a named pipe, a pty, a terminal or a file redirected to
// standard input becomes a stream.
//
// Two ways to read, chosen by what the descriptor is:
// - Pollable (pipe, FIFO, pty master, terminal, socket): the descriptor is made non-blocking and
//   waited on by the loop's reactor (epoll). Each time it is ready it is read until read() says
//   EAGAIN, at most read_budget bytes per turn of the loop (then the loop runs other work and the
//   reading goes on without a new wait). Asio registers descriptors edge-triggered: a wait started
//   while bytes are already waiting would never fire, so a wait is started only after a read said
//   EAGAIN, or, with wait_first, right after the descriptor is registered (epoll reports what is
//   already there at registration).
// - Not pollable (epoll refuses regular files and some devices such as /dev/null with EPERM):
//   read without waiting, read_budget bytes per turn of the loop, to end of file. A regular file
//   redirected to stdin is therefore read as a file, never polled, and the HTTP server and other
//   sources keep running while a large one is read.
//
// The stream ends at end of file (read() returns 0), at EIO on a terminal or pty (Linux's end of
// file for a pty master whose other side is closed by every process), or at a read error, which
// the end callback is given. O_NONBLOCK is set on the open file description, which a dup shares
// with other processes (stdin, a pipe from a shell), so the flags found at Start are restored when
// the reader closes the descriptor.
//
// Owns the descriptor from construction and closes it in Close() or the destructor. Runs on the
// io_context's one thread; callbacks are called on it, never from inside Start(), and may destroy
// the reader (nothing of it is touched after a callback that did). Never throws.
#ifndef FAULTLINE_SOURCE_DESCRIPTOR_READER_H_
#define FAULTLINE_SOURCE_DESCRIPTOR_READER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "agent/core/asio.h"

namespace faultline {

class DescriptorReader {
 public:
  struct Options {
    // Do not read before the reactor says the descriptor is ready: a FIFO opened with no writer
    // reads 0 (end of file) at once, which is not the end of anything (fifo_reader.h).
    bool wait_first = false;
    // Read per turn of the loop before other work gets a turn: one huge burst cannot starve the
    // HTTP server or the other sources.
    size_t read_budget = 1 << 20;
    // One read() at most; 64 KiB is the default pipe capacity on Linux, so one read empties it.
    size_t buffer_bytes = 64 << 10;
  };
  using BytesCallback = std::function<void(std::string_view bytes)>;
  // `error` is empty at end of file, else what failed (for the log).
  using EndCallback = std::function<void(const std::string& error)>;

  DescriptorReader(asio::io_context& io, int fd, Options options, BytesCallback on_bytes,
                   EndCallback on_end);
  ~DescriptorReader();
  DescriptorReader(const DescriptorReader&) = delete;
  DescriptorReader& operator=(const DescriptorReader&) = delete;

  // Starts reading; the first callback comes from the loop, after Start returns.
  void Start();
  // Stops reading and closes the descriptor; no callback comes after. Idempotent.
  void Close();
  // Reads now what is there, without waiting for the reactor: for a FIFO, whether its writers
  // are gone, which epoll does not report for a writer that was already there when the FIFO was
  // opened (fifo_reader.h). Callbacks may come from inside this call.
  void ReadNow();

  // Whether the descriptor is waited on with epoll (false: read as a file). Known after Start.
  bool pollable() const { return pollable_; }

 private:
  void Wait();
  // Reads until EAGAIN, end of file or the read budget.
  void ReadAvailable();
  void End(const std::string& error);
  // Restores the flags and closes the descriptor, once.
  void Release();

  asio::io_context& io_;
  const Options options_;
  const BytesCallback on_bytes_;
  const EndCallback on_end_;
  int fd_;
  int original_flags_ = -1;  // fcntl(F_GETFL) at Start, restored on close
  bool pollable_ = false;
  bool closed_ = false;  // no more reads or callbacks
  asio::posix::stream_descriptor descriptor_;
  std::string buffer_;
  // Expires when the reader is destroyed, so handlers queued on the loop know not to touch it.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_DESCRIPTOR_READER_H_
