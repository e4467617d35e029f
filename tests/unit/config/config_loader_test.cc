// The config loader: every section's keys, defaults and errors (file, line, key). Over 600
// lines: one fixture of YAML snippets for the whole schema, read the way a user writes it.
#include "agent/config/config_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace faultline {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// Each test writes its config into a fresh folder, so relative paths resolve somewhere known.
class ConfigLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "config_loader_XXXXXX").string();
    ASSERT_NE(nullptr, mkdtemp(pattern.data()));
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& text, const std::string& name = "faultline.yaml") {
    const fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  std::string In(const std::string& relative) const {
    return (dir_ / relative).lexically_normal().string();
  }

  fs::path dir_;
};

// (line, key) of every error, in the order reported: what a user sees first when fixing a config.
std::vector<std::pair<int, std::string>> LinesAndKeys(const ErrorList& errors) {
  std::vector<std::pair<int, std::string>> out;
  for (const Error& e : errors) out.emplace_back(e.line, e.key);
  return out;
}

constexpr char kMinimal[] =
    "sources:\n"
    "  - id: app\n"
    "    type: file\n"
    "    paths: [app.log]\n";

TEST_F(ConfigLoaderTest, OmittedKeysTakeTheirDefaults) {
  const std::string path = Write(kMinimal);
  Result<Config> result = LoadConfig(path);
  ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
  const Config& config = result.value();
  EXPECT_EQ(path, config.file);
  EXPECT_EQ(std::vector<std::string>{In("rules")}, config.rule_paths);
  EXPECT_EQ(2000, config.context_idle_flush_ms);
  EXPECT_EQ(std::size_t{1} << 20, config.framing.max_line_bytes);
  EXPECT_EQ("127.0.0.1", config.http_address);
  EXPECT_EQ(9464, config.http_port);
  EXPECT_EQ("info", config.log_level);
  ASSERT_EQ(1u, config.file_sources.size());
  const FileSourceConfig& source = config.file_sources[0];
  EXPECT_EQ("app", source.id);
  EXPECT_EQ(std::vector<std::string>{In("app.log")}, source.paths);
  EXPECT_EQ(StartAt::kEnd, source.start_at);
  EXPECT_EQ(1000, source.poll_interval_ms);
  EXPECT_EQ(30000, source.rescan_interval_ms);
  EXPECT_EQ(DefaultRotatedNameExcludes(), source.exclude);
  EXPECT_EQ(0u, config.max_open_files);
  EXPECT_EQ(In("state"), config.state.dir);
  EXPECT_EQ(1000, config.state.checkpoint_interval_ms);
}

TEST_F(ConfigLoaderTest, StateDirIsResolvedBesideTheConfigAndItsIntervalIsBounded) {
  Result<Config> ok =
      LoadConfig(Write("state:\n  dir: ../var/faultline\n  checkpoint_interval_ms: 250\n"));
  ASSERT_TRUE(ok.ok()) << FormatErrors(ok.errors());
  EXPECT_EQ(In("../var/faultline"), ok.value().state.dir);
  EXPECT_EQ(250, ok.value().state.checkpoint_interval_ms);

  Result<Config> bad =
      LoadConfig(Write("state:\n  dir: ''\n  checkpoint_interval_ms: 5\n  keep: 2\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(LinesAndKeys(bad.errors()), ElementsAre(Pair(4, "state.keep"), Pair(2, "state.dir"),
                                                      Pair(3, "state.checkpoint_interval_ms")));
}

TEST_F(ConfigLoaderTest, EmptyFileIsAllDefaults) {
  Result<Config> result = LoadConfig(Write(""));
  ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
  EXPECT_EQ(std::vector<std::string>{In("rules")}, result.value().rule_paths);
  EXPECT_TRUE(result.value().file_sources.empty());
}

