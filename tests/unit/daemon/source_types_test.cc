// Every source type the config loader accepts is registered (kSourceLists,
// agent/config/config.h): a type whose list is missing there would be parsed and then silently
// never started, its changes not seen by a reload, and its counters dropped at a restart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "agent/config/config_loader.h"
#include "agent/daemon/source_set.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

// One valid entry of each source type, by type name. A new type needs one here.
const std::map<std::string, std::string>& Samples() {
  static const std::map<std::string, std::string> samples = {
      {"file", "{id: s, type: file, paths: [a.log]}"},
      {"stdin", "{id: s, type: stdin}"},
      {"fifo", "{id: s, type: fifo, path: run/a.fifo}"},
      {"tcp", "{id: s, type: tcp, listen: '127.0.0.1:5170'}"},
      {"udp", "{id: s, type: udp, listen: '127.0.0.1:5514'}"},
      {"unix", "{id: s, type: unix, path: run/a.sock}"},
      {"unixgram", "{id: s, type: unixgram, path: run/b.sock}"},
  };
  return samples;
}

class SourceTypes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("faultline_source_types_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<Config> Load(const std::string& sources) {
    const fs::path file = dir_ / "faultline.yaml";
    std::ofstream(file) << "sources:\n  - " << sources << "\n";
    return LoadConfig(file.string());
  }

  // The types the loader accepts, as its error for an unknown one lists them.
  std::vector<std::string> AcceptedTypes() {
    Result<Config> result = Load("{id: s, type: no-such-type}");
    EXPECT_FALSE(result.ok());
    if (result.ok()) return {};
    const std::string message = result.errors().front().message;
    const std::string marker = "allowed: ";
    const std::size_t at = message.find(marker);
    EXPECT_NE(std::string::npos, at) << message;
    std::vector<std::string> types;
    std::stringstream list(message.substr(at + marker.size()));
    for (std::string type; std::getline(list, type, ',');) {
      type.erase(0, type.find_first_not_of(' '));
      types.push_back(type);
    }
    return types;
  }

  fs::path dir_;
};

TEST_F(SourceTypes, EveryTypeTheLoaderAcceptsIsRegistered) {
  const std::vector<std::string> types = AcceptedTypes();
  ASSERT_GE(types.size(), Samples().size());
  for (const std::string& type : types) {
    SCOPED_TRACE("source type " + type);
    const auto sample = Samples().find(type);
    ASSERT_NE(Samples().end(), sample)
        << "no sample entry: add one to Samples() (CONTRIBUTING.md, adding a source type)";
    Result<Config> result = Load(sample->second);
    ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
    // Reload and start see it: it has a section of its own, which differs from none.
    const std::map<std::string, Config> sections = SourceSections(result.value());
    ASSERT_EQ(1u, sections.size()) << "its list is not in kSourceLists (config/config.h)";
    EXPECT_EQ("s", sections.begin()->first);
    Config without = result.value();
    ForEachSourceList(without, [](auto& list) { list.clear(); });
    EXPECT_FALSE(SameSourceSection(sections.begin()->second, without))
        << "a reload would not see this source change";
    EXPECT_TRUE(SameSourceSection(sections.begin()->second, sections.begin()->second));
  }
}

}  // namespace
}  // namespace faultline
