#include "agent/source/descriptor_reader.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace faultline {
namespace {

// Whether epoll takes `fd`. Asio's reactor accepts a descriptor epoll refuses (EPERM) and fails
// only when an operation on it would wait, so this is asked of epoll directly.
bool Pollable(int fd) {
  const int epoll = epoll_create1(EPOLL_CLOEXEC);
  if (epoll < 0) return false;
  epoll_event event{};
  event.events = EPOLLIN;
  const bool pollable = epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0;
  close(epoll);
  return pollable;
}

}  // namespace

DescriptorReader::DescriptorReader(asio::io_context& io, int fd, Options options,
                                   BytesCallback on_bytes, EndCallback on_end)
    : io_(io),
      options_(options),
      on_bytes_(std::move(on_bytes)),
      on_end_(std::move(on_end)),
      fd_(fd),
      descriptor_(io) {}

DescriptorReader::~DescriptorReader() { Close(); }

void DescriptorReader::Start() {
  buffer_.resize(options_.buffer_bytes);
  original_flags_ = fcntl(fd_, F_GETFL);
  boost::system::error_code ec;
  pollable_ = Pollable(fd_);
  if (pollable_) descriptor_.assign(fd_, ec);
  pollable_ = pollable_ && !ec;
  if (pollable_ && original_flags_ >= 0 && (original_flags_ & O_NONBLOCK) == 0) {
    fcntl(fd_, F_SETFL, original_flags_ | O_NONBLOCK);
  }
  if (pollable_ && options_.wait_first) {
    Wait();
    return;
  }
  asio::post(io_, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (!alive.expired() && !closed_) ReadAvailable();
  });
}

void DescriptorReader::Wait() {
  descriptor_.async_wait(
      asio::posix::stream_descriptor::wait_read,
      [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
        if (alive.expired() || closed_ || ec) return;
        ReadAvailable();
      });
}

void DescriptorReader::ReadAvailable() {
  const std::weak_ptr<bool> alive = alive_;
  const BytesCallback on_bytes = on_bytes_;  // a callback that destroys the reader runs on safely
  size_t taken = 0;
  while (taken < options_.read_budget) {
    const ssize_t n = read(fd_, buffer_.data(), buffer_.size());
    if (n > 0) {
      taken += static_cast<size_t>(n);
      on_bytes(std::string_view(buffer_.data(), static_cast<size_t>(n)));
      if (alive.expired() || closed_) return;  // the callback closed or destroyed the reader
      continue;
    }
    if (n == 0) {
      End("");
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      Wait();
      return;
    }
    // A pty master reads EIO once no process holds its other side: its end of file.
    if (errno == EIO && isatty(fd_) == 1) {
      End("");
      return;
    }
    End(std::strerror(errno));
    return;
  }
  // Budget spent with more to read: let the loop run other work, then go on without a wait
  // (the edge that announced these bytes has been consumed).
  asio::post(io_, [this, alive] {
    if (!alive.expired() && !closed_) ReadAvailable();
  });
}

// The descriptor is closed after the callback, so that a caller reopening the same pipe from it
// (fifo_reader.h) opens the new descriptor while the old one still holds the pipe.
void DescriptorReader::ReadNow() {
  if (closed_ || !pollable_) return;
  boost::system::error_code ignored;
  descriptor_.cancel(ignored);  // the pending wait; ReadAvailable starts the next one
  ReadAvailable();
}

void DescriptorReader::End(const std::string& error) {
  closed_ = true;
  const std::weak_ptr<bool> alive = alive_;
  const EndCallback on_end = on_end_;
  on_end(error);
  if (!alive.expired()) Release();
}

void DescriptorReader::Close() {
  closed_ = true;
  Release();
}

void DescriptorReader::Release() {
  if (fd_ < 0) return;
  if (descriptor_.is_open()) descriptor_.release();  // cancels the wait; fd_ is closed here
  if (original_flags_ >= 0) fcntl(fd_, F_SETFL, original_flags_);
  close(fd_);
  fd_ = -1;
}

}  // namespace faultline
