// FifoReader: follows a named pipe (FIFO) as one stream while writers come and go.
//
// The path is created with mkfifo (mode 0600, the agent's owner reads and writes) when nothing is
// there: with no pipe at the path, a writer's `cmd > path` would create a regular file instead and
// its lines would never reach the agent. rsyslog and mtail need the pipe made before they start;
// creating it removes that ordering. A path that exists and is not a FIFO is refused (Start fails
// with the reason), never replaced. A writer that needs other permissions creates the pipe itself
// before the agent starts; it is then used as it is.
//
// Writers closing and reopening: the pipe is opened O_RDONLY|O_NONBLOCK (the open never waits
// for a writer). When every writer has closed, read() says end of file; the writer's last line is
// ended then (a newline is handed to the consumer when its bytes stopped mid-line, so
// faultline_bytes_total counts one byte per such writer that the writer did not send), and the
// pipe is opened again before the old descriptor is closed. So there is never a moment without a
// reader: a writer's open never blocks (nor fails with ENXIO under O_NONBLOCK) while the agent
// runs, and nothing written between two writers is lost, since the pipe's buffer lives as long
// as one descriptor does. Why a new descriptor: Linux raises HUP on a reading descriptor once a
// writer it has seen is gone, and keeps it raised; Asio re-arms its epoll registration at every
// wait, so the old descriptor would wake the loop at once, forever. A fresh one has seen no writer
// and stays silent until one writes (and is only read once epoll says so: DescriptorReader's
// wait_first, as read() on it returns 0 at once).
// The alternatives: keeping the pipe open O_RDWR (syslog-ng's pipe()) never sees a writer leave,
// so a last line without a newline waits for the next writer and is glued to its first line;
// reopening only after closing (mtail, at its next poll) leaves moments with no reader.
// One case epoll does not report: a writer that opened the pipe between an end of file and the
// reopen (or before the agent started) leaves without a HUP on the new descriptor. For it, a
// stream quiet while mid-line reads the pipe once (a 0 then means the writer is gone), so its last
// line ends within context_idle_flush_ms; its complete lines are read as they come either way.
// A pipe removed or replaced at the path while the agent runs is followed at the next reopen.
//
// The stream itself spans writers: one consumer from Start to Stop, so line numbers and context
// windows (a rule that waits for a later line) carry over from one writer to the next, as they do
// for a shell script that runs `cmd >> pipe` once per step.
//
// Runs on the io_context's one thread; the consumer is called on it. Stop() ends the stream
// (OnEnd). Never throws; a failed reopen is logged and ends the stream.
#ifndef FAULTLINE_SOURCE_FIFO_READER_H_
#define FAULTLINE_SOURCE_FIFO_READER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "agent/core/asio.h"
#include "agent/core/result.h"
#include "agent/source/descriptor_reader.h"
#include "agent/source/quiet_timer.h"
#include "agent/source/stream_consumer.h"

namespace faultline {

class FifoReader {
 public:
  FifoReader(asio::io_context& io, std::string path, std::chrono::milliseconds quiet_after,
             StreamConsumerFactory consumers);
  ~FifoReader();
  FifoReader(const FifoReader&) = delete;
  FifoReader& operator=(const FifoReader&) = delete;

  // Creates the pipe if the path is free and opens it; an error when the path is not a pipe or
  // cannot be created or opened.
  Result<void> Start();
  // Ends the stream and closes the pipe. Idempotent.
  void Stop();

  // Times every writer had closed, each followed by a reopen (for tests and logs).
  uint64_t writer_ends() const { return writer_ends_; }
  bool created() const { return created_; }

 private:
  // Opens the path (creating the pipe when missing): its descriptor, or why it cannot.
  Result<int> Open();
  // Reads `fd`, replacing (and so closing) the descriptor read so far.
  void Read(int fd);
  void OnWritersGone(const std::string& error);

  asio::io_context& io_;
  const std::string path_;
  const StreamConsumerFactory consumers_;
  std::unique_ptr<StreamConsumer> consumer_;
  std::unique_ptr<DescriptorReader> reader_;
  QuietTimer quiet_;
  bool mid_line_ = false;  // the last byte handed over was not a line end
  bool created_ = false;
  bool stopped_ = false;
  uint64_t writer_ends_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_FIFO_READER_H_
