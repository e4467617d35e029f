// Finding the bundled rules as an installed binary, a binary in another folder and a binary
// reached through a symlink: each started from `/`, with FAULTLINE_RULES unset.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/process.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Output {
  int exit_code = -1;
  std::string out;
};

// Runs `argv` in folder `cwd` without FAULTLINE_RULES in its environment; stdout captured.
Output RunIn(const std::string& cwd, const std::vector<std::string>& args) {
  const std::string out_path = testing::TempDir("install_out") + "/out";
  const pid_t pid = fork();
  if (pid == 0) {
    unsetenv("FAULTLINE_RULES");
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    if (chdir(cwd.c_str()) != 0) _exit(126);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(out_path);
  std::stringstream text;
  text << in.rdbuf();
  fs::remove_all(fs::path(out_path).parent_path());
  return Output{WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

// The folders the rules listed by `binary` were loaded from.
std::vector<std::string> RuleFiles(const std::string& binary) {
  const Output listed = RunIn("/", {binary, "rules", "list", "--format", "json"});
  EXPECT_EQ(0, listed.exit_code);
  std::vector<std::string> files;
  if (listed.exit_code != 0) return files;
  for (const auto& rule : nlohmann::json::parse(listed.out)) files.push_back(rule["file"]);
  return files;
}

bool AllUnder(const std::vector<std::string>& files, const std::string& folder) {
  for (const std::string& f : files) {
    if (f.rfind(folder, 0) != 0) return false;
  }
  return !files.empty();
}

TEST(Install, InstalledBinaryFindsTheInstalledPackFromAnyFolder) {
  const std::string prefix = testing::TempDir("install_prefix");
  const std::string install = "cmake --install '" FAULTLINE_BUILD_DIR "' --prefix '" + prefix +
                              "' >/dev/null";
  ASSERT_EQ(0, std::system(install.c_str()));
  const std::string binary = prefix + "/bin/faultline";
  ASSERT_TRUE(fs::exists(binary));
  EXPECT_TRUE(fs::exists(prefix + "/share/faultline/config/faultline.yaml"));
  EXPECT_TRUE(AllUnder(RuleFiles(binary), prefix + "/share/faultline/rules/"));

  const Output scan =
      RunIn("/", {binary, "scan", prefix + "/share/faultline/examples/logs/deepspeed_windows_build.log"});
  EXPECT_EQ(1, scan.exit_code) << scan.out;
  EXPECT_THAT(scan.out, HasSubstr("deepspeed.async_io.windows_link"));
  // The installed example config is valid where it was installed.
  EXPECT_EQ(0, RunIn("/", {binary, "check", "-c", prefix + "/share/faultline/config/faultline.yaml"})
                   .exit_code);
  fs::remove_all(prefix);
}

TEST(Install, ABinaryInAnotherFolderOrBehindASymlinkFindsTheSourcePack) {
  const std::string dir = testing::TempDir("install_elsewhere");
  fs::create_directories(dir + "/a/b/c");
  const std::string copy = dir + "/a/b/c/faultline";
  fs::copy_file(FAULTLINE_BINARY, copy);
  fs::create_symlink(FAULTLINE_BINARY, dir + "/link-to-faultline");
  for (const std::string& binary : {copy, dir + "/link-to-faultline"}) {
    EXPECT_TRUE(AllUnder(RuleFiles(binary), FAULTLINE_SOURCE_DIR "/rules/")) << binary;
  }
  fs::remove_all(dir);
}

TEST(Install, VersionEndsWithANewline) {
  for (const char* flag : {"--version", "version"}) {
    const Output v = RunIn("/", {FAULTLINE_BINARY, flag});
    EXPECT_EQ(0, v.exit_code);
    EXPECT_THAT(v.out, ::testing::MatchesRegex("faultline [0-9.]+\n"));
  }
}

}  // namespace
}  // namespace faultline
