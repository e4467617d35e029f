// The HTTP server's routes, limits and connection handling through a real Beast client on
// loopback. Over 600 lines: one fixture for every behaviour of one server.
// GCC 12 with optimisation reports a false -Wmaybe-uninitialized inside Beast 1.74's *response*
// parser (a boost::optional in basic_parser<false>::do_field). Only this client side parses
// responses; the pragma comes first because the warning is attributed to Beast's header lines.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "agent/http/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/core/asio.h"

namespace faultline {
namespace {

namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Long enough for any loaded CI machine; only reached when the server fails to stop.
constexpr std::chrono::seconds kStopDeadline(10);
// How long a test waits for the server to close a connection it must close.
constexpr std::chrono::seconds kCloseDeadline(10);

using Response = http::response<http::string_body>;

// The server runs on its own loop thread, as in the agent; the test thread is a plain blocking
// Beast client with a separate io_context.
class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions options = {}, const std::string& address = "127.0.0.1") {
    server_.emplace(io_, options);
    server_->AddRoute({.path = "/metrics", .handler = [this](const HttpRequest& req) {
                         ++calls_;
                         last_method_ = std::string(HttpMethodName(req.method));
                         return HttpResponse{200, "text/plain; version=0.0.4", "up 1\n"};
                       }});
    server_->AddRoute(
        {.path = "/readyz", .handler = [](const HttpRequest&) {
           return HttpResponse{503, "text/plain", "rules not loaded\n", {{"Retry-After", "5"}}};
         }});
    // Echoes what the handler saw, one item per line.
    server_->AddRoute({.path = "/echo",
                       .methods = {HttpMethod::kGet, HttpMethod::kPost},
                       .handler = [](const HttpRequest& req) {
                         std::string out =
                             std::string(HttpMethodName(req.method)) + " " + req.path + "\n";
                         for (const auto& [k, v] : req.query_params)
                           out += "q " + k + "=" + v + "\n";
                         out += "x-probe " + std::string(req.header("x-probe")) + "\n";
                         out += "body " + req.body + "\n";
                         return HttpResponse{200, "text/plain", out};
                       }});
    server_->AddRoute(
        {.path = "/secret", .bearer_token = "s3cr3t-token", .handler = [](const HttpRequest&) {
           return HttpResponse{200, "text/plain", "the secret\n"};
         }});
    server_->AddRoute({.path = "/admin", .admin = true, .handler = [](const HttpRequest&) {
                         return HttpResponse{200, "text/plain", "admin\n"};
                       }});
    // Answers 50 ms later from a timer, as a reload answers once its worker is done.
    server_->AddRoute(
        {.path = "/later",
         .methods = {HttpMethod::kPost},
         .deferred_handler = [this](const HttpRequest& req, HttpResponder respond) {
           auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(50));
           timer->async_wait([timer, respond, body = req.body](const beast::error_code&) {
             respond(HttpResponse{202, "text/plain", "later " + body + "\n"});
             respond(HttpResponse{500, "text/plain", "a second answer is ignored\n"});
           });
         }});
    server_->AddRoute({.path = "/throws", .handler = [](const HttpRequest&) -> HttpResponse {
                         throw std::runtime_error("boom");
                       }});
    ASSERT_EQ("", JoinErrors(server_->Listen(address, 0).errors()));
    ASSERT_NE(0, server_->port());
    address_ = address;
    stopped_ = done_.get_future();
    loop_ = std::thread([this] {
      io_.run();
      done_.set_value();
    });
  }

  void TearDown() override {
    if (loop_.joinable()) {
      StopServer();
      if (stopped_.wait_for(kStopDeadline) != std::future_status::ready) io_.stop();
      loop_.join();
    }
  }

  // Stop() belongs to the loop thread; true when run() returned in time.
  bool StopServer() {
    asio::post(io_, [this] { server_->Stop(); });
    return stopped_.wait_for(kStopDeadline) == std::future_status::ready;
  }

  // A connection from `from` (any 127.x.y.z is this host's loopback on Linux), so tests can be
  // several clients.
  tcp::socket Connect(const std::string& from = "") {
    tcp::socket socket(client_io_);
    socket.open(tcp::v4());
    if (!from.empty()) socket.bind(tcp::endpoint(asio::ip::make_address(from), 0));
    socket.connect(tcp::endpoint(asio::ip::make_address(address_), server_->port()));
    return socket;
  }

  Response Send(tcp::socket& socket, http::verb method, const std::string& target,
                bool keep_alive = true) {
    http::request<http::empty_body> req(method, target, 11);
    req.set(http::field::host, "127.0.0.1");
    req.keep_alive(keep_alive);
    http::write(socket, req);
    return ReadResponse(socket, method == http::verb::head);
  }

  Response SendRaw(tcp::socket& socket, const std::string& bytes) {
    asio::write(socket, asio::buffer(bytes));
    return ReadResponse(socket);
  }

  Response ReadResponse(tcp::socket& socket, bool head = false) {
    http::response_parser<http::string_body> parser;
    // A HEAD response announces a Content-Length but carries no body.
    parser.skip(head);
    http::read(socket, buffer_, parser);
    return parser.release();
  }

  Response Get(const std::string& target) {
    tcp::socket socket = Connect();
    return Send(socket, http::verb::get, target);
  }

  // A GET with the given extra header lines ("Name: value\r\n" each), HTTP/1.1, no Host unless
  // given.
  Response GetWithHeaders(const std::string& target, const std::string& headers) {
    tcp::socket socket = Connect();
    return SendRaw(socket, "GET " + target + " HTTP/1.1\r\n" + headers + "\r\n");
  }

  // What the next read on `socket` sees once the server closed its side: EOF or a reset.
  beast::error_code ReadUntilClosed(tcp::socket& socket) {
    beast::error_code ec;
    char byte;
    while (!ec) socket.read_some(asio::buffer(&byte, 1), ec);
    return ec;
  }

  // Whether the server closes `socket` within `wait` (the client reads nothing else).
  bool ClosedWithin(tcp::socket& socket, std::chrono::milliseconds wait) {
    pollfd fd{socket.native_handle(), POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(wait.count())) <= 0) return false;
    return static_cast<bool>(ReadUntilClosed(socket));
  }

  asio::io_context io_;
  std::optional<HttpServer> server_;
  std::string address_;
  std::thread loop_;
  std::promise<void> done_;
  std::future<void> stopped_;
  std::atomic<int> calls_{0};
  std::string last_method_;  // written on the loop thread before the response is sent

  asio::io_context client_io_;
  beast::flat_buffer buffer_;
};

