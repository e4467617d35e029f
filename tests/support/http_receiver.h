// TestReceiver: a real HTTP server on 127.0.0.1 that tests point the agent's receivers at. It
// records every request (method, target, headers, body, arrival time) and answers from a script:
// a queue of responses, then a default. A scripted response can be a status with a body and
// headers (200, 429 with Retry-After, 500, 404 `no_service`), or `hang`: the request is recorded
// and never answered, so the sender's timeout is what ends it.
//
// One thread polls the listening socket and every connection (keep-alive, several requests per
// connection). Stop() or the destructor ends it. Thread-safe: tests read the records while the
// server runs.
#ifndef FAULTLINE_TESTS_SUPPORT_HTTP_RECEIVER_H_
#define FAULTLINE_TESTS_SUPPORT_HTTP_RECEIVER_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/wait.h"

namespace faultline::testing {

struct ReceivedRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::system_clock::time_point at;

  // The first header `name` (case-insensitive), or empty.
  std::string header(const std::string& name) const;
};

struct ScriptedResponse {
  int status = 200;
  std::string body = "ok";
  std::vector<std::pair<std::string, std::string>> headers = {};
  bool hang = false;

  static ScriptedResponse Hang() {
    ScriptedResponse r;
    r.hang = true;
    return r;
  }
};

class TestReceiver {
 public:
  // Listens on 127.0.0.1:`port` (0: any free port).
  explicit TestReceiver(uint16_t port = 0);
  ~TestReceiver();
  TestReceiver(const TestReceiver&) = delete;
  TestReceiver& operator=(const TestReceiver&) = delete;

  uint16_t port() const { return port_; }
  std::string url(const std::string& path = "/hook") const;

  // Responses for the next requests, in order; then `fallback`.
  void Script(std::vector<ScriptedResponse> responses);
  void SetDefault(ScriptedResponse fallback);

  std::vector<ReceivedRequest> requests() const;
  std::size_t count() const;
  // Waits until at least `n` requests arrived; false on timeout.
  bool WaitFor(std::size_t n, std::chrono::milliseconds timeout = kWaitDeadline) const;

  void Stop();

 private:
  void Run();

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t port_ = 0;
  mutable std::mutex mutex_;
  std::deque<ScriptedResponse> script_;
  ScriptedResponse fallback_;
  std::vector<ReceivedRequest> requests_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace faultline::testing

#endif  // FAULTLINE_TESTS_SUPPORT_HTTP_RECEIVER_H_
