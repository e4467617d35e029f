// The status page as a person sees it: the real agent on real files, the page fetched over HTTP,
// and loaded in a real browser (headless Debian Chromium), which must show the signature the test
// produced and must not run the script a hostile log line carries. The screenshot it takes is
// kept under the build folder (artifacts/status_page/status.png) for CI to publish.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/integration/agent_folder.h"
#include "tests/integration/process.h"

namespace faultline {
namespace {

using testing::Daemon;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::HttpGet;
using ::testing::Not;

constexpr char kRules[] = R"(id: t.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
)";

constexpr char kChromium[] = "/usr/bin/chromium";

// The hostile lines: markup that would run script if it reached the DOM as markup (the script
// builds its marker from pieces, so the marker appears only if it ran), a bidi override, and a
// line far longer than the page shows.
const std::string kImgLine = "<img src=x onerror=\"document.title='PWN'+'ED'\">";
const std::string kBidiLine = "see evil\u202Etxt.exe";
const std::string kHitLine =
    "<script>document.body.dataset.pwned='y'+'es'</script> RuntimeError: CUDA out of memory. " +
    std::string(100000, 'x');

class StatusPageTest : public testing::AgentFolderTest {
 protected:
  void SetUp() override {
    AgentFolderTest::SetUp();
    WriteFile("rules/t.yaml", kRules);
    config_ = dir_ + "/faultline.yaml";
    std::ofstream(config_) << "rules:\n  paths: [rules]\nhttp:\n  listen: 127.0.0.1:" << port_
                           << "\nsources:\n  - id: train\n    type: file\n"
                           << "    paths: ['logs/*.log']\n    start_at: beginning\n"
                           << "    poll_interval_ms: 50\n";
    std::ofstream(dir_ + "/logs/train.log") << "step 1\n"
                                            << kImgLine << "\n"
                                            << kBidiLine << "\n"
                                            << kHitLine << "\n";
  }

  std::string Get(const std::string& path) {
    std::string body;
    return HttpGet(port_, path, &body) == 200 ? body : "";
  }

  std::string config_;
};

TEST_F(StatusPageTest, PageAndJsonShowTheSignatureWithItsLastHitEscaped) {
  Daemon agent({"run", "-c", config_});
  ASSERT_TRUE(Eventually([&] { return Get("/").find("t.cuda_oom") != std::string::npos; }))
      << agent.Stderr();
  const std::string page = Get("/");
  EXPECT_THAT(page, HasSubstr("<meta http-equiv=\"refresh\""));
  EXPECT_THAT(page, HasSubstr("<code class=\"sig\">t.cuda_oom</code>"));
  EXPECT_THAT(page, HasSubstr("<td class=\"n\">1</td>"));
  EXPECT_THAT(page, HasSubstr("&lt;script&gt;document.body.dataset.pwned="));
  EXPECT_THAT(page, HasSubstr("evil<span class=\"esc\">U+202E</span>txt.exe"));
  EXPECT_THAT(page, HasSubstr("logs/train.log:4"));
  EXPECT_THAT(page, Not(HasSubstr("<script")));
  EXPECT_THAT(page, Not(HasSubstr("<img")));
  EXPECT_LT(page.size(), 32u * 1024);  // a 100 KB line is shown cut

  const nlohmann::json status = nlohmann::json::parse(Get("/api/v1/status"));
  ASSERT_EQ(1u, status["signatures"].size());
  EXPECT_EQ("t.cuda_oom", status["signatures"][0]["signature"]);
  EXPECT_EQ(1, status["signatures"][0]["count"]);
  EXPECT_EQ(kBidiLine, status["signatures"][0]["last_hit"]["context_before"][2]);
  EXPECT_EQ("train", status["sources"][0]["id"]);
  EXPECT_EQ(4, status["sources"][0]["lines"]);
  EXPECT_EQ(0, status["sources"][0]["streams"][0]["lag_bytes"]);
  EXPECT_EQ(1, status["rules"]["loaded"]);
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

// Runs `command` through the shell; returns its exit status.
int Shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(StatusPageTest, ARealBrowserShowsTheSignatureAndRunsNoScriptFromTheLog) {
  if (!std::filesystem::exists(kChromium)) {
    if (std::getenv("CI") != nullptr)
      FAIL() << "chromium is missing: scripts/install-deps.sh installs it";
    GTEST_SKIP() << "needs Debian's chromium package (apt-get install chromium)";
  }
  Daemon agent({"run", "-c", config_});
  ASSERT_TRUE(Eventually([&] { return Get("/").find("t.cuda_oom") != std::string::npos; }))
      << agent.Stderr();

  const std::string artifacts = std::string(FAULTLINE_BUILD_DIR) + "/artifacts/status_page";
  std::filesystem::create_directories(artifacts);
  const std::string screenshot = artifacts + "/status.png";
  std::filesystem::remove(screenshot);
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/";
  // The flags that keep Chromium off the network and out of first-run work on a closed machine.
  const std::string chromium = std::string("timeout 120 ") + kChromium +
                               " --headless --no-sandbox --disable-gpu --disable-quic"
                               " --no-first-run --disable-background-networking"
                               " --disable-component-update --disable-sync"
                               " --disable-dev-shm-usage --user-data-dir=" +
                               dir_ + "/chromium";
  const std::string dom_path = dir_ + "/dom.html";
  ASSERT_EQ(0, Shell(chromium + " --dump-dom " + url + " > " + dom_path + " 2> " + dir_ +
                     "/chromium.err"))
      << Slurp(dir_ + "/chromium.err");
  const std::string dom = Slurp(dom_path);
  EXPECT_THAT(dom, HasSubstr("<code class=\"sig\">t.cuda_oom</code>"));
  EXPECT_THAT(dom, HasSubstr("&lt;script&gt;document.body.dataset.pwned="));
  EXPECT_THAT(dom, HasSubstr("U+202E"));
  // Neither the script nor the image's handler ran, and neither became an element.
  EXPECT_THAT(dom, Not(HasSubstr("data-pwned")));
  EXPECT_THAT(dom, Not(HasSubstr("PWNED")));
  EXPECT_THAT(dom, Not(HasSubstr("<script")));
  EXPECT_THAT(dom, Not(HasSubstr("<img")));

  ASSERT_EQ(0, Shell(chromium + " --hide-scrollbars --window-size=1280,900 --screenshot=" +
                     screenshot + " " + url + " > /dev/null 2>> " + dir_ + "/chromium.err"))
      << Slurp(dir_ + "/chromium.err");
  const std::string png = Slurp(screenshot);
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(std::string("\x89PNG", 4), png.substr(0, 4));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

}  // namespace
}  // namespace faultline
