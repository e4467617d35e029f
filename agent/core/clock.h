// WallClock: the agent's one clock for "now" as wall time, Unix time: what findings, unrecognised
// templates, signatures and alerts record, show, persist and compare with the times in log lines.
// A std::function so that a test can give a fake one; SystemNow is the default everywhere.
// UnixMs and FromUnixMs convert to and from the Unix milliseconds the alert side stores.
//
// Elapsed time (timeouts, idle sweeps, backoff waits) is not wall time: it is measured with
// std::chrono::steady_clock and asio's steady timers, which a step of the wall clock must not
// disturb.
//
// Plain functions and a type; thread-safety is the clock function's (SystemNow is thread-safe).
// Nothing fails.
#ifndef FAULTLINE_CORE_CLOCK_H_
#define FAULTLINE_CORE_CLOCK_H_

#include <chrono>
#include <cstdint>
#include <functional>

namespace faultline {

using WallTime = std::chrono::system_clock::time_point;
using WallClock = std::function<WallTime()>;

inline WallTime SystemNow() { return std::chrono::system_clock::now(); }

// Whole milliseconds since the Unix epoch; a finer remainder is dropped (toward zero).
constexpr int64_t UnixMs(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
constexpr WallTime FromUnixMs(int64_t unix_ms) {
  return WallTime(std::chrono::milliseconds(unix_ms));
}

}  // namespace faultline

#endif  // FAULTLINE_CORE_CLOCK_H_
