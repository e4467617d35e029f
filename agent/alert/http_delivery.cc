#include "agent/alert/http_delivery.h"

#include <curl/curl.h>

#include <map>

namespace faultline {
namespace {

// curl_global_init is not thread-safe; once per process, before the first handle.
void GlobalInit() {
  static const bool initialised = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  (void)initialised;
}

struct Transfer {
  uint64_t ticket = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;  // the request body, alive for the transfer
  DeliveryOutcome outcome;
  char error[CURL_ERROR_SIZE] = {};
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  const size_t room = HttpDelivery::kMaxResponseBytes - std::min(HttpDelivery::kMaxResponseBytes,
                                                                 t->outcome.body.size());
  t->outcome.body.append(data, std::min(bytes, room));
  return bytes;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view line(data, size * n);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    bool match = true;
    for (size_t i = 0; i < kName.size() && match; ++i) {
      char c = line[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      match = c == kName[i];
    }
    if (match) {
      std::string_view value = line.substr(kName.size());
      while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
        value.remove_suffix(1);
      }
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      t->outcome.retry_after = std::string(value);
    }
  }
  return size * n;
}

DeliveryOutcome::Transport Classify(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return DeliveryOutcome::Transport::kCompleted;
    case CURLE_OPERATION_TIMEDOUT:
      return DeliveryOutcome::Transport::kTimeout;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return DeliveryOutcome::Transport::kConnectFailed;
    default:
      return DeliveryOutcome::Transport::kFailed;
  }
}

}  // namespace

struct HttpDelivery::Shared {
  std::mutex mutex;
  std::deque<Request> pending;
  bool stop = false;
  CURLM* multi = nullptr;
};

HttpDelivery::HttpDelivery(asio::io_context& io, Done done)
    : io_(io), done_(std::move(done)), shared_(std::make_shared<Shared>()) {
  GlobalInit();
  shared_->multi = curl_multi_init();
  thread_ = std::thread([this] { Run(); });
}

HttpDelivery::~HttpDelivery() { Stop(); }

void HttpDelivery::Send(Request request) {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->pending.push_back(std::move(request));
  }
  curl_multi_wakeup(shared_->multi);
}

void HttpDelivery::Stop() {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (shared_->stop) return;
    shared_->stop = true;
  }
  curl_multi_wakeup(shared_->multi);
  if (thread_.joinable()) thread_.join();
  curl_multi_cleanup(shared_->multi);
  shared_->multi = nullptr;
}

void HttpDelivery::Run() {
  CURLM* multi = shared_->multi;
  std::map<CURL*, std::unique_ptr<Transfer>> running;
  for (;;) {
    std::deque<Request> incoming;
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      if (shared_->stop) break;
      incoming.swap(shared_->pending);
    }
    for (Request& r : incoming) {
      auto t = std::make_unique<Transfer>();
      t->ticket = r.ticket;
      t->body = std::move(r.http.body);
      t->easy = curl_easy_init();
      CURL* easy = t->easy;
      for (const std::string& h : r.http.headers) t->headers = curl_slist_append(t->headers, h.c_str());
      // An empty Expect: keeps curl from waiting a second for "100 Continue" on larger bodies.
      t->headers = curl_slist_append(t->headers, "Expect:");
      curl_easy_setopt(easy, CURLOPT_URL, r.http.url.c_str());
      curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
      curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t->headers);
      curl_easy_setopt(easy, CURLOPT_POST, 1L);
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, t->body.data());
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
      curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
      curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout_ms));
      curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout_ms));
      curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &OnBody);
      curl_easy_setopt(easy, CURLOPT_WRITEDATA, t.get());
      curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &OnHeader);
      curl_easy_setopt(easy, CURLOPT_HEADERDATA, t.get());
      curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->error);
      curl_multi_add_handle(multi, easy);
      running.emplace(easy, std::move(t));
    }
    int still = 0;
    curl_multi_perform(multi, &still);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* easy = msg->easy_handle;
      const auto it = running.find(easy);
      if (it == running.end()) continue;
      std::unique_ptr<Transfer> t = std::move(it->second);
      running.erase(it);
      t->outcome.transport = Classify(msg->data.result);
      if (msg->data.result == CURLE_OK) {
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        t->outcome.status = status;
      } else {
        t->outcome.transport_error =
            t->error[0] != '\0' ? std::string(t->error) : curl_easy_strerror(msg->data.result);
      }
      curl_multi_remove_handle(multi, easy);
      curl_easy_cleanup(easy);
      curl_slist_free_all(t->headers);
      asio::post(io_, [done = done_, ticket = t->ticket, outcome = std::move(t->outcome)]() mutable {
        done(ticket, std::move(outcome));
      });
    }
    curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
  }
  for (auto& [easy, t] : running) {
    curl_multi_remove_handle(multi, easy);
    curl_easy_cleanup(easy);
    curl_slist_free_all(t->headers);
  }
}

}  // namespace faultline
