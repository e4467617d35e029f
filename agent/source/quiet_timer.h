// QuietTimer: calls back once when a stream has had no bytes for `quiet_after`, so its consumer
// can settle what waits for more lines (StreamConsumer::OnQuiet). Touch() on every read costs a
// clock read; the timer itself is armed at most once per quiet period, not once per read.
//
// Runs on the io_context's thread; the callback must not destroy the timer. Never throws.
#ifndef FAULTLINE_SOURCE_QUIET_TIMER_H_
#define FAULTLINE_SOURCE_QUIET_TIMER_H_

#include <chrono>
#include <functional>

#include "agent/core/asio.h"

namespace faultline {

class QuietTimer {
 public:
  QuietTimer(asio::io_context& io, std::chrono::milliseconds quiet_after,
             std::function<void()> on_quiet)
      : timer_(io), quiet_after_(quiet_after), on_quiet_(std::move(on_quiet)) {}

  // Bytes arrived: the stream is not quiet, and becomes quiet quiet_after from now.
  void Touch() {
    last_bytes_ = std::chrono::steady_clock::now();
    if (armed_) return;
    armed_ = true;
    Arm(quiet_after_);
  }
  void Cancel() {
    armed_ = false;
    timer_.cancel();
  }

 private:
  void Arm(std::chrono::steady_clock::duration after) {
    timer_.expires_after(after);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || !armed_) return;
      const auto since = std::chrono::steady_clock::now() - last_bytes_;
      if (since < quiet_after_) {  // bytes came while it ran: wait for the rest of the period
        Arm(quiet_after_ - since);
        return;
      }
      armed_ = false;
      on_quiet_();
    });
  }

  asio::steady_timer timer_;
  const std::chrono::milliseconds quiet_after_;
  const std::function<void()> on_quiet_;
  std::chrono::steady_clock::time_point last_bytes_;
  bool armed_ = false;
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_QUIET_TIMER_H_