TEST_F(ConfigLoaderTest, EveryKeyIsRead) {
  Result<Config> result = LoadConfig(Write(
      "rules:\n"
      "  paths: [pack_a, pack_b]\n"
      "  context_idle_flush_ms: 500\n"
      "framing:\n"
      "  max_line_bytes: 4096\n"
      "http:\n"
      "  listen: 0.0.0.0:8080\n"
      "log:\n"
      "  level: debug\n"
      "limits:\n"
      "  max_open_files: 512\n"
      "sources:\n"
      "  - id: train.rank-0\n"
      "    type: file\n"
      "    paths: ['a/*.log', 'b/**/*.txt']\n"
      "    exclude: ['*.old', 'b/skip/*']\n"
      "    start_at: beginning\n"
      "    poll_interval_ms: 250\n"
      "    rescan_interval_ms: 5000\n"
      "    rotate_wait_ms: 5000\n"
      "  - id: build\n"
      "    type: file\n"
      "    paths:\n"
      "      - build.log\n"));
  ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
  const Config& config = result.value();
  EXPECT_EQ((std::vector<std::string>{In("pack_a"), In("pack_b")}), config.rule_paths);
  EXPECT_EQ(500, config.context_idle_flush_ms);
  EXPECT_EQ(4096u, config.framing.max_line_bytes);
  EXPECT_EQ("0.0.0.0", config.http_address);
  EXPECT_EQ(8080, config.http_port);
  EXPECT_EQ("debug", config.log_level);
  ASSERT_EQ(2u, config.file_sources.size());
  EXPECT_EQ("train.rank-0", config.file_sources[0].id);
  EXPECT_EQ((std::vector<std::string>{In("a/*.log"), In("b/**/*.txt")}),
            config.file_sources[0].paths);
  EXPECT_EQ(StartAt::kBeginning, config.file_sources[0].start_at);
  EXPECT_EQ(250, config.file_sources[0].poll_interval_ms);
  EXPECT_EQ(5000, config.file_sources[0].rotate_wait_ms);
  EXPECT_EQ(5000, config.file_sources[0].rescan_interval_ms);
  EXPECT_EQ((std::vector<std::string>{"*.old", In("b/skip/*")}), config.file_sources[0].exclude);
  EXPECT_EQ(DefaultRotatedNameExcludes(), config.file_sources[1].exclude);
  EXPECT_EQ(512u, config.max_open_files);
  EXPECT_EQ(60000, config.file_sources[1].rotate_wait_ms);
  EXPECT_EQ("build", config.file_sources[1].id);
  EXPECT_EQ(std::vector<std::string>{In("build.log")}, config.file_sources[1].paths);
}

TEST_F(ConfigLoaderTest, RelativePathsResolveAgainstTheConfigFolderNotTheWorkingDirectory) {
  const std::string path = Write(
      "rules:\n"
      "  paths: [../rules, /opt/faultline/rules]\n"
      "sources:\n"
      "  - id: app\n"
      "    type: file\n"
      "    paths: ['../logs/*.log', /var/log/app.log]\n",
      "config/faultline.yaml");
  Result<Config> result = LoadConfig(path);
  ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
  EXPECT_EQ((std::vector<std::string>{In("rules"), "/opt/faultline/rules"}),
            result.value().rule_paths);
  EXPECT_EQ((std::vector<std::string>{In("logs/*.log"), "/var/log/app.log"}),
            result.value().file_sources[0].paths);
}

TEST_F(ConfigLoaderTest, IPv6ListenAddressIsWrittenInBrackets) {
  Result<Config> result = LoadConfig(Write("http:\n  listen: '[::1]:9999'\n"));
  ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
  EXPECT_EQ("::1", result.value().http_address);
  EXPECT_EQ(9999, result.value().http_port);
}

TEST_F(ConfigLoaderTest, UnknownKeysAreErrorsAtEveryLevel) {
  const std::string path = Write(
      "rule:\n"                     // 1
      "  paths: [x]\n"              // 2
      "http:\n"                     // 3
      "  listen: 127.0.0.1:1\n"     // 4
      "  lisen: 127.0.0.1:2\n"      // 5
      "sources:\n"                  // 6
      "  - id: app\n"               // 7
      "    type: file\n"            // 8
      "    paths: [a.log]\n"        // 9
      "    start: end\n");          // 10
  Result<Config> result = LoadConfig(path);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()),
              ElementsAre(Pair(1, "rule"), Pair(5, "http.lisen"), Pair(10, "sources[0].start")));
  EXPECT_EQ(path, result.errors()[0].file);
  EXPECT_THAT(result.errors()[0].message,
              HasSubstr("unknown key; allowed here: rules, framing, http, log, limits, state, "
                        "discover, reload, sources"));
}

