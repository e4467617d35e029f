// `faultline run` tailing files the way production hosts hold them: thousands of files under a
// small descriptor limit, Kubernetes' symlinked container logs rotated behind the link, logrotate's
// copytruncate under a glob that also matches the copies, and a FIFO where a log used to be. Each
// test counts lines exactly through /metrics of the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/process.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing::Daemon;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::HttpGet;
using ::testing::Not;

constexpr char kRule[] = R"(id: t.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory']
root_cause: r
fix: f
)";
constexpr char kOom[] =
    "faultline_signature_matches_total{severity=\"error\",signature=\"t.cuda_oom\"}";
constexpr char kLines[] = "faultline_lines_total{source=\"logs\"}";

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class TailingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ + "/rules");
    fs::create_directories(dir_ + "/logs");
    std::ofstream(dir_ + "/rules/t.yaml") << kRule;
    port_ = testing::FreePort();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A config with one source `logs` over `paths`; `extra` is added to the source verbatim.
  std::string WriteConfig(const std::string& paths, const std::string& extra = "") {
    const std::string path = dir_ + "/faultline.yaml";
    std::ofstream(path) << "rules:\n  paths: [rules]\nhttp:\n  listen: 127.0.0.1:" << port_
                        << "\nsources:\n  - id: logs\n    type: file\n    paths: [" << paths
                        << "]\n    start_at: beginning\n"
                        << extra;
    return path;
  }
  void WriteFile(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
  }
  void Append(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::app | std::ios::binary) << text << std::flush;
  }
  std::string Metrics() {
    std::string body;
    return HttpGet(port_, "/metrics", &body) == 200 ? body : "";
  }
  // Waits until both counters read `lines` and `hits`, then checks they stay there (nothing
  // counted twice a moment later).
  bool CountsReach(double lines, double hits,
                   std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    const auto reached = [&] {
      const std::string m = Metrics();
      return testing::Sample(m, kLines) == lines && testing::Sample(m, kOom) == hits;
    };
    if (!Eventually(reached, timeout)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return reached();
  }
  std::string Counts() {
    const std::string m = Metrics();
    return "lines " + std::to_string(testing::Sample(m, kLines)) + ", hits " +
           std::to_string(testing::Sample(m, kOom));
  }

  std::string dir_;
  uint16_t port_ = 0;
};

