// HttpDelivery: sends notification requests with libcurl on a thread of its own and hands each
// result back to the event loop (docs/design.md section 1: blocking work off the loop, results back
// with post).
//
// One curl multi handle drives every transfer at once, so a receiver that hangs holds only its
// own transfer (bounded by its connect and total timeouts) and never delays another receiver or
// ingestion. TLS is verified (libcurl's defaults: peer and host), proxies come from the
// environment as libcurl reads them (http_proxy, https_proxy, no_proxy), redirects are not
// followed (a 3xx is a failure, per the Standard Webhooks guidance), only http and https are
// allowed, and at most kMaxResponseBytes of a response body are kept.
//
// Threading: Send and Stop on the event loop (Send is thread-safe anyway); `done` runs on the
// io_context given to the constructor, which must outlive this object. The destructor stops the
// thread; results of transfers still running are dropped (the outbox retries them after a
// restart, since they were never marked delivered). Nothing throws after construction.
#ifndef FAULTLINE_ALERT_HTTP_DELIVERY_H_
#define FAULTLINE_ALERT_HTTP_DELIVERY_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/alert/receiver.h"
#include "agent/alert/retry_policy.h"
#include "agent/core/asio.h"

namespace faultline {

class HttpDelivery {
 public:
  static constexpr std::size_t kMaxResponseBytes = 64 * 1024;

  struct Request {
    uint64_t ticket = 0;
    PreparedRequest http;
    int connect_timeout_ms = 5000;
    int timeout_ms = 15000;
  };
  using Done = std::function<void(uint64_t ticket, DeliveryOutcome outcome)>;

  HttpDelivery(asio::io_context& io, Done done);
  ~HttpDelivery();
  HttpDelivery(const HttpDelivery&) = delete;
  HttpDelivery& operator=(const HttpDelivery&) = delete;

  void Send(Request request);
  void Stop();

 private:
  struct Shared;
  void Run();

  asio::io_context& io_;
  Done done_;
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace faultline

#endif  // FAULTLINE_ALERT_HTTP_DELIVERY_H_