TEST_F(ConfigLoaderTest, ReloadAndAdminTokenKeysAreReadAndChecked) {
  Result<Config> defaults = LoadConfig(Write(kMinimal));
  ASSERT_TRUE(defaults.ok()) << FormatErrors(defaults.errors());
  EXPECT_FALSE(defaults.value().reload.watch);
  EXPECT_EQ(20000, defaults.value().reload.timeout_ms);
  EXPECT_EQ(std::size_t{1} << 30, defaults.value().reload.max_memory_bytes);
  EXPECT_EQ("", defaults.value().http_admin_token_file);

  Result<Config> set = LoadConfig(Write(
      "http:\n  admin_token_file: secrets/token\n"
      "reload:\n  watch: true\n  timeout_ms: 5000\n  max_memory_bytes: 33554432\n"));
  ASSERT_TRUE(set.ok()) << FormatErrors(set.errors());
  EXPECT_EQ(In("secrets/token"), set.value().http_admin_token_file);
  EXPECT_TRUE(set.value().reload.watch);
  EXPECT_EQ(5000, set.value().reload.timeout_ms);
  EXPECT_EQ(std::size_t{32} << 20, set.value().reload.max_memory_bytes);

  Result<Config> bad = LoadConfig(Write(
      "reload:\n"                      // 1
      "  watch: yes\n"                 // 2
      "  timeout_ms: 10\n"             // 3
      "  max_memory_bytes: 1024\n"     // 4
      "  every: 1\n"));                // 5
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(LinesAndKeys(bad.errors()),
              ElementsAre(Pair(5, "reload.every"), Pair(2, "reload.watch"),
                          Pair(3, "reload.timeout_ms"), Pair(4, "reload.max_memory_bytes")));
}

TEST_F(ConfigLoaderTest, BadEnumValueNamesTheKeyAndTheAllowedValues) {
  Result<Config> result = LoadConfig(Write(
      "log:\n"
      "  level: verbose\n"
      "sources:\n"
      "  - id: app\n"
      "    type: file\n"
      "    paths: [a.log]\n"
      "    start_at: middle\n"));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()),
              ElementsAre(Pair(2, "log.level"), Pair(7, "sources[0].start_at")));
  EXPECT_EQ("'verbose' is not one of: trace, debug, info, warn, error",
            result.errors()[0].message);
  EXPECT_EQ("'middle' is not one of: beginning, end", result.errors()[1].message);
}

TEST_F(ConfigLoaderTest, BadListenAddressesAreRejected) {
  for (const char* listen : {"127.0.0.1:70000", "127.0.0.1:0", "127.0.0.1:http", "127.0.0.1",
                             "::1:9464", ":9464", "'[::1]9464'", "'[::1:9464'"}) {
    SCOPED_TRACE(listen);
    Result<Config> result = LoadConfig(Write(std::string("http:\n  listen: ") + listen + "\n"));
    ASSERT_FALSE(result.ok());
    EXPECT_THAT(LinesAndKeys(result.errors()), ElementsAre(Pair(2, "http.listen")));
  }
}

TEST_F(ConfigLoaderTest, PortOutOfRangeSaysWhatIsAllowed) {
  Result<Config> result = LoadConfig(Write("http:\n  listen: 127.0.0.1:65536\n"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ("'127.0.0.1:65536': the port must be a number from 1 to 65535, got '65536'",
            result.errors()[0].message);
}

TEST_F(ConfigLoaderTest, NumbersOutsideTheirRangeOrNotNumbersAreRejected) {
  Result<Config> result = LoadConfig(Write(
      "rules:\n"
      "  context_idle_flush_ms: 0\n"
      "framing:\n"
      "  max_line_bytes: 512\n"
      "sources:\n"
      "  - id: a\n"
      "    type: file\n"
      "    paths: [a.log]\n"
      "    poll_interval_ms: 5\n"
      "  - id: b\n"
      "    type: file\n"
      "    paths: [b.log]\n"
      "    poll_interval_ms: fast\n"));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()),
              ElementsAre(Pair(2, "rules.context_idle_flush_ms"), Pair(4, "framing.max_line_bytes"),
                          Pair(9, "sources[0].poll_interval_ms"),
                          Pair(13, "sources[1].poll_interval_ms")));
  EXPECT_EQ("must be from 1024 to 67108864, got 512", result.errors()[1].message);
  EXPECT_EQ("expected a whole number from 10 to 60000, got 'fast'", result.errors()[3].message);
}