TEST_F(TailingTest, TenThousandFilesUnderADescriptorLimitOf256AreCountedExactly) {
  constexpr int kFiles = 10000;
  const auto name = [](int i) { return "logs/f" + std::to_string(i) + ".log"; };
  for (int i = 0; i < kFiles; ++i) Append(name(i), "start\n");
  Daemon agent({"run", "-c", WriteConfig("'logs/*.log'", "    poll_interval_ms: 100\n")},
               /*max_open_files=*/256);

  // /metrics is asked every 50 ms for the whole test and must always answer.
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<int> answered{0};
  std::thread prober([&] {
    while (!done) {
      std::string body;
      if (HttpGet(port_, "/metrics", &body) == 200) {
        ++answered;
      } else if (answered > 0) {
        ++failures;  // before the first answer the agent may still be starting
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  ASSERT_TRUE(CountsReach(kFiles, 0)) << Counts() << agent.Stderr().substr(0, 4000);
  for (int round = 1; round <= 2; ++round) {
    for (int i = 0; i < kFiles; ++i) Append(name(i), "CUDA out of memory\n");
    EXPECT_TRUE(CountsReach(kFiles * (round + 1.0), kFiles * round))
        << "round " << round << ": " << Counts();
  }
  done = true;
  prober.join();
  EXPECT_EQ(0, failures);
  EXPECT_GT(answered, 10);
  const std::string log = agent.Stderr();
  EXPECT_THAT(log, Not(HasSubstr("Too many open files")));
  EXPECT_TRUE(agent.running());
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(TailingTest, KubeletLinkedLogRotatedTenTimesFiftyMillisecondsApartIsCountedWhole) {
  fs::create_directories(dir_ + "/pods/uid/c");
  fs::create_directories(dir_ + "/containers");
  Append("pods/uid/c/0.log", "");
  fs::create_symlink(dir_ + "/pods/uid/c/0.log", dir_ + "/containers/x.log");
  // Polling and rescans never come during the test: inotify alone must deliver every line.
  Daemon agent({"run", "-c",
                WriteConfig("'containers/*.log'",
                            "    poll_interval_ms: 60000\n    rescan_interval_ms: 600000\n")});
  ASSERT_TRUE(Eventually([&] { return agent.Stderr().find("following") != std::string::npos; }))
      << agent.Stderr();
  for (int generation = 0; generation < 10; ++generation) {
    std::string lines;
    for (int i = 0; i < 1000; ++i) {
      lines += i % 100 == 0 ? "CUDA out of memory\n" : "step " + std::to_string(i) + "\n";
    }
    Append("pods/uid/c/0.log", lines);
    fs::rename(dir_ + "/pods/uid/c/0.log",
               dir_ + "/pods/uid/c/0.log.20240131-12000" + std::to_string(generation));
    Append("pods/uid/c/0.log", "");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(CountsReach(10000, 100, std::chrono::seconds(20))) << Counts() << agent.Stderr();
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

// What the shipped DaemonSet tails: /var/log/containers/*.log in the container runtime's format
// (CRI: "<time> <stream> <P|F> <message>"), or Docker's json-file records. With the default
// input format each file is read as what its program printed: a rule anchored at the start of a
// line matches under the prefix or inside the JSON, a message the runtime split into records is
// one line counted once, and a plain file beside them is read as it is.
TEST_F(TailingTest, AContainerRuntimeLogIsMatchedAsWhatTheProgramPrinted) {
  WriteFile("rules/anchored.yaml",
            "id: t.value_error\ntitle: ValueError\nseverity: error\ncategory: runtime\n"
            "match: ['^ValueError: ']\nroot_cause: r\nfix: f\n");
  fs::create_directories(dir_ + "/containers");
  Append("containers/trainer.log", "");
  Append("containers/plain.log", "");
  Append("containers/docker.log", "");
  Daemon agent({"run", "-c", WriteConfig("'containers/*.log'")});
  ASSERT_TRUE(Eventually([&] { return agent.Stderr().find("following") != std::string::npos; }))
      << agent.Stderr();
  Append("containers/trainer.log",
         "2024-05-01T12:00:00.100000000Z stderr F Traceback (most recent call last):\n"
         "2024-05-01T12:00:00.200000000Z stderr F ValueError: bad input\n"
         "2024-05-01T12:00:00.300000000Z stderr P torch.OutOfMemoryError: CUDA out of mem\n");
  Append("containers/trainer.log",
         "2024-05-01T12:00:00.300000000Z stderr F ory. Tried to allocate 2.00 GiB\n");
  Append("containers/plain.log", "ValueError: plain\n");
  // Docker's json-file driver (a dockershim node, or `docker run` on a host).
  Append("containers/docker.log",
         "{\"log\":\"Traceback (most recent call last):\\n\",\"stream\":\"stderr\"}\n"
         "{\"log\":\"\\u001b[31mValueError: \\\"x\\\"\\n\",\"stream\":\"stderr\"}\n");
  constexpr char kValueError[] =
      "faultline_signature_matches_total{severity=\"error\",signature=\"t.value_error\"}";
  const auto reached = [&] {
    const std::string m = Metrics();
    return testing::Sample(m, kLines) == 6 && testing::Sample(m, kOom) == 1 &&
           testing::Sample(m, kValueError) == 3;
  };
  EXPECT_TRUE(Eventually(reached, std::chrono::seconds(20)))
      << Counts() << ", value errors " << testing::Sample(Metrics(), kValueError) << agent.Stderr();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(reached()) << Counts();
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

// logrotate copytruncate: copy app.log to app.log.1 (shifting older copies up), then truncate
// app.log in place while its writer goes on. The glob app.log* matches every copy.
class CopytruncateTest : public TailingTest {
 protected:
  void RotateByCopyTruncate(int keep) {
    for (int n = keep - 1; n >= 1; --n) {
      const std::string from = dir_ + "/logs/app.log." + std::to_string(n);
      if (fs::exists(from)) fs::rename(from, dir_ + "/logs/app.log." + std::to_string(n + 1));
    }
    fs::copy_file(dir_ + "/logs/app.log", dir_ + "/logs/app.log.1",
                  fs::copy_options::overwrite_existing);
    fs::resize_file(dir_ + "/logs/app.log", 0);
  }
  // Five rotations, each after 200 lines (two hits) were written and counted.
  void WriteAndRotate(Daemon& agent) {
    for (int rotation = 1; rotation <= 5; ++rotation) {
      std::string lines;
      for (int i = 0; i < 200; ++i) {
        lines += i % 100 == 50 ? "CUDA out of memory, rotation " + std::to_string(rotation) + "\n"
                               : "step " + std::to_string(i) + " of rotation " +
                                     std::to_string(rotation) + "\n";
      }
      Append("logs/app.log", lines);
      ASSERT_TRUE(CountsReach(200.0 * rotation, 2.0 * rotation)) << Counts() << agent.Stderr();
      RotateByCopyTruncate(/*keep=*/3);
    }
    Append("logs/app.log", "after the last rotation\n");
    EXPECT_TRUE(CountsReach(1001, 10)) << Counts() << agent.Stderr();
  }
};

TEST_F(CopytruncateTest, CopiesAreSkippedByTheDefaultExclude) {
  Daemon agent({"run", "-c", WriteConfig("'logs/app.log*'", "    poll_interval_ms: 50\n")});
  WriteAndRotate(agent);
  const std::string log = agent.Stderr();
  EXPECT_THAT(log, HasSubstr("also matches rotated names such as app.log.1; exclude skips them"));
  EXPECT_THAT(log, Not(HasSubstr("following " + dir_ + "/logs/app.log.1")));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(CopytruncateTest, WithoutExcludeCopiesAreRecognisedAndNotCountedAgain) {
  Daemon agent(
      {"run", "-c", WriteConfig("'logs/app.log*'", "    exclude: []\n    poll_interval_ms: 50\n")});
  WriteAndRotate(agent);
  const std::string log = agent.Stderr();
  EXPECT_EQ(1u, Count(log, "also matches rotated copies such as app.log.1"));
  EXPECT_THAT(log, HasSubstr("holds a copy of"));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

TEST_F(TailingTest, AFifoSwappedInForALogNeverStopsTheAgent) {
  Append("logs/a.log", "CUDA out of memory\n");
  Daemon agent({"run", "-c", WriteConfig("'logs/*.log'", "    poll_interval_ms: 50\n")});
  ASSERT_TRUE(CountsReach(1, 1)) << Counts() << agent.Stderr();
  fs::rename(dir_ + "/logs/a.log", dir_ + "/logs/a.old");
  ASSERT_EQ(0, mkfifo((dir_ + "/logs/a.log").c_str(), 0600));  // no writer: an open would wait
  Append("logs/b.log", "step\nCUDA out of memory\n");
  EXPECT_TRUE(CountsReach(3, 2)) << Counts() << agent.Stderr();
  EXPECT_EQ(1u, Count(agent.Stderr(), "is not a regular file"));
  std::string body;
  EXPECT_EQ(200, HttpGet(port_, "/healthz", &body));
  EXPECT_EQ(0, agent.Stop(SIGTERM));
}

}  // namespace
}  // namespace faultline