TEST_F(HttpServerTest, RegisteredPathGets200WithBodyAndHeaders) {
  Start();
  Response res = Get("/metrics");
  EXPECT_EQ(http::status::ok, res.result());
  EXPECT_EQ("up 1\n", res.body());
  EXPECT_EQ("text/plain; version=0.0.4", res[http::field::content_type]);
  EXPECT_EQ("5", res[http::field::content_length]);
  EXPECT_THAT(std::string(res[http::field::server]), StartsWith("faultline/"));
}

TEST_F(HttpServerTest, HandlerStatusAndHeadersArePassedThrough) {
  Start();
  Response res = Get("/readyz");
  EXPECT_EQ(http::status::service_unavailable, res.result());
  EXPECT_EQ("rules not loaded\n", res.body());
  EXPECT_EQ("5", res[http::field::retry_after]);
}

TEST_F(HttpServerTest, UnknownPathGets404) {
  Start();
  EXPECT_EQ(http::status::not_found, Get("/nope").result());
  EXPECT_EQ(http::status::not_found, Get("/metrics/").result());
  EXPECT_EQ(0, calls_.load());
}

TEST_F(HttpServerTest, HandlerSeesThePathTheDecodedQueryAndTheHeaders) {
  Start();
  Response res =
      GetWithHeaders("/echo?name%5B%5D=up&msg=a+b%21&flag&bad=%zz", "Host: x\r\nX-Probe: yes\r\n");
  EXPECT_EQ(http::status::ok, res.result());
  EXPECT_EQ("GET /echo\nq name[]=up\nq msg=a b!\nq flag=\nq bad=%zz\nx-probe yes\nbody \n",
            res.body());
}

TEST_F(HttpServerTest, QueryStringIsNotPartOfTheRoutedPath) {
  Start();
  Response res = Get("/metrics?name[]=up");
  EXPECT_EQ(http::status::ok, res.result());
  EXPECT_EQ("up 1\n", res.body());
}