TEST_F(ConfigLoaderTest, DescriptorAndDiscoveryKeysAreValidated) {
  Result<Config> result = LoadConfig(Write(
      "limits:\n"                      // 1
      "  max_open_files: 2\n"          // 2
      "sources:\n"                     // 3
      "  - id: a\n"                    // 4
      "    type: file\n"               // 5
      "    paths: [a.log]\n"           // 6
      "    exclude: '*.gz'\n"          // 7
      "    rescan_interval_ms: 50\n"   // 8
      "  - id: b\n"                    // 9
      "    type: file\n"               // 10
      "    paths: [b.log]\n"           // 11
      "    exclude: ['*.gz', '']\n"));  // 12
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()),
              ElementsAre(Pair(2, "limits.max_open_files"), Pair(7, "sources[0].exclude"),
                          Pair(8, "sources[0].rescan_interval_ms"),
                          Pair(12, "sources[1].exclude[1]")));
  EXPECT_EQ("must be from 4 to 1048576, got 2", result.errors()[0].message);
  EXPECT_EQ("must be from 100 to 86400000, got 50", result.errors()[2].message);

  Result<Config> words = LoadConfig(Write("limits:\n  max_open_files: lots\n", "words.yaml"));
  ASSERT_FALSE(words.ok());
  EXPECT_EQ("expected auto or a whole number from 4 to 1048576, got 'lots'",
            words.errors()[0].message);
}

