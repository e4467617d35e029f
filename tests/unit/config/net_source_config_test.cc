// The keys of `type: tcp | udp | unix | unixgram` sources (NetSourceConfig).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "agent/config/config_loader.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

class NetSourceConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "net_config_XXXXXX").string();
    ASSERT_NE(nullptr, mkdtemp(pattern.data()));
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<Config> Load(const std::string& sources) {
    const fs::path path = dir_ / "faultline.yaml";
    std::ofstream(path) << "sources:\n" << sources;
    return LoadConfig(path.string());
  }

  fs::path dir_;
};

std::vector<std::pair<int, std::string>> ErrorLinesAndKeys(const ErrorList& errors) {
  std::vector<std::pair<int, std::string>> out;
  for (const Error& e : errors) out.emplace_back(e.line, e.key);
  return out;
}

TEST_F(NetSourceConfigTest, EveryTypeWithItsDefaults) {
  Result<Config> result = Load(
      "  - {id: t, type: tcp, listen: '127.0.0.1:5170'}\n"
      "  - {id: u, type: udp, listen: '[::1]:5514'}\n"
      "  - {id: s, type: unix, path: run/net.sock}\n"
      "  - {id: g, type: unixgram, path: /run/log.sock}\n");
  ASSERT_TRUE(result.ok()) << result.errors()[0].message;
  const std::vector<NetSourceConfig>& net = result.value().net_sources;
  ASSERT_EQ(4u, net.size());
  EXPECT_EQ(NetTransport::kTcp, net[0].transport);
  EXPECT_EQ("127.0.0.1", net[0].host);
  EXPECT_EQ(5170, net[0].port);
  EXPECT_EQ(NetFormat::kPlain, net[0].format);
  EXPECT_EQ(256u, net[0].max_streams);
  EXPECT_EQ(3600 * 1000, net[0].idle_timeout_ms);
  EXPECT_EQ(NetTransport::kUdp, net[1].transport);
  EXPECT_EQ("::1", net[1].host);
  EXPECT_EQ(NetTransport::kUnix, net[2].transport);
  EXPECT_EQ((dir_ / "run/net.sock").string(), net[2].path);  // next to the config file
  EXPECT_EQ(0660u, net[2].mode);
  EXPECT_EQ(NetTransport::kUnixgram, net[3].transport);
  EXPECT_EQ("/run/log.sock", net[3].path);
  EXPECT_TRUE(result.value().file_sources.empty());
}

TEST_F(NetSourceConfigTest, EveryKeyIsRead) {
  Result<Config> result = Load(
      "  - {id: t, type: tcp, listen: '0.0.0.0:601', format: syslog, max_connections: 10,\n"
      "     idle_timeout_ms: 60000}\n"
      "  - {id: g, type: unixgram, path: /run/l.sock, mode: '0622', format: syslog, max_peers: 9}\n"
      "  - {id: s, type: unix, path: /run/s.sock, mode: 660}\n");
  ASSERT_TRUE(result.ok()) << result.errors()[0].message;
  const std::vector<NetSourceConfig>& net = result.value().net_sources;
  EXPECT_EQ(NetFormat::kSyslog, net[0].format);
  EXPECT_EQ(10u, net[0].max_streams);
  EXPECT_EQ(60000, net[0].idle_timeout_ms);
  EXPECT_EQ(0622u, net[1].mode);
  EXPECT_EQ(9u, net[1].max_streams);
  EXPECT_EQ(0660u, net[2].mode);
}

TEST_F(NetSourceConfigTest, KeysOfOtherTypesAndBadValuesAreErrors) {
  Result<Config> result = Load(
      "  - id: t\n"                      // 2
      "    type: tcp\n"                  // 3
      "    listen: 'localhost'\n"        // 4
      "    path: /run/x.sock\n"          // 5
      "    max_peers: 3\n"               // 6
      "  - id: u\n"                      // 7
      "    type: unix\n"                 // 8
      "    path: /run/x.sock\n"          // 9
      "    mode: '0999'\n"               // 10
      "    format: json\n"               // 11
      "    max_connections: 0\n"         // 12
      "    idle_timeout_ms: 10\n"        // 13
      "  - {id: g, type: unixgram}\n");  // 14
  ASSERT_FALSE(result.ok());
  // Keys the type does not take come first, as for every map (the loader reads keys, then values).
  EXPECT_THAT(ErrorLinesAndKeys(result.errors()),
              ElementsAre(Pair(5, "sources[0].path"), Pair(6, "sources[0].max_peers"),
                          Pair(4, "sources[0].listen"), Pair(10, "sources[1].mode"),
                          Pair(11, "sources[1].format"), Pair(12, "sources[1].max_connections"),
                          Pair(13, "sources[1].idle_timeout_ms"), Pair(14, "sources[2].path")));
  EXPECT_THAT(
      result.errors()[0].message,
      HasSubstr("allowed here: id, type, listen, format, max_connections, idle_timeout_ms"));
  EXPECT_THAT(result.errors()[3].message, HasSubstr("octal"));
  EXPECT_EQ("required key is missing", result.errors()[7].message);
}

TEST_F(NetSourceConfigTest, ASocketPathMustFitSunPath) {
  Result<Config> result = Load("  - {id: s, type: unix, path: /" + std::string(120, 'x') + "}\n");
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.errors()[0].message, HasSubstr("at most 107"));
}

TEST_F(NetSourceConfigTest, IdsAreUniqueAcrossFileAndNetSources) {
  Result<Config> result = Load(
      "  - {id: app, type: file, paths: [a.log]}\n"
      "  - {id: app, type: tcp, listen: '127.0.0.1:5170'}\n");
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(ErrorLinesAndKeys(result.errors()), ElementsAre(Pair(3, "sources[1].id")));
}

}  // namespace
}  // namespace faultline
