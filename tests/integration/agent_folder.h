// AgentFolderTest: the fixture an integration test that runs the real agent starts from: a fresh
// folder <tmp>/<test name>/ (a parameterised test's '/' made '_') holding rules/ and logs/, and a
// TCP port that was free a moment ago; the folder is removed after the test. Single-threaded, as
// gtest runs a test; a failure to create the folder throws (the test fails).
#ifndef FAULTLINE_TESTS_INTEGRATION_AGENT_FOLDER_H_
#define FAULTLINE_TESTS_INTEGRATION_AGENT_FOLDER_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace faultline::testing {

class AgentFolderTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Writes `text` (bytes as given) to dir_/`relative`, creating its folders; returns the path.
  std::string WriteFile(const std::string& relative, const std::string& text) const;

  std::string dir_;
  uint16_t port_ = 0;
};

}  // namespace faultline::testing

#endif  // FAULTLINE_TESTS_INTEGRATION_AGENT_FOLDER_H_