TEST_F(ConfigLoaderTest, UnrecognisedErrorKeysAreReadAndChecked) {
  Result<Config> defaults = LoadConfig(Write(kMinimal));
  ASSERT_TRUE(defaults.ok());
  EXPECT_TRUE(defaults.value().discover_enabled);
  EXPECT_EQ(1000u, defaults.value().discover_max_templates);
  EXPECT_EQ(3u, defaults.value().discover_alert_after);
  EXPECT_EQ(20u, defaults.value().discover_max_series);

  Result<Config> set = LoadConfig(Write(
      "discover:\n  enabled: false\n  max_templates: 50\n  alert_after: 1\n  max_series: 0\n",
      "set.yaml"));
  ASSERT_TRUE(set.ok()) << FormatErrors(set.errors());
  EXPECT_FALSE(set.value().discover_enabled);
  EXPECT_EQ(50u, set.value().discover_max_templates);
  EXPECT_EQ(1u, set.value().discover_alert_after);
  EXPECT_EQ(0u, set.value().discover_max_series);

  Result<Config> bad = LoadConfig(Write(
      "discover:\n"            // 1
      "  enabled: yes\n"       // 2
      "  max_templates: 0\n"   // 3
      "  alert_after: -1\n"    // 4
      "  max_series: 5000\n"   // 5
      "  templates: 3\n",      // 6
      "bad.yaml"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(LinesAndKeys(bad.errors()),
              ElementsAre(Pair(6, "discover.templates"), Pair(2, "discover.enabled"),
                          Pair(3, "discover.max_templates"), Pair(4, "discover.alert_after"),
                          Pair(5, "discover.max_series")));
  EXPECT_EQ("'yes' is not one of: true, false", bad.errors()[1].message);
}

TEST_F(ConfigLoaderTest, AutoDescriptorsAndAnEmptyExcludeAreAccepted) {
  Result<Config> result = LoadConfig(Write(
      "limits:\n"
      "  max_open_files: auto\n"
      "sources:\n"
      "  - id: a\n"
      "    type: file\n"
      "    paths: ['app.log*']\n"
      "    exclude: []\n"));
  ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
  EXPECT_EQ(0u, result.value().max_open_files);
  EXPECT_TRUE(result.value().file_sources[0].exclude.empty());
}

TEST_F(ConfigLoaderTest, MaxLineBytesAcceptsItsBounds) {
  for (const char* value : {"1024", "67108864"}) {
    SCOPED_TRACE(value);
    Result<Config> result = LoadConfig(Write(std::string("framing:\n  max_line_bytes: ") + value));
    ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
    EXPECT_EQ(std::stoull(value), result.value().framing.max_line_bytes);
  }
}

TEST_F(ConfigLoaderTest, InputFormatIsAutoUnlessSetAndAnUnknownOneIsRejectedWithItsLine) {
  Result<Config> defaults = LoadConfig(Write("framing:\n  max_line_bytes: 4096\n"));
  ASSERT_TRUE(defaults.ok()) << FormatErrors(defaults.errors());
  EXPECT_EQ(LineFormat::kAuto, defaults.value().framing.format);
  for (const LineFormat format :
       {LineFormat::kAuto, LineFormat::kPlain, LineFormat::kCri, LineFormat::kDocker}) {
    Result<Config> result = LoadConfig(
        Write("framing:\n  input_format: " + std::string(LineFormatName(format)) + "\n"));
    ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
    EXPECT_EQ(format, result.value().framing.format);
  }
  Result<Config> bad =
      LoadConfig(Write("framing:\n  max_line_bytes: 4096\n  input_format: json\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(LinesAndKeys(bad.errors()), ElementsAre(Pair(3, "framing.input_format")));
  EXPECT_EQ("'json' is not an input format (auto, plain, cri, docker)", bad.errors()[0].message);
}

TEST_F(ConfigLoaderTest, EveryErrorOfOneLoadIsReportedTogether) {
  Result<Config> result = LoadConfig(Write(
      "rules:\n"                          // 1
      "  paths: []\n"                     // 2
      "framing:\n"                        // 3
      "  max_line_bytes: lots\n"          // 4
      "http:\n"                           // 5
      "  listen: 127.0.0.1:0\n"           // 6
      "log: {level: loud}\n"              // 7
      "sources:\n"                        // 8
      "  - id: 'bad id'\n"                // 9
      "    type: file\n"                  // 10
      "    paths: [ok.log, '']\n"         // 11
      "  - type: socket\n"                // 12
      "    listen: 0.0.0.0:514\n"         // 13
      "  - id: c\n"                       // 14
      "    type: file\n"));               // 15
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()),
              ElementsAre(Pair(2, "rules.paths"), Pair(4, "framing.max_line_bytes"),
                          Pair(6, "http.listen"), Pair(7, "log.level"), Pair(9, "sources[0].id"),
                          Pair(11, "sources[0].paths[1]"), Pair(12, "sources[1].type"),
                          Pair(14, "sources[2].paths")));
  EXPECT_EQ("unknown source type 'socket'; allowed: file, stdin, fifo, tcp, udp, unix, unixgram",
            result.errors()[6].message);
  EXPECT_EQ("required key is missing", result.errors()[7].message);
}

TEST_F(ConfigLoaderTest, SourceWithoutTypeOrIdIsRejected) {
  Result<Config> result = LoadConfig(Write(
      "sources:\n"
      "  - paths: [a.log]\n"
      "    start_at: beginning\n"));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()),
              ElementsAre(Pair(2, "sources[0].type"), Pair(2, "sources[0].id")));
}

TEST_F(ConfigLoaderTest, DuplicateSourceIdPointsAtTheFirstUse) {
  Result<Config> result = LoadConfig(Write(
      "sources:\n"
      "  - {id: app, type: file, paths: [a.log]}\n"
      "  - {id: app, type: file, paths: [b.log]}\n"));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()), ElementsAre(Pair(3, "sources[1].id")));
  EXPECT_EQ("duplicate source id 'app'; first used on line 2", result.errors()[0].message);
}

