#include "agent/alert/webhook_signing.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

TEST(WebhookSigningTest, StandardWebhooksSpecVector) {
  // standard-webhooks libraries/python/tests/test_webhooks.py (docs/alerting.md section 6.2).
  const Result<std::string> parsed = ParseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  ASSERT_TRUE(parsed.ok()) << FormatErrors(parsed.errors());
  EXPECT_EQ("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            StandardWebhookSignature(parsed.value(), "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
                                     R"({"test": 2432232314})"));
}

TEST(WebhookSigningTest, TheSecretPrefixIsOptional) {
  EXPECT_EQ(ParseWebhookSecret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").value(),
            ParseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").value());
}

TEST(WebhookSigningTest, TwoSecretsDuringRotationGiveTwoEntries) {
  const std::string old_key = ParseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").value();
  const std::string new_key =
      ParseWebhookSecret("whsec_" + Base64Encode("0123456789abcdef0123456789abcdef")).value();
  const std::string header = StandardWebhookSignatureHeader(
      {old_key, new_key}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})");
  EXPECT_EQ("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= " +
                StandardWebhookSignature(new_key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
                                         R"({"test": 2432232314})"),
            header);
  EXPECT_NE(header.find(' '), std::string::npos);
}

TEST(WebhookSigningTest, SecretsThatDoNotDecodeOrAreTooShortAreRefused) {
  const Result<std::string> not_base64 = ParseWebhookSecret("whsec_not base64!");
  ASSERT_FALSE(not_base64.ok());
  EXPECT_NE(not_base64.errors().front().message.find("base64"), std::string::npos);
  const Result<std::string> short_key = ParseWebhookSecret("whsec_" + Base64Encode("short"));
  ASSERT_FALSE(short_key.ok());
  EXPECT_NE(short_key.errors().front().message.find("24..64"), std::string::npos);
}

TEST(WebhookSigningTest, GithubVector) {
  // docs.github.com "Validating webhook deliveries" (docs/alerting.md section 6.1).
  EXPECT_EQ("sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
            GithubSignature256("It's a Secret to Everybody", "Hello, World!"));
}

TEST(WebhookSigningTest, Base64RoundTripsEveryLength) {
  std::string bytes;
  for (int n = 0; n < 40; ++n) {
    EXPECT_EQ(bytes, Base64Decode(Base64Encode(bytes)).value_or("<failed>")) << n;
    bytes.push_back(static_cast<char>(n * 37));
  }
}

}  // namespace
}  // namespace faultline
