// GCC 12 with optimisation reports a false -Wmaybe-uninitialized inside Beast 1.74's *response*
// parser (a boost::optional in basic_parser<false>::do_field). Only this client side parses
// responses; the pragma comes first because the warning is attributed to Beast's header lines.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "agent/http/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "agent/core/asio.h"

namespace faultline {
namespace {

namespace http = beast::http;
using tcp = asio::ip::tcp;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Long enough for any loaded CI machine; only reached when the server fails to stop.
constexpr std::chrono::seconds kStopDeadline(10);

// The server runs on its own loop thread, as in the agent; the test thread is a plain blocking
// Beast client with a separate io_context.
class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions options = {}) {
    server_.emplace(io_, options);
    server_->Handle("/metrics", [this] {
      ++calls_;
      return HttpResponse{200, "text/plain; version=0.0.4", "up 1\n"};
    });
    server_->Handle("/readyz",
                    [] { return HttpResponse{503, "text/plain", "rules not loaded\n"}; });
    std::string error;
    ASSERT_TRUE(server_->Listen("127.0.0.1", 0, &error)) << error;
    ASSERT_NE(0, server_->port());
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

  tcp::socket Connect() {
    tcp::socket socket(client_io_);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
    return socket;
  }

  http::response<http::string_body> Send(tcp::socket& socket, http::verb method,
                                         const std::string& target, bool keep_alive = true) {
    http::request<http::empty_body> req(method, target, 11);
    req.set(http::field::host, "127.0.0.1");
    req.keep_alive(keep_alive);
    http::write(socket, req);
    http::response_parser<http::string_body> parser;
    // A HEAD response announces a Content-Length but carries no body.
    parser.skip(method == http::verb::head);
    http::read(socket, buffer_, parser);
    return parser.release();
  }

  http::response<http::string_body> Get(const std::string& target) {
    tcp::socket socket = Connect();
    return Send(socket, http::verb::get, target);
  }

  // What the next read on `socket` sees once the server closed its side: EOF or a reset.
  beast::error_code ReadUntilClosed(tcp::socket& socket) {
    beast::error_code ec;
    char byte;
    while (!ec) socket.read_some(asio::buffer(&byte, 1), ec);
    return ec;
  }

  asio::io_context io_;
  std::optional<HttpServer> server_;
  std::thread loop_;
  std::promise<void> done_;
  std::future<void> stopped_;
  std::atomic<int> calls_{0};