TEST_F(HttpServerTest, OtherMethodsGet405WithAllowHeader) {
  Start();
  tcp::socket socket = Connect();
  for (http::verb method : {http::verb::post, http::verb::put, http::verb::delete_}) {
    Response res = Send(socket, method, "/metrics");
    EXPECT_EQ(http::status::method_not_allowed, res.result());
    EXPECT_EQ("GET, HEAD", res[http::field::allow]);
  }
  EXPECT_EQ(0, calls_.load());
  // A refused method without a body is not a broken connection: keep-alive still holds.
  EXPECT_EQ(http::status::ok, Send(socket, http::verb::get, "/metrics").result());
  EXPECT_EQ("GET, HEAD, POST", Send(socket, http::verb::put, "/echo")[http::field::allow]);
}

TEST_F(HttpServerTest, PostWithABodyToAGetRouteGets405Not413) {
  Start();
  {
    tcp::socket socket = Connect();
    Response res = SendRaw(socket,
                           "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n"
                           "payload");
    EXPECT_EQ(http::status::method_not_allowed, res.result());
    EXPECT_EQ("GET, HEAD", res[http::field::allow]);
    EXPECT_FALSE(res.keep_alive());  // the body was not read: what follows is not a request
  }
  {
    // However large the announced body: the route decides before any of it is read.
    tcp::socket socket = Connect();
    Response res =
        SendRaw(socket, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n");
    EXPECT_EQ(http::status::method_not_allowed, res.result());
  }
  EXPECT_EQ(0, calls_.load());
}

TEST_F(HttpServerTest, PostRouteReceivesItsBody) {
  Start();
  tcp::socket socket = Connect();
  Response res = SendRaw(socket,
                         "POST /echo?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n"
                         "hello world");
  EXPECT_EQ(http::status::ok, res.result());
  EXPECT_EQ("POST /echo\nq a=1\nx-probe \nbody hello world\n", res.body());
  // Chunked bodies too, on the same kept-alive connection.
  res = SendRaw(socket,
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                "5\r\nhello\r\n6\r\n there\r\n0\r\n\r\n");
  EXPECT_EQ("POST /echo\nx-probe \nbody hello there\n", res.body());
}

TEST_F(HttpServerTest, BodyOverTheLimitGets413BeforeItIsSent) {
  HttpServerOptions options;
  options.limits.max_body_bytes = 1024;
  Start(options);
  tcp::socket socket = Connect();
  // Only the header is sent: the answer comes from Content-Length alone.
  Response res = SendRaw(socket, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1025\r\n\r\n");
  EXPECT_EQ(http::status::payload_too_large, res.result());
  EXPECT_FALSE(res.keep_alive());

  tcp::socket chunked = Connect();
  res = SendRaw(chunked, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                             std::string("401\r\n") + std::string(1025, 'x') + "\r\n0\r\n\r\n");
  EXPECT_EQ(http::status::payload_too_large, res.result());

  tcp::socket fits = Connect();
  res = SendRaw(fits, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\n" +
                          std::string(1024, 'y'));
  EXPECT_EQ(http::status::ok, res.result());
}

TEST_F(HttpServerTest, GetWithABodyGets413) {
  Start();
  tcp::socket socket = Connect();
  Response res =
      SendRaw(socket, "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\npayload");
  EXPECT_EQ(http::status::payload_too_large, res.result());
  EXPECT_FALSE(res.keep_alive());
  EXPECT_EQ(0, calls_.load());
}

TEST_F(HttpServerTest, ExpectContinueGetsTheInterimResponseBeforeTheBody) {
  Start();
  tcp::socket socket = Connect();
  asio::write(socket,
              asio::buffer(std::string("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                                       "Expect: 100-continue\r\n\r\n")));
  std::string interim(HttpSession::kContinueResponse.size(), '\0');
  asio::read(socket, asio::buffer(interim));
  EXPECT_EQ(HttpSession::kContinueResponse, interim);
  Response res = SendRaw(socket, "data");
  EXPECT_EQ("POST /echo\nx-probe \nbody data\n", res.body());
}

TEST_F(HttpServerTest, BearerTokenRouteNeedsTheRightToken) {
  Start();
  Response missing = GetWithHeaders("/secret", "Host: x\r\n");
  EXPECT_EQ(http::status::unauthorized, missing.result());
  EXPECT_EQ("Bearer realm=\"faultline\"", missing[http::field::www_authenticate]);

  Response wrong = GetWithHeaders("/secret", "Host: x\r\nAuthorization: Bearer s3cr3t-tokem\r\n");
  EXPECT_EQ(http::status::unauthorized, wrong.result());
  EXPECT_THAT(std::string(wrong[http::field::www_authenticate]),
              HasSubstr("error=\"invalid_token\""));
  EXPECT_EQ(http::status::unauthorized,
            GetWithHeaders("/secret", "Authorization: Bearer s3cr3t\r\n").result());
  EXPECT_EQ(http::status::unauthorized,
            GetWithHeaders("/secret", "Authorization: Basic czNjcjN0LXRva2Vu\r\n").result());

  Response right = GetWithHeaders("/secret", "Authorization: bearer s3cr3t-token\r\n");
  EXPECT_EQ(http::status::ok, right.result());
  EXPECT_EQ("the secret\n", right.body());
}

TEST_F(HttpServerTest, AdminRouteRefusesAHostThatIsNotThisAgent) {
  Start();
  const std::string port = std::to_string(server_->port());
  // A page of evil.example whose name was rebound to 127.0.0.1 sends its own name.
  EXPECT_EQ(http::status::forbidden,
            GetWithHeaders("/admin", "Host: evil.example:" + port + "\r\n").result());
  EXPECT_EQ(http::status::forbidden, GetWithHeaders("/admin", "Host: evil.example\r\n").result());
  EXPECT_EQ(http::status::forbidden, GetWithHeaders("/admin", "").result());
  {
    tcp::socket socket = Connect();
    EXPECT_EQ(http::status::forbidden,
              SendRaw(socket, "GET /admin HTTP/1.0\r\n\r\n").result());  // no Host at all
  }
  for (const std::string& host : {"127.0.0.1:" + port, std::string("localhost"),
                                  std::string("LOCALHOST:8080"), std::string("[::1]:" + port)}) {
    EXPECT_EQ(http::status::ok, GetWithHeaders("/admin", "Host: " + host + "\r\n").result())
        << host;
  }
  // Routes without the admin flag do not look at Host.
  EXPECT_EQ(http::status::ok, GetWithHeaders("/metrics", "Host: evil.example\r\n").result());
}

TEST_F(HttpServerTest, AdminRouteTakesTheListenAddressOnlyWithItsPort) {
  // 127.0.0.2 is loopback on Linux but not one of the loopback names: it is taken as this
  // agent's own address, which needs the right port.
  Start({}, "127.0.0.2");
  const std::string port = std::to_string(server_->port());
  EXPECT_EQ(http::status::ok,
            GetWithHeaders("/admin", "Host: 127.0.0.2:" + port + "\r\n").result());
  EXPECT_EQ(
      http::status::forbidden,
      GetWithHeaders("/admin", "Host: 127.0.0.2:" + std::to_string(server_->port() + 1) + "\r\n")
          .result());
  EXPECT_EQ(http::status::forbidden, GetWithHeaders("/admin", "Host: 127.0.0.2\r\n").result());
}

TEST_F(HttpServerTest, ThrowingHandlerGets500AndTheServerLivesOn) {
  Start();
  Response res = Get("/throws");
  EXPECT_EQ(http::status::internal_server_error, res.result());
  EXPECT_THAT(res.body(), HasSubstr("boom"));
  EXPECT_EQ(http::status::ok, Get("/metrics").result());
}

TEST_F(HttpServerTest, DeferredRouteAnswersLaterAndTheConnectionGoesOn) {
  Start();
  tcp::socket socket = Connect();
  // Two pipelined requests: the second is answered only after the deferred first.
  const std::string later =
      "POST /later HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\nhi";
  asio::write(socket, asio::buffer(later + "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const Response first = ReadResponse(socket);
  EXPECT_EQ(202, first.result_int());
  EXPECT_EQ("later hi\n", first.body());
  const Response second = ReadResponse(socket);
  EXPECT_EQ(200, second.result_int());
  EXPECT_EQ("up 1\n", second.body());
}

TEST_F(HttpServerTest, ADeferredAnswerForAClosedConnectionIsDropped) {
  Start();
  {
    tcp::socket socket = Connect();
    const std::string request =
        "POST /later HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n";
    asio::write(socket, asio::buffer(request));
  }  // closed before the answer
  ASSERT_TRUE(StopServer());  // the late answer finds the connection gone; nothing crashes
}

TEST_F(HttpServerTest, HeadGetsTheHeadersOfGetWithoutABody) {
  Start();
  tcp::socket socket = Connect();
  Response res = Send(socket, http::verb::head, "/metrics");
  EXPECT_EQ(http::status::ok, res.result());
  EXPECT_EQ("5", res[http::field::content_length]);
  EXPECT_EQ("", res.body());
  EXPECT_EQ("HEAD", last_method_);
  // Had the server sent a body anyway, it would be parsed as the next response and fail here.
  EXPECT_EQ("up 1\n", Send(socket, http::verb::get, "/metrics").body());
}

TEST_F(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  Start();
  tcp::socket socket = Connect();
  EXPECT_EQ("up 1\n", Send(socket, http::verb::get, "/metrics").body());
  EXPECT_EQ("up 1\n", Send(socket, http::verb::get, "/metrics").body());
  EXPECT_EQ(2, calls_.load());
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  Start();
  tcp::socket socket = Connect();
  asio::write(socket, asio::buffer(std::string("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                                               "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"
                                               "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")));
  EXPECT_EQ(http::status::ok, ReadResponse(socket).result());
  EXPECT_EQ(http::status::service_unavailable, ReadResponse(socket).result());
  EXPECT_EQ(http::status::not_found, ReadResponse(socket).result());
}

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  Start();
  tcp::socket socket = Connect();
  Response res = Send(socket, http::verb::get, "/metrics", /*keep_alive=*/false);
  EXPECT_EQ(http::status::ok, res.result());
  EXPECT_FALSE(res.keep_alive());
  EXPECT_EQ(asio::error::eof, ReadUntilClosed(socket));
}

TEST_F(HttpServerTest, OversizedHeaderGets431AndTheClientSeesIt) {
  HttpServerOptions options;
  options.limits.max_header_bytes = 1024;
  Start(options);
  tcp::socket socket = Connect();
  http::request<http::empty_body> req(http::verb::get, "/metrics", 11);
  req.set(http::field::host, "127.0.0.1");
  req.set("X-Padding", std::string(8 * 1024, 'x'));
  http::write(socket, req);
  Response res = ReadResponse(socket);
  EXPECT_EQ(http::status::request_header_fields_too_large, res.result());
  EXPECT_EQ(0, calls_.load());
}

TEST_F(HttpServerTest, MalformedRequestGets400) {
  Start();
  tcp::socket socket = Connect();
  EXPECT_EQ(http::status::bad_request, SendRaw(socket, "GET /metrics HTTP/9\r\n\r\n").result());
}

TEST_F(HttpServerTest, KeepAliveIdleTimeoutClosesAnIdleConnection) {
  HttpServerOptions options;
  options.idle_timeout = std::chrono::milliseconds(200);
  options.header_timeout = std::chrono::seconds(30);
  Start(options);
  tcp::socket socket = Connect();
  EXPECT_EQ(http::status::ok, Send(socket, http::verb::get, "/metrics").result());
  const Clock::time_point answered = Clock::now();
  EXPECT_EQ(asio::error::eof, ReadUntilClosed(socket));
  EXPECT_GE(Clock::now() - answered, std::chrono::milliseconds(150));
}

TEST_F(HttpServerTest, KeptAliveConnectionWaitsForTheIdleTimeoutNotTheHeaderTimeout) {
  HttpServerOptions options;
  options.header_timeout = std::chrono::milliseconds(200);
  options.idle_timeout = std::chrono::seconds(30);
  Start(options);
  tcp::socket socket = Connect();
  EXPECT_EQ(http::status::ok, Send(socket, http::verb::get, "/metrics").result());
  // Five header timeouts pass without a request: the connection is still kept.
  EXPECT_FALSE(ClosedWithin(socket, std::chrono::milliseconds(1000)));
  EXPECT_EQ(http::status::ok, Send(socket, http::verb::get, "/metrics").result());
}

TEST_F(HttpServerTest, SilentNewConnectionIsCutAtTheHeaderTimeout) {
  HttpServerOptions options;
  options.header_timeout = std::chrono::milliseconds(300);
  options.idle_timeout = std::chrono::seconds(30);
  Start(options);
  tcp::socket socket = Connect();
  const Clock::time_point connected = Clock::now();
  EXPECT_TRUE(ClosedWithin(socket, kCloseDeadline));
  EXPECT_GE(Clock::now() - connected, std::chrono::milliseconds(250));
}

TEST_F(HttpServerTest, SlowlorisSendingAHeaderByteASecondIsCutAtTheHeaderTimeout) {
  HttpServerOptions options;
  options.header_timeout = std::chrono::milliseconds(2500);
  options.idle_timeout = std::chrono::seconds(30);
  Start(options);
  tcp::socket socket = Connect();
  const Clock::time_point connected = Clock::now();
  const std::string header = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  size_t sent = 0;
  bool closed = false;
  // One byte, then a second in which the server may close; each byte would reset a per-read
  // timeout, so only a deadline for the whole header cuts this client.
  while (sent < header.size() && !closed) {
    beast::error_code ec;
    socket.write_some(asio::buffer(&header[sent], 1), ec);
    if (ec) break;
    ++sent;
    closed = ClosedWithin(socket, std::chrono::milliseconds(1000));
  }
  const auto elapsed = Clock::now() - connected;
  EXPECT_TRUE(closed || sent < header.size());
  EXPECT_LT(sent, 6u);  // cut after about 3 bytes, far from the 42 of the header
  EXPECT_GE(elapsed, std::chrono::milliseconds(2000));
  EXPECT_LT(elapsed, std::chrono::milliseconds(5000));
  EXPECT_EQ(0, calls_.load());
}

TEST_F(HttpServerTest, AtTheCapTheOldestIdleConnectionMakesRoom) {
  HttpServerOptions options;
  options.max_connections = 3;
  Start(options);
  std::vector<tcp::socket> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(Connect());
    // Answered, so the server holds it, kept alive and idle from now on, in this order.
    EXPECT_EQ(http::status::ok, Send(idle.back(), http::verb::get, "/metrics").result());
  }
  tcp::socket newcomer = Connect();
  EXPECT_EQ(http::status::ok, Send(newcomer, http::verb::get, "/metrics").result());
  EXPECT_TRUE(ReadUntilClosed(idle[0]));
  EXPECT_EQ(http::status::ok, Send(idle[1], http::verb::get, "/metrics").result());
  EXPECT_EQ(http::status::ok, Send(idle[2], http::verb::get, "/metrics").result());
}

// Starts a POST whose body the server is now waiting for: a connection busy with a request.
void StartBusyRequest(tcp::socket& socket) {
  asio::write(socket,
              asio::buffer(std::string("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                                       "Expect: 100-continue\r\n\r\n")));
  std::string interim(HttpSession::kContinueResponse.size(), '\0');
  asio::read(socket, asio::buffer(interim));
}

TEST_F(HttpServerTest, ConnectionsBusyWithARequestAreNeverEvicted) {
  HttpServerOptions options;
  options.max_connections = 1;
  Start(options);
  tcp::socket busy = Connect();
  StartBusyRequest(busy);
  tcp::socket newcomer = Connect();
  EXPECT_TRUE(ReadUntilClosed(newcomer));
  EXPECT_EQ("POST /echo\nx-probe \nbody data\n", SendRaw(busy, "data").body());
}

TEST_F(HttpServerTest, PerClientCapEvictsThatClientsOldestIdleConnection) {
  HttpServerOptions options;
  options.max_connections_per_client = 2;
  Start(options);
  tcp::socket other = Connect("127.0.0.3");
  EXPECT_EQ(http::status::ok, Send(other, http::verb::get, "/metrics").result());
  std::vector<tcp::socket> mine;
  for (int i = 0; i < 2; ++i) {
    mine.push_back(Connect("127.0.0.2"));
    EXPECT_EQ(http::status::ok, Send(mine.back(), http::verb::get, "/metrics").result());
  }
  tcp::socket third = Connect("127.0.0.2");
  EXPECT_EQ(http::status::ok, Send(third, http::verb::get, "/metrics").result());
  EXPECT_TRUE(ReadUntilClosed(mine[0]));
  // Older than all of them, but another client's: untouched.
  EXPECT_EQ(http::status::ok, Send(other, http::verb::get, "/metrics").result());
  EXPECT_EQ(http::status::ok, Send(mine[1], http::verb::get, "/metrics").result());
}

TEST_F(HttpServerTest, PerClientCapRefusesWhenAllOfThatClientsConnectionsAreBusy) {
  HttpServerOptions options;
  options.max_connections_per_client = 1;
  Start(options);
  tcp::socket busy = Connect("127.0.0.2");
  StartBusyRequest(busy);
  tcp::socket refused = Connect("127.0.0.2");
  EXPECT_TRUE(ReadUntilClosed(refused));
  tcp::socket other = Connect("127.0.0.3");
  EXPECT_EQ(http::status::ok, Send(other, http::verb::get, "/metrics").result());
  EXPECT_EQ("POST /echo\nx-probe \nbody data\n", SendRaw(busy, "data").body());
}

// The test process holds 1,000 client sockets besides the server's own.
void RaiseDescriptorLimit() {
  rlimit limit{};
  ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &limit));
  limit.rlim_cur = limit.rlim_max;
  ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &limit));
  ASSERT_GE(limit.rlim_cur, 1500u) << "the hard descriptor limit is too low for this test";
}

TEST_F(HttpServerTest, MetricsAnswersWithinASecondWhileAThousandIdleConnectionsAreHeld) {
  RaiseDescriptorLimit();
  Start();  // the defaults: 128 connections, 16 per client
  for (int clients : {1, 100}) {
    SCOPED_TRACE(std::to_string(clients) + " client addresses");
    // Connections that never send a byte, spread over `clients` loopback addresses.
    std::vector<tcp::socket> held;
    for (int i = 0; i < 1000; ++i) {
      held.push_back(Connect(clients == 1 ? "" : "127.0.1." + std::to_string(1 + i % clients)));
    }
    const Clock::time_point start = Clock::now();
    tcp::socket scrape = Connect();
    Response res = Send(scrape, http::verb::get, "/metrics");
    const auto elapsed = Clock::now() - start;
    EXPECT_EQ(http::status::ok, res.result());
    EXPECT_EQ("up 1\n", res.body());
    EXPECT_LT(elapsed, std::chrono::seconds(1));
    // Any other route too, on a fresh connection.
    EXPECT_EQ(http::status::service_unavailable, Get("/readyz").result());
  }
}

TEST_F(HttpServerTest, StopClosesOpenConnectionsAndRunReturns) {
  Start();
  tcp::socket idle = Connect();
  EXPECT_EQ(http::status::ok, Send(idle, http::verb::get, "/metrics").result());
  ASSERT_TRUE(StopServer());
  EXPECT_TRUE(ReadUntilClosed(idle));
  beast::error_code ec;
  tcp::socket late(client_io_);
  late.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()), ec);
  EXPECT_EQ(asio::error::connection_refused, ec);
}

TEST(HttpServerListenTest, AddressInUseNamesTheAddressAndTheReason) {
  asio::io_context io;
  HttpServer first(io);
  ASSERT_EQ("", JoinErrors(first.Listen("127.0.0.1", 0).errors()));
  HttpServer second(io);
  const Result<void> refused = second.Listen("127.0.0.1", first.port());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(
      "cannot listen on 127.0.0.1:" + std::to_string(first.port()) + ": Address already in use",
      JoinErrors(refused.errors()));
  EXPECT_EQ(0, second.port());
}

TEST(HttpServerListenTest, AddressNotOnThisHostFails) {
  asio::io_context io;
  HttpServer server(io);
  // 192.0.2.0/24 is reserved for documentation (RFC 5737): never a local address.
  const Result<void> refused = server.Listen("192.0.2.1", 0);
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(JoinErrors(refused.errors()), HasSubstr("cannot listen on 192.0.2.1:0: "));
}

TEST(HttpServerListenTest, IPv6LoopbackListensOrSaysWhyNot) {
  // Hosts without IPv6 (some containers) cannot bind ::1; the agent must then name the address
  // and the reason rather than fail silently.
  asio::io_context io;
  HttpServer server(io);
  const Result<void> listening = server.Listen("::1", 0);
  if (listening.ok()) {
    EXPECT_NE(0, server.port());
  } else {
    EXPECT_THAT(JoinErrors(listening.errors()), HasSubstr("::1"));
  }
}

}  // namespace
}  // namespace faultline
