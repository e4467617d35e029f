// The one way tests wait: until a condition holds, bounded by one default deadline, never a fixed
// sleep. A deadline is only how long a broken build takes to fail; a passing test returns as soon
// as its condition holds, so the deadline is generous and the same everywhere.
//
//   RunUntil(io, done)   runs an event loop (asio::io_context, or anything with restart() and
//                        run_for()) on this thread in short slices until `done` holds.
//   Eventually(done)     polls `done` with a short backoff while other threads or processes (the
//                        agent under test, a receiver) make progress.
//
// Both return false when the deadline passed first; wrap them in ASSERT_TRUE.
#ifndef FAULTLINE_TESTS_SUPPORT_WAIT_H_
#define FAULTLINE_TESTS_SUPPORT_WAIT_H_

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

namespace faultline::testing {

// How long RunUntil and Eventually wait unless told otherwise.
inline constexpr std::chrono::milliseconds kWaitDeadline = std::chrono::seconds(20);

// Runs `loop` until `done` holds or `deadline` passes; true when it holds. A template so that this
// header needs no Asio (only the tests that run a loop include it).
template <typename Loop>
bool RunUntil(Loop& loop, const std::function<bool()>& done,
              std::chrono::milliseconds deadline = kWaitDeadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    loop.restart();  // run_for stops the loop whenever it runs out of work
    loop.run_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Calls `done` until it returns true or `deadline` passes; true when it held.
inline bool Eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds deadline = kWaitDeadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  auto backoff = std::chrono::milliseconds(5);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
  return true;
}

}  // namespace faultline::testing

#endif  // FAULTLINE_TESTS_SUPPORT_WAIT_H_
