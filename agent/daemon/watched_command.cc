#include "agent/daemon/watched_command.h"

#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>

namespace faultline {
namespace {

// How often the drain after the command's exit looks whether its output went quiet.
constexpr std::chrono::milliseconds kDrainTick{100};

// Writes all of `bytes` to `fd`, waiting while it is full; false when it takes no more (EPIPE:
// the reader of our output is gone).
bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd wait{fd, POLLOUT, 0};  // a non-blocking stdout someone else set up
      poll(&wait, 1, -1);
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

WatchedCommand::WatchedCommand(asio::io_context& io, Options options,
                               StreamConsumerFactory consumers, std::function<void()> ended)
    : io_(io),
      options_(std::move(options)),
      consumers_(std::move(consumers)),
      ended_(std::move(ended)),
      signals_(io, SIGCHLD),
      quiet_(io, options_.quiet_after,
             [this] {
               if (consumer_) consumer_->OnQuiet();
             }),
      drain_timer_(io) {
  for (int signal_number : options_.forward_signals) signals_.add(signal_number);
}

WatchedCommand::~WatchedCommand() {
  boost::system::error_code ignored;
  signals_.cancel(ignored);
}

void WatchedCommand::Start() {
  WaitForSignal();
  if (Result<void> spawned = child_.Spawn(options_.child); !spawned.ok()) {
    error_ = JoinErrors(spawned.errors());
    exit_status_ = child_.spawn_exit_status();
    exited_ = true;
    finished_ = true;
    boost::system::error_code ignored;
    signals_.cancel(ignored);
    asio::post(io_, [this] { ended_(); });
    return;
  }
  spdlog::debug("watching pid {}: {}", child_.pid(), options_.name);
  consumer_ = consumers_(options_.name);
  merger_ = std::make_unique<LineMerger>(2, consumer_.get(), options_.max_line_bytes);
  StartOutput(0, child_.stdout_fd(), STDOUT_FILENO);
  if (child_.stderr_fd() >= 0) StartOutput(1, child_.stderr_fd(), STDERR_FILENO);
  // The command may have exited before SIGCHLD was being waited for.
  OnChildChanged();
}

void WatchedCommand::StartOutput(size_t index, int fd, int to_fd) {
  Output& output = outputs_[index];
  output.to_fd = to_fd;
  output.open = true;
  output.reader = std::make_unique<DescriptorReader>(
      io_, fd, DescriptorReader::Options{},
      [this, index](std::string_view bytes) { OnBytes(index, bytes); },
      [this, index](const std::string& error) {
        if (!error.empty()) spdlog::warn("reading the command's output: {}", error);
        OnOutputEnd(index);
      });
  output.reader->Start();
}

void WatchedCommand::OnBytes(size_t index, std::string_view bytes) {
  Output& output = outputs_[index];
  last_bytes_ = std::chrono::steady_clock::now();
  quiet_.Touch();
  const bool written = WriteAll(output.to_fd, bytes);
  if (written) mid_line_ = bytes.back() != '\n';
  merger_->Feed(index, bytes);
  if (!written) {
    // Nobody reads our copy any more: close the command's, so its next write fails as it would
    // have without the watcher in between (SIGPIPE).
    spdlog::debug("output {} closed by its reader; closing the command's", output.to_fd);
    output.reader->Close();
    OnOutputEnd(index);
  }
}

void WatchedCommand::OnOutputEnd(size_t index) {
  Output& output = outputs_[index];
  if (!output.open) return;
  output.open = false;
  merger_->End(index);
  MaybeEnd();
}

void WatchedCommand::WaitForSignal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal_number) {
    if (ec) return;
    if (signal_number == SIGCHLD) {
      OnChildChanged();
    } else if (signal_number == SIGINT && child_.shares_group()) {
      spdlog::debug("SIGINT: the command, in our process group, got it from the terminal too");
    } else if (child_.Signal(signal_number)) {
      spdlog::debug("forwarded signal {} to the command", signal_number);
    }
    if (!finished_) WaitForSignal();
  });
}

void WatchedCommand::OnChildChanged() {
  if (exited_) return;
  bool stopped = false;
  if (child_.Reap(&exit_status_, &stopped)) {
    exited_ = true;
    exited_at_ = std::chrono::steady_clock::now();
    StartDrainTimer();
    MaybeEnd();
    return;
  }
  if (stopped && child_.foreground()) {
    // Ctrl-Z reached the command: stop with it so the shell takes the terminal, and when the
    // shell continues us (fg), give the terminal back and continue the command.
    child_.TakeTerminal();
    raise(SIGSTOP);
    child_.GiveTerminal();
    child_.Signal(SIGCONT);
  }
}

void WatchedCommand::StartDrainTimer() {
  if (!outputs_[0].open && !outputs_[1].open) return;
  drain_timer_.expires_after(kDrainTick);
  drain_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || finished_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_bytes_ < kDrainQuiet && now - exited_at_ < kDrainMax) {
      StartDrainTimer();
      return;
    }
    spdlog::debug(
        "the command has exited; its output, still held open by a process it left "
        "running, is no longer read");
    for (size_t i = 0; i < 2; ++i) {
      if (!outputs_[i].open) continue;
      outputs_[i].reader->Close();
      OnOutputEnd(i);
    }
  });
}

void WatchedCommand::MaybeEnd() {
  if (finished_ || !exited_ || outputs_[0].open || outputs_[1].open) return;
  finished_ = true;
  quiet_.Cancel();
  drain_timer_.cancel();
  boost::system::error_code ignored;
  signals_.cancel(ignored);  // a pending wait would keep the loop running
  consumer_->OnEnd();
  consumer_.reset();
  ended_();
}

void WatchedCommand::Stop() {
  for (size_t i = 0; i < 2; ++i) {
    if (!outputs_[i].open) continue;
    outputs_[i].reader->Close();
    outputs_[i].open = false;
    merger_->End(i);
  }
  quiet_.Cancel();
  drain_timer_.cancel();
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  if (consumer_) {
    consumer_->OnEnd();
    consumer_.reset();
  }
  finished_ = true;
}

}  // namespace faultline
