// 100 reloads while a log is written at a sustained rate: every other one valid (rules and
// sources toggled), every other one broken (a rule that does not compile, an unknown config key),
// by SIGHUP and by POST /-/reload in turn. The agent must count every line and every hit exactly
// once, never crash, and keep its memory flat; the test prints the figures: lines/s written and
// counted, the longest stall of the event loop seen by a /healthz prober, the longest time a
// reload held the loop (from the agent's log), and the agent's RSS.
//
// FAULTLINE_RELOAD_TEST_RATE sets the write rate in lines/s (default 100000).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/integration/process.h"

namespace faultline {
namespace {

using Clock = std::chrono::steady_clock;
using testing::Daemon;
using testing::Eventually;
using testing::HttpGet;
using testing::HttpPost;

constexpr char kLoadToken[] = "load-test-token-0123456789abcdef";
constexpr int kReloads = 100;
constexpr uint64_t kHitEvery = 50;  // one line in 50 is a known failure

long RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

std::string Rule(const std::string& id, const std::string& pattern) {
  return "id: " + id + "\ntitle: " + id + "\nseverity: error\ncategory: runtime\nmatch: ['" +
         pattern + "']\nroot_cause: r\nfix: f\n";
}

class ReloadLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir("reload_load");
    std::filesystem::create_directories(dir_ + "/rules");
    std::filesystem::create_directories(dir_ + "/logs");
    port_ = testing::FreePort();
    std::ofstream(dir_ + "/token") << kLoadToken << "\n";
    chmod((dir_ + "/token").c_str(), 0600);
    Replace(dir_ + "/rules/base.yaml", Rule("t.hit", "FAULT-HIT-[0-9]+"));
    std::ofstream(dir_ + "/logs/aux.txt") << "aux line\n";
    WriteConfig(/*aux=*/false, "");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Replace(const std::string& path, const std::string& text) {
    std::ofstream(path + ".tmp") << text;
    std::filesystem::rename(path + ".tmp", path);
  }
  void WriteConfig(bool aux, const std::string& extra_key) {
    std::string sources =
        "  - id: load\n    type: file\n    paths: ['logs/load.log']\n    start_at: beginning\n"
        "    poll_interval_ms: 50\n";
    if (aux) {
      sources +=
          "  - id: aux\n    type: file\n    paths: ['logs/aux.txt']\n"
          "    start_at: beginning\n";
    }
    Replace(dir_ + "/faultline.yaml",
            "rules:\n  paths: [rules]\nhttp:\n  listen: 127.0.0.1:" + std::to_string(port_) +
                "\n  admin_token_file: token\n" + extra_key + "sources:\n" + sources);
  }
  std::string Metrics() {
    std::string body;
    return HttpGet(port_, "/metrics", &body) == 200 ? body : "";
  }

