// HttpDelivery and Receiver over real HTTP: the test's own server on loopback.
#include "agent/alert/http_delivery.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>

#include "agent/alert/webhook_signing.h"
#include "tests/support/http_receiver.h"
#include "tests/support/wait.h"
#include "tests/unit/alert/alert_test_items.h"

namespace faultline {
namespace {

using testing::RunUntil;
using testing::ScriptedResponse;
using testing::TestReceiver;

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

Receiver WebhookReceiver(const std::string& url, int timeout_ms = 2000) {
  AlertsConfig config;
  ReceiverConfig r;
  r.name = "hook";
  r.type = ReceiverConfig::Type::kWebhook;
  r.urls = {url};
  r.secrets = {kSecret};
  r.github_secret = "It's a Secret to Everybody";
  r.timeout_ms = timeout_ms;
  r.connect_timeout_ms = 500;
  config.receivers.push_back(r);
  Result<std::vector<Receiver>> built = Receiver::Build(config, "test.yaml");
  EXPECT_TRUE(built.ok());
  return built.value().front();
}

class HttpDeliveryTest : public ::testing::Test {
 protected:
  // Sends `request` and runs the loop until its result comes back.
  DeliveryOutcome SendAndWait(const Receiver& receiver, const Notification& n) {
    const uint64_t ticket = ++tickets_;
    delivery_.Send(HttpDelivery::Request{ticket, receiver.Prepare(n, 1790769605),
                                         receiver.connect_timeout_ms(), receiver.timeout_ms()});
    EXPECT_TRUE(RunUntil(io_, [&] { return outcomes_.contains(ticket); }));
    return outcomes_[ticket];
  }

  asio::io_context io_;
  std::map<uint64_t, DeliveryOutcome> outcomes_;
  std::vector<uint64_t> order_;
  uint64_t tickets_ = 0;
  HttpDelivery delivery_{io_, [this](uint64_t ticket, DeliveryOutcome o) {
                           order_.push_back(ticket);
                           outcomes_[ticket] = std::move(o);
                         }};
};

TEST_F(HttpDeliveryTest, WebhookRequestsAreSignedAndVerifiableByTheReceiver) {
  TestReceiver server;
  const Receiver receiver = WebhookReceiver(server.url());
  const DeliveryOutcome outcome = SendAndWait(receiver, OneItemNotification());
  EXPECT_EQ(DeliveryOutcome::Transport::kCompleted, outcome.transport);
  EXPECT_EQ(200, outcome.status);
  ASSERT_EQ(1u, server.count());
  const testing::ReceivedRequest r = server.requests()[0];
  EXPECT_EQ("POST", r.method);
  EXPECT_EQ("/hook", r.target);
  EXPECT_EQ("application/json", r.header("Content-Type"));
  EXPECT_EQ("ntf_01", r.header("webhook-id"));
  EXPECT_EQ("1790769605", r.header("webhook-timestamp"));
  // What a receiver does: recompute over the raw body it got.
  const std::string key = ParseWebhookSecret(kSecret).value();
  EXPECT_EQ(StandardWebhookSignature(key, "ntf_01", 1790769605, r.body), r.header("webhook-signature"));
  EXPECT_EQ(GithubSignature256("It's a Secret to Everybody", r.body), r.header("X-Hub-Signature-256"));
  EXPECT_EQ("regression", nlohmann::json::parse(r.body)["kind"]);
}

TEST_F(HttpDeliveryTest, StatusBodyAndRetryAfterComeBack) {
  TestReceiver server;
  server.Script({ScriptedResponse{429, R"({"retry_after":1})", {{"Retry-After", "7"}}},
                 ScriptedResponse{404, "no_service"}});
  const Receiver receiver = WebhookReceiver(server.url());
  DeliveryOutcome o = SendAndWait(receiver, OneItemNotification());
  EXPECT_EQ(429, o.status);
  EXPECT_EQ("7", o.retry_after);
  o = SendAndWait(receiver, OneItemNotification());
  EXPECT_EQ(404, o.status);
  EXPECT_EQ("no_service", o.body);
}

TEST_F(HttpDeliveryTest, AHangingReceiverTimesOutAndDoesNotDelayAnother) {
  TestReceiver hanging;
  hanging.SetDefault(ScriptedResponse::Hang());
  TestReceiver healthy;
  const Receiver slow = WebhookReceiver(hanging.url(), 1500);
  const Receiver fast = WebhookReceiver(healthy.url());
  delivery_.Send(HttpDelivery::Request{1, slow.Prepare(OneItemNotification(), 1), 500, 1500});
  delivery_.Send(HttpDelivery::Request{2, fast.Prepare(OneItemNotification(), 1), 500, 2000});
  ASSERT_TRUE(RunUntil(io_, [&] { return outcomes_.size() == 2; }));
  EXPECT_EQ((std::vector<uint64_t>{2, 1}), order_) << "the healthy one first";
  EXPECT_EQ(DeliveryOutcome::Transport::kTimeout, outcomes_[1].transport);
  EXPECT_EQ(200, outcomes_[2].status);
}

TEST_F(HttpDeliveryTest, NobodyListeningIsAConnectionError) {
  uint16_t port = 0;
  {
    TestReceiver gone;
    port = gone.port();
  }
  const Receiver receiver = WebhookReceiver("http://127.0.0.1:" + std::to_string(port) + "/hook");
  const DeliveryOutcome o = SendAndWait(receiver, OneItemNotification());
  EXPECT_EQ(DeliveryOutcome::Transport::kConnectFailed, o.transport) << o.transport_error;
}

TEST_F(HttpDeliveryTest, RedirectsAreNotFollowed) {
  TestReceiver server;
  server.SetDefault(ScriptedResponse{302, "", {{"Location", "http://127.0.0.1:1/elsewhere"}}});
  const DeliveryOutcome o = SendAndWait(WebhookReceiver(server.url()), OneItemNotification());
  EXPECT_EQ(302, o.status);
  EXPECT_EQ(1u, server.count());
}

}  // namespace
}  // namespace faultline
