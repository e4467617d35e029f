#include "tests/integration/agent_folder.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/integration/process.h"

namespace faultline::testing {

void AgentFolderTest::SetUp() {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '_');
  dir_ = TempDir(name);
  std::filesystem::create_directories(dir_ + "/rules");
  std::filesystem::create_directories(dir_ + "/logs");
  port_ = FreePort();
}

void AgentFolderTest::TearDown() { std::filesystem::remove_all(dir_); }

std::string AgentFolderTest::WriteFile(const std::string& relative, const std::string& text) const {
  const std::filesystem::path path = std::filesystem::path(dir_) / relative;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

}  // namespace faultline::testing