  std::string dir_;
  uint16_t port_ = 0;
};

TEST_F(ReloadLoadTest, HundredReloadsUnderLoadLoseNoLineAndCountNoneTwice) {
  const char* rate_env = std::getenv("FAULTLINE_RELOAD_TEST_RATE");
  const uint64_t rate = rate_env != nullptr ? std::strtoull(rate_env, nullptr, 10) : 100000;
  // The RSS bound below is the agent's, not ASan's quarantine of freed rule packs.
  testing::WithoutAsanQuarantine();
  Daemon agent({"run", "-c", dir_ + "/faultline.yaml"});
  ASSERT_TRUE(Eventually([&] { return !Metrics().empty(); })) << agent.Stderr();

  // The writer: appends numbered lines at `rate`, in slices every 5 ms.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0};
  const int fd = open((dir_ + "/logs/load.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  ASSERT_GE(fd, 0);
  const auto write_start = Clock::now();
  std::thread writer([&] {
    std::string chunk;
    uint64_t n = 0;
    while (!stop) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - write_start).count();
      const auto due = static_cast<uint64_t>(elapsed * static_cast<double>(rate));
      chunk.clear();
      for (; n < due && chunk.size() < (1 << 20); ++n) {
        if (n % kHitEvery == kHitEvery - 1) {
          chunk += "[rank0] RuntimeError: FAULT-HIT-" + std::to_string(n) + " in step\n";
        } else {
          chunk += "step " + std::to_string(n) + " loss=0.3141 lr=3e-4 tokens/s=123456 ok\n";
        }
      }
      if (!chunk.empty() &&
          ::write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) {
        ADD_FAILURE() << "short write";
        return;
      }
      written = n;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  // The prober: the longest /healthz round trip is the longest the loop did not answer.
  std::atomic<double> longest_probe_ms{0};
  std::thread prober([&] {
    while (!stop) {
      const auto t0 = Clock::now();
      std::string body;
      HttpGet(port_, "/healthz", &body);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (ms > longest_probe_ms) longest_probe_ms = ms;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });

  long rss_early = 0;
  int ok = 0;
  int failed = 0;
  const auto reloads_start = Clock::now();
  for (int i = 0; i < kReloads; ++i) {
    const bool valid = i % 2 == 0;
    const bool by_http = (i / 2) % 2 == 1;
    std::filesystem::remove(dir_ + "/rules/broken.yaml");
    if (valid) {
      // Rules and sources come and go; the load source and t.hit never change.
      const bool extra = (i / 2) % 2 == 0;
      if (extra) {
        Replace(dir_ + "/rules/extra.yaml", Rule("t.extra" + std::to_string(i), "EXTRA-[0-9]+"));
      } else {
        std::filesystem::remove(dir_ + "/rules/extra.yaml");
      }
      WriteConfig(/*aux=*/extra, "");
    } else if ((i / 2) % 2 == 0) {
      Replace(dir_ + "/rules/broken.yaml", Rule("t.broken", "(unclosed"));
    } else {
      WriteConfig(false, "colour: red\n");
    }
    if (by_http) {
      std::string body;
      const int status = HttpPost(port_, "/-/reload", kLoadToken, &body);
      ASSERT_EQ(valid ? 200 : 422, status) << i << ": " << body << agent.Stderr();
    } else {
      ASSERT_EQ(0, kill(agent.pid(), SIGHUP));
      ASSERT_TRUE(Eventually([&] {
        const std::string m = Metrics();
        return testing::Sample(m, "faultline_config_reloads_total{result=\"success\"}") +
                   testing::Sample(m, "faultline_config_reloads_total{result=\"failure\"}") ==
               i + 1;
      })) << i
          << agent.Stderr();
    }
    (valid ? ok : failed) += 1;
    if (i == 9) rss_early = RssKiB(agent.pid());
  }
  const double reload_seconds = std::chrono::duration<double>(Clock::now() - reloads_start).count();
  stop = true;
  writer.join();
  prober.join();
  close(fd);
  const double write_seconds = std::chrono::duration<double>(Clock::now() - write_start).count();
  const uint64_t lines = written;
  const uint64_t hits = lines / kHitEvery;

  ASSERT_TRUE(Eventually(
      [&] { return testing::Sample(Metrics(), "faultline_lines_total{source=\"load\"}") == lines; },
      std::chrono::seconds(60)))
      << "counted " << testing::Sample(Metrics(), "faultline_lines_total{source=\"load\"}")
      << " of " << lines;
  const double catch_up_seconds = std::chrono::duration<double>(Clock::now() - write_start).count();
  const std::string metrics = Metrics();
  EXPECT_EQ(
      static_cast<double>(hits),
      testing::Sample(metrics,
                      "faultline_signature_matches_total{severity=\"error\",signature=\"t.hit\"}"));
  EXPECT_EQ(ok, testing::Sample(metrics, "faultline_config_reloads_total{result=\"success\"}"));
  EXPECT_EQ(failed, testing::Sample(metrics, "faultline_config_reloads_total{result=\"failure\"}"));
  EXPECT_TRUE(agent.running());

  // The longest time a reload held the loop, as the agent logged it.
  double longest_apply_ms = 0;
  const std::string log = agent.Stderr();
  const std::regex applied(R"(\(([0-9.]+) ms on the loop\))");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), applied);
       it != std::sregex_iterator(); ++it) {
    longest_apply_ms = std::max(longest_apply_ms, std::stod((*it)[1]));
  }
  const long rss_late = RssKiB(agent.pid());
  std::printf(
      "reload under load: %d reloads (%d applied, %d rejected) in %.1f s; %llu lines written in "
      "%.1f s (%.0f lines/s asked, %.0f written), all counted %.1f s after the start (%.0f "
      "lines/s); longest reload on the loop %.2f ms; longest /healthz round trip %.1f ms; RSS "
      "after 10 reloads %ld KiB, after %d %ld KiB\n",
      kReloads, ok, failed, reload_seconds, static_cast<unsigned long long>(lines), write_seconds,
      static_cast<double>(rate), static_cast<double>(lines) / write_seconds, catch_up_seconds,
      static_cast<double>(lines) / catch_up_seconds, longest_apply_ms, longest_probe_ms.load(),
      rss_early, kReloads, rss_late);
  // 90 reloads after the early reading must not have grown the agent: 16 MiB is far more than
  // any buffer it keeps, and far less than a leaked rule pack per reload would add.
  EXPECT_LT(rss_late - rss_early, 16 * 1024) << "RSS grew from " << rss_early << " to " << rss_late;
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

}  // namespace
}  // namespace faultline
