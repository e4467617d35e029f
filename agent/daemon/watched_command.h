// WatchedCommand: the source behind `faultline watch -- CMD ARGS...`. It runs the command
// (child_process.h has how: pipes or a pty, its process group, the terminal), passes its stdout
// and stderr through to the watcher's own stdout and stderr byte for byte as they arrive, and
// hands both, merged by whole line (line_merger.h), to one stream consumer, so the command's
// output is matched live like any other stream.
//
// - Signals: SIGINT, SIGTERM and SIGHUP sent to the watcher are forwarded to the command's process
//   group (each time, so a second Ctrl-C does what it does to the command); the watcher itself
//   waits for the command to end. A signal the watcher's parent ignored stays ignored. SIGINT is
//   not forwarded to a command that shares the watcher's process group (child_process.h): the
//   terminal's Ctrl-C reached it already.
// - Stopped (Ctrl-Z while the command runs in the foreground of a terminal): the watcher takes the
//   terminal back and stops too, so the shell gets its prompt; `fg` continues both.
// - End: the stream ends when the command has exited and its output has closed. A process the
//   command left running in the background (a build daemon) may hold the output open: after the
//   command exits, output is still read until it closes, or has been quiet for kDrainQuiet, or
//   for at most kDrainMax; then the stream ends anyway.
// - The watcher's own output gone (`faultline watch -- make | head`, EPIPE): that stream of the
//   command is closed too, so the command sees what it would have seen without the watcher.
//
// Runs on the io_context's one thread; writes to stdout and stderr block when they are full,
// which holds the command back exactly as a slow terminal would. Never throws.
#ifndef FAULTLINE_DAEMON_WATCHED_COMMAND_H_
#define FAULTLINE_DAEMON_WATCHED_COMMAND_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "agent/daemon/sources.h"
#include "agent/core/asio.h"
#include "agent/source/child_process.h"
#include "agent/source/descriptor_reader.h"
#include "agent/source/line_merger.h"
#include "agent/source/quiet_timer.h"

namespace faultline {

class WatchedCommand : public Source {
 public:
  // After the command exits, output that stays open is read until quiet this long...
  static constexpr std::chrono::milliseconds kDrainQuiet{300};
  // ...or at most this long.
  static constexpr std::chrono::milliseconds kDrainMax{3000};

  struct Options {
    ChildSpec child;
    std::string name;  // the stream's name: the command line
    std::chrono::milliseconds quiet_after{2000};
    size_t max_line_bytes = 1 << 20;
    // Signals to forward; those the watcher's parent ignored are left out by the caller.
    std::vector<int> forward_signals;
  };

  // Catches SIGCHLD and the forwarded signals from here on.
  WatchedCommand(asio::io_context& io, Options options, StreamConsumerFactory consumers,
                 std::function<void()> ended);
  ~WatchedCommand() override;

  // Starts the command. When it cannot start, error() says why, exit_status() is the shell's
  // status for it, and the source ends at once.
  void Start() override;
  void Stop() override;

  // The command's exit status as a shell shows it (code, or 128 + signal); valid once ended.
  int exit_status() const { return exit_status_; }
  const std::string& error() const { return error_; }
  // Whether the last byte passed through left the terminal mid-line.
  bool output_mid_line() const { return mid_line_; }

 private:
  // One captured output of the command: its reader and where its bytes go.
  struct Output {
    std::unique_ptr<DescriptorReader> reader;
    int to_fd = -1;  // our stdout or stderr
    bool open = false;
  };

  void StartOutput(size_t index, int fd, int to_fd);
  void OnBytes(size_t index, std::string_view bytes);
  void OnOutputEnd(size_t index);
  void WaitForSignal();
  void OnChildChanged();
  void StartDrainTimer();
  // Ends the stream once the command has exited and its outputs have closed.
  void MaybeEnd();

  asio::io_context& io_;
  Options options_;
  const StreamConsumerFactory consumers_;
  const std::function<void()> ended_;
  asio::signal_set signals_;
  ChildProcess child_;
  std::unique_ptr<StreamConsumer> consumer_;
  std::unique_ptr<LineMerger> merger_;
  QuietTimer quiet_;
  asio::steady_timer drain_timer_;
  Output outputs_[2];
  std::chrono::steady_clock::time_point exited_at_;
  std::chrono::steady_clock::time_point last_bytes_;
  std::string error_;
  int exit_status_ = 0;
  bool exited_ = false;
  bool finished_ = false;
  bool mid_line_ = false;
};

}  // namespace faultline

#endif  // FAULTLINE_DAEMON_WATCHED_COMMAND_H_
