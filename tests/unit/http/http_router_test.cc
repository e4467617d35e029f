#include "agent/http/http_router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/http/http_message.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(ConstantTimeEquals, EqualOnlyForTheSameBytes) {
  EXPECT_TRUE(ConstantTimeEquals("s3cr3t", "s3cr3t"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("s3cr3u", "s3cr3t"));
  EXPECT_FALSE(ConstantTimeEquals("t3cr3t", "s3cr3t"));
  EXPECT_FALSE(ConstantTimeEquals("s3cr3", "s3cr3t"));
  EXPECT_FALSE(ConstantTimeEquals("s3cr3tt", "s3cr3t"));
  EXPECT_FALSE(ConstantTimeEquals("", "s3cr3t"));
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("s3cr3t\0", 7), "s3cr3t"));
}

TEST(HostIsAllowed, LoopbackNamesWithAnyPort) {
  const HttpEndpoint endpoint{"0.0.0.0", "10.1.2.3", 9464};
  for (const char* host : {"localhost", "LocalHost:9464", "127.0.0.1", "127.0.0.1:1", "[::1]",
                           "[::1]:9464", " localhost "}) {
    EXPECT_TRUE(HostIsAllowed(host, endpoint)) << host;
  }
}

TEST(HostIsAllowed, ThisServersAddressesOnlyWithItsPort) {
  const HttpEndpoint endpoint{"agent.internal", "fd00::5", 9464};
  EXPECT_TRUE(HostIsAllowed("agent.internal:9464", endpoint));
  EXPECT_TRUE(HostIsAllowed("AGENT.internal:9464", endpoint));
  EXPECT_TRUE(HostIsAllowed("[fd00::5]:9464", endpoint));
  EXPECT_FALSE(HostIsAllowed("agent.internal", endpoint));
  EXPECT_FALSE(HostIsAllowed("agent.internal:80", endpoint));
  EXPECT_FALSE(HostIsAllowed("[fd00::5]:946", endpoint));
  EXPECT_FALSE(HostIsAllowed("fd00::5:9464", endpoint));  // IPv6 must be bracketed
  // Port 80 may be left out, as browsers do.
  EXPECT_TRUE(HostIsAllowed("agent.internal", HttpEndpoint{"agent.internal", "", 80}));
}

TEST(HostIsAllowed, RefusesEverythingElse) {
  const HttpEndpoint endpoint{"10.0.0.1", "10.0.0.1", 9464};
  for (const char* host : {"", ":9464", "evil.example", "evil.example:9464", "localhost.evil:9464",
                           "127.0.0.1.evil.example", "[::1", "[::1]x", "localhost:94x4",
                           "127.0.0.1:9464:1", "[::1]:"}) {
    EXPECT_FALSE(HostIsAllowed(host, endpoint)) << host;
  }
}

TEST(ParseQueryString, DecodesPairsInOrder) {
  EXPECT_THAT(ParseQueryString("a=1&b=x%20y&c&&d=%41+%zz&=e&f=%4"),
              ElementsAre(Pair("a", "1"), Pair("b", "x y"), Pair("c", ""), Pair("d", "A %zz"),
                          Pair("", "e"), Pair("f", "%4")));
  EXPECT_TRUE(ParseQueryString("").empty());
}

TEST(HttpRequest, HeaderLookupIgnoresCase) {
  HttpRequest request;
  request.headers = {{"Host", "a"}, {"X-Thing", "1"}, {"x-thing", "2"}};
  EXPECT_EQ("1", request.header("x-THING"));
  EXPECT_EQ("", request.header("missing"));
}

TEST(HttpRouter, AdmitsInTheDocumentedOrder) {
  HttpRouter router;
  router.Add(
      {.path = "/admin", .admin = true, .bearer_token = "t", .handler = [](const HttpRequest&) {
         return HttpResponse{};
       }});
  const HttpEndpoint endpoint{"127.0.0.1", "127.0.0.1", 9464};
  HttpRequest request;
  request.path = "/admin";
  request.headers = {{"Host", "evil.example"}};
  HttpResponse refusal;
  // A foreign Host is refused before the token is even looked at.
  EXPECT_EQ(nullptr, router.Admit(HttpMethod::kGet, request, false, endpoint, &refusal));
  EXPECT_EQ(403u, refusal.status);
  // A wrong method before the Host.
  EXPECT_EQ(nullptr, router.Admit(HttpMethod::kPost, request, false, endpoint, &refusal));
  EXPECT_EQ(405u, refusal.status);
  request.headers = {{"Host", "localhost"}};
  EXPECT_EQ(nullptr, router.Admit(HttpMethod::kGet, request, false, endpoint, &refusal));
  EXPECT_EQ(401u, refusal.status);
  request.headers.emplace_back("Authorization", "Bearer t");
  EXPECT_NE(nullptr, router.Admit(HttpMethod::kGet, request, false, endpoint, &refusal));
  EXPECT_EQ(nullptr, router.Admit(HttpMethod::kGet, request, true, endpoint, &refusal));
  EXPECT_EQ(413u, refusal.status);
  request.path = "/other";
  EXPECT_EQ(nullptr, router.Admit(std::nullopt, request, true, endpoint, &refusal));
  EXPECT_EQ(404u, refusal.status);
}

TEST(HttpRouter, PrefixRoutesTakeWhatIsUnderThemLongestFirst) {
  HttpRouter router;
  const auto named = [](const char* name) {
    return [name](const HttpRequest&) { return HttpResponse{200, "text/plain", name}; };
  };
  router.Add({.path = "/api/v1/signatures", .handler = named("list")});
  router.Add({.path = "/api/v1/", .prefix = true, .handler = named("api")});
  router.Add({.path = "/api/v1/signatures/", .prefix = true, .methods = {HttpMethod::kPost},
              .handler = named("action")});
  const HttpEndpoint endpoint{"127.0.0.1", "127.0.0.1", 9464};
  HttpResponse refusal;
  const auto route = [&](const char* path, HttpMethod method) -> std::string {
    HttpRequest request;
    request.path = path;
    request.headers = {{"Host", "localhost"}};
    const auto r = router.Admit(method, request, false, endpoint, &refusal);
    return r == nullptr ? std::to_string(refusal.status) : HttpRouter::Respond(*r, request).body;
  };
  EXPECT_EQ("list", route("/api/v1/signatures", HttpMethod::kGet));
  EXPECT_EQ("action", route("/api/v1/signatures/a.b%7Bx%3D1%7D/fix", HttpMethod::kPost));
  EXPECT_EQ("405", route("/api/v1/signatures/a.b/fix", HttpMethod::kGet));
  EXPECT_EQ("api", route("/api/v1/other", HttpMethod::kGet));
  EXPECT_EQ("404", route("/api/v1", HttpMethod::kGet)) << "a prefix needs something after it";
  EXPECT_EQ("404", route("/api/v2/x", HttpMethod::kGet));
}

}  // namespace
}  // namespace faultline
