#include "agent/config/config_reader.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

TEST(ParseListen, HostAndPortOrBracketedIpv6) {
  Result<ListenEndpoint> v4 = ParseListen("127.0.0.1:9464");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ("127.0.0.1", v4.value().host);
  EXPECT_EQ(9464, v4.value().port);
  Result<ListenEndpoint> v6 = ParseListen("[::1]:80");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ("::1", v6.value().host);
  EXPECT_EQ(80, v6.value().port);
}

TEST(ParseListen, SaysWhyNot) {
  const auto why = [](std::string_view text) {
    Result<ListenEndpoint> r = ParseListen(text);
    return r.ok() ? std::string("ok") : r.errors().front().message;
  };
  EXPECT_EQ("expected host:port, e.g. 127.0.0.1:9464", why("localhost"));
  EXPECT_EQ("an IPv6 address must be in brackets, e.g. [::1]:9464", why("::1:80"));
  EXPECT_EQ("missing ']' after the IPv6 address", why("[::1:80"));
  EXPECT_EQ("the host is empty; use 0.0.0.0 or [::] to listen on every interface", why(":80"));
  EXPECT_EQ("the port must be a number from 1 to 65535, got '0'", why("h:0"));
  EXPECT_EQ("the port must be a number from 1 to 65535, got '65536'", why("h:65536"));
}

TEST(ConfigReader, ResolvesRelativePathsAgainstTheConfigFolder) {
  ErrorList errors;
  const ConfigReader reader("/etc/faultline/faultline.yaml", "/etc/faultline", &errors);
  EXPECT_EQ("/etc/faultline/rules", reader.Resolve("rules"));
  EXPECT_EQ("/etc/logs/*.log", reader.Resolve("../logs/./*.log"));
  EXPECT_EQ("/var/log/x.log", reader.Resolve("/var/log/x.log"));
}

}  // namespace
}  // namespace faultline