  asio::io_context client_io_;
  beast::flat_buffer buffer_;
};

TEST_F(HttpServerTest, RegisteredPathGets200WithBodyAndHeaders) {
  Start();
  http::response<http::string_body> res = Get("/metrics");
  EXPECT_EQ(http::status::ok, res.result());
  EXPECT_EQ("up 1\n", res.body());
  EXPECT_EQ("text/plain; version=0.0.4", res[http::field::content_type]);
  EXPECT_EQ("5", res[http::field::content_length]);
  EXPECT_THAT(std::string(res[http::field::server]), StartsWith("faultline/"));
}

TEST_F(HttpServerTest, HandlerStatusIsPassedThrough) {
  Start();
  http::response<http::string_body> res = Get("/readyz");
  EXPECT_EQ(http::status::service_unavailable, res.result());
  EXPECT_EQ("rules not loaded\n", res.body());
}

TEST_F(HttpServerTest, UnknownPathGets404) {
  Start();
  EXPECT_EQ(http::status::not_found, Get("/nope").result());
  EXPECT_EQ(http::status::not_found, Get("/metrics/").result());
  EXPECT_EQ(0, calls_.load());
}

TEST_F(HttpServerTest, QueryStringIsIgnoredForRouting) {
  Start();
  http::response<http::string_body> res = Get("/metrics?name[]=up");
  EXPECT_EQ(http::status::ok, res.result());
  EXPECT_EQ("up 1\n", res.body());
}

TEST_F(HttpServerTest, OtherMethodsGet405WithAllowHeader) {
  Start();
  tcp::socket socket = Connect();
  http::response<http::string_body> res = Send(socket, http::verb::post, "/metrics");
  EXPECT_EQ(http::status::method_not_allowed, res.result());
  EXPECT_EQ("GET, HEAD", res[http::field::allow]);
  EXPECT_EQ(0, calls_.load());
  // A refused method is not a broken connection: keep-alive still holds.
  EXPECT_EQ(http::status::ok, Send(socket, http::verb::get, "/metrics").result());
}

TEST_F(HttpServerTest, HeadGetsTheHeadersOfGetWithoutABody) {
  Start();
  tcp::socket socket = Connect();
  http::response<http::string_body> res = Send(socket, http::verb::head, "/metrics");
  EXPECT_EQ(http::status::ok, res.result());
  EXPECT_EQ("5", res[http::field::content_length]);
  EXPECT_EQ("", res.body());
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

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  Start();
  tcp::socket socket = Connect();
  http::response<http::string_body> res =
      Send(socket, http::verb::get, "/metrics", /*keep_alive=*/false);
  EXPECT_EQ(http::status::ok, res.result());
  EXPECT_FALSE(res.keep_alive());
  EXPECT_EQ(asio::error::eof, ReadUntilClosed(socket));
}

TEST_F(HttpServerTest, RequestWithABodyGets413) {
  Start();
  tcp::socket socket = Connect();
  http::request<http::string_body> req(http::verb::get, "/metrics", 11);
  req.set(http::field::host, "127.0.0.1");
  req.body() = "payload";
  req.prepare_payload();
  http::write(socket, req);
  http::response<http::string_body> res;
  http::read(socket, buffer_, res);
  EXPECT_EQ(http::status::payload_too_large, res.result());
  EXPECT_FALSE(res.keep_alive());
}

TEST_F(HttpServerTest, OversizedHeaderGets431AndTheClientSeesIt) {
  HttpServerOptions options;
  options.max_header_bytes = 1024;
  Start(options);
  tcp::socket socket = Connect();
  http::request<http::empty_body> req(http::verb::get, "/metrics", 11);
  req.set(http::field::host, "127.0.0.1");
  req.set("X-Padding", std::string(8 * 1024, 'x'));
  http::write(socket, req);
  http::response<http::string_body> res;
  http::read(socket, buffer_, res);
  EXPECT_EQ(http::status::request_header_fields_too_large, res.result());
  EXPECT_EQ(0, calls_.load());
}

TEST_F(HttpServerTest, MalformedRequestGets400) {
  Start();
  tcp::socket socket = Connect();
  asio::write(socket, asio::buffer(std::string("GET /metrics HTTP/9\r\n\r\n")));
  http::response<http::string_body> res;
  http::read(socket, buffer_, res);
  EXPECT_EQ(http::status::bad_request, res.result());
}

TEST_F(HttpServerTest, IdleConnectionIsClosedWhenItsReadTimesOut) {
  HttpServerOptions options;
  options.read_timeout = std::chrono::milliseconds(100);
  Start(options);
  tcp::socket socket = Connect();
  EXPECT_EQ(http::status::ok, Send(socket, http::verb::get, "/metrics").result());
  EXPECT_EQ(asio::error::eof, ReadUntilClosed(socket));
}

TEST_F(HttpServerTest, ConnectionsBeyondTheCapAreClosed) {
  HttpServerOptions options;
  options.max_connections = 1;
  Start(options);
  tcp::socket first = Connect();
  // Once it has answered, the first connection is surely registered.
  EXPECT_EQ(http::status::ok, Send(first, http::verb::get, "/metrics").result());
  tcp::socket second = Connect();
  EXPECT_TRUE(ReadUntilClosed(second));
  EXPECT_EQ(http::status::ok, Send(first, http::verb::get, "/metrics").result());
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
  std::string error;
  ASSERT_TRUE(first.Listen("127.0.0.1", 0, &error)) << error;
  HttpServer second(io);
  EXPECT_FALSE(second.Listen("127.0.0.1", first.port(), &error));
  EXPECT_EQ("cannot listen on 127.0.0.1:" + std::to_string(first.port()) +
                ": Address already in use",
            error);
  EXPECT_EQ(0, second.port());
}

TEST(HttpServerListenTest, AddressNotOnThisHostFails) {
  asio::io_context io;
  HttpServer server(io);
  std::string error;
  // 192.0.2.0/24 is reserved for documentation (RFC 5737): never a local address.
  EXPECT_FALSE(server.Listen("192.0.2.1", 0, &error));
  EXPECT_THAT(error, HasSubstr("cannot listen on 192.0.2.1:0: "));
}

TEST(HttpServerListenTest, IPv6LoopbackListensOrSaysWhyNot) {
  // Hosts without IPv6 (some containers) cannot bind ::1; the agent must then name the address
  // and the reason rather than fail silently.
  asio::io_context io;
  HttpServer server(io);
  std::string error;
  if (server.Listen("::1", 0, &error)) {
    EXPECT_NE(0, server.port());
  } else {
    EXPECT_THAT(error, HasSubstr("::1"));
  }
}

}  // namespace
}  // namespace faultline