TEST_F(ConfigLoaderTest, StdinAndFifoSourcesTakeTheirOwnKeys) {
  Result<Config> result = LoadConfig(Write(
      "sources:\n"
      "  - {id: piped, type: stdin}\n"
      "  - {id: pipe, type: fifo, path: run/train.fifo}\n"));
  ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
  const Config& config = result.value();
  ASSERT_EQ(1u, config.stdin_sources.size());
  EXPECT_EQ("piped", config.stdin_sources[0].id);
  ASSERT_EQ(1u, config.fifo_sources.size());
  EXPECT_EQ("pipe", config.fifo_sources[0].id);
  EXPECT_EQ(In("run/train.fifo"), config.fifo_sources[0].path);
  EXPECT_TRUE(config.file_sources.empty());
}

TEST_F(ConfigLoaderTest, StdinAndFifoSourcesRejectFileKeysAndRepeats) {
  Result<Config> result = LoadConfig(Write(
      "sources:\n"                                         // 1
      "  - {id: a, type: stdin, paths: [x.log]}\n"         // 2
      "  - {id: b, type: stdin}\n"                         // 3
      "  - {id: c, type: fifo}\n"                          // 4
      "  - {id: d, type: fifo, path: p.fifo}\n"            // 5
      "  - {id: e, type: fifo, path: p.fifo}\n"            // 6
      "  - {id: a, type: fifo, path: q.fifo}\n"));         // 7
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()),
              ElementsAre(Pair(2, "sources[0].paths"), Pair(3, "sources[1].type"),
                          Pair(4, "sources[2].path"), Pair(6, "sources[4].path"),
                          Pair(7, "sources[5].id")));
  EXPECT_EQ("only one source can read standard input; the first is on line 2",
            result.errors()[1].message);
  EXPECT_EQ("the named pipe " + In("p.fifo") + " is already read by the source on line 5",
            result.errors()[3].message);
}

TEST_F(ConfigLoaderTest, HttpListenSetOnlyWhenTheFileSaysIt) {
  Result<Config> without = LoadConfig(Write(kMinimal));
  ASSERT_TRUE(without.ok()) << FormatErrors(without.errors());
  EXPECT_FALSE(without.value().http_listen_set);
  Result<Config> with = LoadConfig(Write("http:\n  listen: 127.0.0.1:9999\n", "other.yaml"));
  ASSERT_TRUE(with.ok()) << FormatErrors(with.errors());
  EXPECT_TRUE(with.value().http_listen_set);
  EXPECT_EQ(9999, with.value().http_port);
}

TEST_F(ConfigLoaderTest, DuplicateKeyIsAnError) {
  Result<Config> result = LoadConfig(Write(
      "log:\n"
      "  level: info\n"
      "  level: debug\n"));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()), ElementsAre(Pair(3, "log.level")));
  EXPECT_EQ("duplicate key; first set on line 2", result.errors()[0].message);
}

TEST_F(ConfigLoaderTest, WrongShapesAreErrors) {
  Result<Config> result = LoadConfig(Write(
      "rules: [a, b]\n"                  // 1
      "http:\n"                          // 2
      "  listen: [127.0.0.1, 9464]\n"    // 3
      "sources:\n"                       // 4
      "  - id: app\n"                    // 5
      "    type: file\n"                 // 6
      "    paths: app.log\n"             // 7
      "  - just-a-string\n"));           // 8
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()),
              ElementsAre(Pair(1, "rules"), Pair(3, "http.listen"), Pair(7, "sources[0].paths"),
                          Pair(8, "sources[1]")));
  EXPECT_EQ("expected a map, got a list", result.errors()[0].message);
  EXPECT_EQ("expected a list, got a single value", result.errors()[2].message);
}

TEST_F(ConfigLoaderTest, TopLevelMustBeAMap) {
  Result<Config> result = LoadConfig(Write("- rules\n- http\n"));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()), ElementsAre(Pair(1, "")));
}

TEST_F(ConfigLoaderTest, YamlSyntaxErrorHasFileAndLine) {
  const std::string path = Write(
      "log:\n"
      "  level: info\n"
      "http:\n"
      "  listen: [127.0.0.1:9464\n"
      "sources: []\n");
  Result<Config> result = LoadConfig(path);
  ASSERT_FALSE(result.ok());
  ASSERT_EQ(1u, result.errors().size());
  EXPECT_EQ(path, result.errors()[0].file);
  EXPECT_EQ(5, result.errors()[0].line);  // where yaml-cpp notices the unclosed flow sequence
  EXPECT_THAT(result.errors()[0].message, HasSubstr("invalid YAML"));
}

