// StdinReader: the process's standard input as one stream, which ends when stdin closes.
//
// Whatever stdin is: a pipe (`pip install x 2>&1 | faultline run -c ...`) or a terminal is waited
// on with epoll; a regular file (`faultline run -c ... < build.log`) or /dev/null cannot be, and is
// read as a file to its end (descriptor_reader.h); a stdin that was closed when the process
// started reads as empty (main() puts /dev/null on a closed descriptor 0, 1 or 2, so that no file
// the agent opens later becomes "stdin"). The stream then ends (OnEnd: the partial last line
// becomes a line, pending context settles) and `on_end` says so.
//
// Reads a duplicate of descriptor 0, so the process's stdin stays open (and its O_NONBLOCK
// flag, which a shell shares, is restored at the end). Runs on the io_context's one thread.
// Never throws.
#ifndef FAULTLINE_SOURCE_STDIN_READER_H_
#define FAULTLINE_SOURCE_STDIN_READER_H_

#include <chrono>
#include <functional>
#include <memory>

#include "agent/core/asio.h"
#include "agent/source/descriptor_reader.h"
#include "agent/source/quiet_timer.h"
#include "agent/source/stream_consumer.h"

namespace faultline {

class StdinReader {
 public:
  StdinReader(asio::io_context& io, std::chrono::milliseconds quiet_after,
              StreamConsumerFactory consumers, std::function<void()> on_end);
  ~StdinReader();
  StdinReader(const StdinReader&) = delete;
  StdinReader& operator=(const StdinReader&) = delete;

  void Start();
  // Ends the stream now if it has not ended. `on_end` is not called for this.
  void Stop();

 private:
  void End();

  asio::io_context& io_;
  const StreamConsumerFactory consumers_;
  const std::function<void()> on_end_;
  std::unique_ptr<StreamConsumer> consumer_;
  std::unique_ptr<DescriptorReader> reader_;
  QuietTimer quiet_;
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_STDIN_READER_H_
