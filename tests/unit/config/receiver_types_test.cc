// Every receiver type of kReceiverTypes (agent/config/config.h) is accepted by the loader under
// its name and comes back as that type; an unknown name is refused, listing exactly those names.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agent/config/config_loader.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

class ReceiverTypes : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "receiver_types_XXXXXX").string();
    ASSERT_NE(nullptr, mkdtemp(pattern.data()));
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<Config> Load(const std::string& type) {
    const fs::path file = dir_ / "faultline.yaml";
    std::ofstream(file) << "alerts:\n  receivers:\n    - {name: r, type: " << type
                        << ", url: 'http://127.0.0.1:9/hook'}\n";
    return LoadConfig(file.string());
  }

  fs::path dir_;
};

TEST_F(ReceiverTypes, EveryRegisteredTypeLoadsUnderItsName) {
  for (ReceiverConfig::Type type : kReceiverTypes) {
    const std::string name(ReceiverTypeName(type));
    SCOPED_TRACE(name);
    ASSERT_FALSE(name.empty());
    Result<Config> result = Load(name);
    ASSERT_TRUE(result.ok()) << FormatErrors(result.errors());
    ASSERT_EQ(1u, result.value().alerts.receivers.size());
    EXPECT_EQ(type, result.value().alerts.receivers[0].type);
  }
}

TEST_F(ReceiverTypes, AnUnknownTypeListsTheRegisteredNames) {
  Result<Config> result = Load("pager");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ("'pager' is not one of: slack, webhook, alertmanager", result.errors()[0].message);
  EXPECT_EQ("slack, webhook, alertmanager", ReceiverTypeNames());
}

}  // namespace
}  // namespace faultline