TEST_F(ConfigLoaderTest, MissingFileIsNamed) {
  const std::string path = (dir_ / "nope.yaml").string();
  Result<Config> result = LoadConfig(path);
  ASSERT_FALSE(result.ok());
  ASSERT_EQ(1u, result.errors().size());
  EXPECT_EQ(path, result.errors()[0].file);
  EXPECT_THAT(result.errors()[0].ToString(), HasSubstr("nope.yaml"));
  EXPECT_THAT(result.errors()[0].message, HasSubstr("No such file or directory"));
}

TEST_F(ConfigLoaderTest, DirectoryIsNotAConfigFile) {
  Result<Config> result = LoadConfig(dir_.string());
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.errors()[0].message, HasSubstr("is a directory"));
}

TEST_F(ConfigLoaderTest, AlertsReceiversAndFixes) {
  std::ofstream(dir_ / "hook.secret") << "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n";
  const std::string path = Write(std::string(kMinimal) +
                                 "http:\n"
                                 "  admin_token_file: token\n"
                                 "alerts:\n"
                                 "  group_wait_ms: 0\n"
                                 "  quiet_for_ms: 60000\n"
                                 "  resolve_after_runs: 5\n"
                                 "  host: builder-3\n"
                                 "  source_versions: {app: {deepspeed: 0.15.1}}\n"
                                 "  receivers:\n"
                                 "    - {name: hook, type: webhook, url: 'http://127.0.0.1:8080/hook',\n"
                                 "       secret_files: [hook.secret], send_resolved: true}\n"
                                 "    - name: am\n"
                                 "      type: alertmanager\n"
                                 "      urls: ['http://am1:9093', 'http://am2:9093']\n"
                                 "    - {name: chat, type: slack, url: 'https://hooks.slack.com/x',\n"
                                 "       rate_per_second: 0.5, burst: 2, min_severity: critical}\n"
                                 "fixes:\n"
                                 "  - {signature: deepspeed.async_io.windows_link, version: 0.15.0,\n"
                                 "     note: skips aio, by: alice}\n");
  Result<Config> result = LoadConfig(path);
  ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
  const Config& c = result.value();
  EXPECT_EQ(In("token"), c.http_admin_token_file);
  EXPECT_TRUE(c.alerts.enabled);
  EXPECT_EQ(0, c.alerts.group_wait_ms);
  EXPECT_EQ(60000, c.alerts.quiet_for_ms);
  EXPECT_EQ(5, c.alerts.resolve_after_runs);
  EXPECT_EQ("builder-3", c.alerts.host);
  ASSERT_EQ(1u, c.alerts.source_versions.size());
  EXPECT_EQ("app", c.alerts.source_versions[0].first);
  EXPECT_THAT(c.alerts.source_versions[0].second, ElementsAre(Pair("deepspeed", "0.15.1")));
  ASSERT_EQ(3u, c.alerts.receivers.size());
  EXPECT_EQ(ReceiverConfig::Type::kWebhook, c.alerts.receivers[0].type);
  EXPECT_EQ(std::vector<std::string>{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
            c.alerts.receivers[0].secrets);
  EXPECT_TRUE(c.alerts.receivers[0].send_resolved);
  EXPECT_EQ(2u, c.alerts.receivers[1].urls.size());
  EXPECT_EQ(0.5, c.alerts.receivers[2].rate_per_second);
  EXPECT_EQ("critical", c.alerts.receivers[2].min_severity);
  ASSERT_EQ(1u, c.fixes.size());
  EXPECT_EQ("deepspeed.async_io.windows_link", c.fixes[0].signature);
  EXPECT_EQ("0.15.0", c.fixes[0].version);
}

TEST_F(ConfigLoaderTest, BadReceiversAreReportedWithLineAndKey) {
  const std::string path = Write(std::string(kMinimal) +
                                 "alerts:\n"                                       // 5
                                 "  receivers:\n"                                  // 6
                                 "    - {name: a, type: pager, url: 'http://x'}\n"  // 7
                                 "    - {name: b, type: webhook}\n"                  // 8
                                 "    - {name: c, type: webhook, url: 'ftp://x'}\n"  // 9
                                 "    - {name: d, type: webhook, url: 'http://x', secrets: [nope]}\n"
                                 "    - {name: d, type: slack, urls: ['http://x', 'http://y']}\n"
                                 "  group_wait_ms: -1\n"                            // 12
                                 "fixes:\n"                                        // 13
                                 "  - {version: 1.0}\n");                          // 14
  Result<Config> result = LoadConfig(path);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(LinesAndKeys(result.errors()),
              ElementsAre(Pair(7, "alerts.receivers[0].type"), Pair(8, "alerts.receivers[1].url"),
                          Pair(9, "alerts.receivers[2].url"),
                          Pair(10, "alerts.receivers[3].secrets"),
                          Pair(11, "alerts.receivers[4].name"), Pair(12, "alerts.group_wait_ms"),
                          Pair(14, "fixes[0].signature")));
}

// `fixes: FILE`: the fleet's shared list, beside the config or anywhere; its errors name it.
TEST_F(ConfigLoaderTest, FixesCanBeAFileBesideTheConfigWhoseErrorsNameIt) {
  Write("- {signature: a.rule, version: 0.15.0, note: n, by: alice}\n- {signature: b.rule}\n",
        "shared/fixes.yaml");
  Result<Config> loaded = LoadConfig(Write(std::string(kMinimal) + "fixes: shared/fixes.yaml\n"));
  ASSERT_TRUE(loaded.ok()) << FormatErrors(loaded.errors());
  EXPECT_EQ(In("shared/fixes.yaml"), loaded.value().fixes_file);
  ASSERT_EQ(2u, loaded.value().fixes.size());
  EXPECT_EQ("a.rule", loaded.value().fixes[0].signature);
  EXPECT_EQ("0.15.0", loaded.value().fixes[0].version);
  EXPECT_EQ("alice", loaded.value().fixes[0].by);
  EXPECT_EQ("b.rule", loaded.value().fixes[1].signature);

  const std::string bad = Write("- {signature: a.rule}\n- {version: 1.0, when: now}\n", "bad.yaml");
  Result<Config> wrong = LoadConfig(Write(std::string(kMinimal) + "fixes: bad.yaml\n"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(LinesAndKeys(wrong.errors()),
              ElementsAre(Pair(2, "fixes[1].when"), Pair(2, "fixes[1].signature")));
  EXPECT_EQ(bad, wrong.errors()[0].file);

  Result<Config> missing = LoadConfig(Write(std::string(kMinimal) + "fixes: nowhere.yaml\n"));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(LinesAndKeys(missing.errors()), ElementsAre(Pair(5, "fixes")));
  EXPECT_THAT(missing.errors()[0].message, HasSubstr("nowhere.yaml"));
}

// The config the README runs must stay loadable and mean what its comments say.
TEST(ShippedConfigTest, DefaultConfigLoadsAndPointsIntoTheRepository) {
  const fs::path source_dir = FAULTLINE_SOURCE_DIR;
  Result<Config> result = LoadConfig((source_dir / "config" / "faultline.yaml").string());
  ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
  const Config& config = result.value();
  EXPECT_EQ(std::vector<std::string>{(source_dir / "rules").lexically_normal().string()},
            config.rule_paths);
  EXPECT_EQ("127.0.0.1", config.http_address);
  EXPECT_EQ(9464, config.http_port);
  ASSERT_EQ(1u, config.file_sources.size());
  const FileSourceConfig& source = config.file_sources[0];
  EXPECT_EQ("examples", source.id);
  EXPECT_EQ(std::vector<std::string>{
                (source_dir / "examples" / "logs" / "*.log").lexically_normal().string()},
            source.paths);
  EXPECT_EQ(StartAt::kBeginning, source.start_at);
}

}  // namespace
}  // namespace faultline
