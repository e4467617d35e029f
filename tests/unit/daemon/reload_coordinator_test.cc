#include "agent/daemon/reload_coordinator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/wait.h"

namespace faultline {
namespace {

using ::testing::HasSubstr;

namespace fs = std::filesystem;

class ReloadCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("faultline_reload_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "rules");
    config_ = (dir_ / "faultline.yaml").string();
    std::ofstream(config_) << "rules:\n  paths: [rules]\n";
    std::ofstream(dir_ / "rules" / "a.yaml")
        << "id: t.a\ntitle: t\nseverity: error\ncategory: build\nmatch: ['boom']\n"
           "root_cause: r\nfix: f\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A coordinator whose apply records what it got.
  std::unique_ptr<ReloadCoordinator> Make(ReloadCoordinator::Loader loader = LoadConfigAndRules) {
    return std::make_unique<ReloadCoordinator>(
        io_, config_,
        [this](LoadedConfig loaded, std::string* summary) {
          applied_.push_back(loaded.rules->rules().size());
          *summary = "applied";
          return std::vector<std::string>{};
        },
        [this](const ReloadResult& r) { results_.push_back(r); }, std::move(loader));
  }
  // Runs the loop until `n` results came.
  bool RunUntilResults(size_t n) {
    return testing::RunUntil(io_, [&] { return results_.size() >= n; });
  }

  fs::path dir_;
  std::string config_;
  asio::io_context io_;
  std::vector<size_t> applied_;
  std::vector<ReloadResult> results_;
};

TEST_F(ReloadCoordinatorTest, AValidConfigIsAppliedOnTheLoopAndAnInvalidOneIsNot) {
  auto reloads = Make();
  const std::thread::id loop = std::this_thread::get_id();
  std::thread::id done_on;
  reloads->Request("test", [&](const ReloadResult&) { done_on = std::this_thread::get_id(); });
  ASSERT_TRUE(RunUntilResults(1));
  EXPECT_TRUE(results_[0].ok) << ::testing::PrintToString(results_[0].errors);
  EXPECT_EQ("test", results_[0].trigger);
  EXPECT_EQ("applied", results_[0].summary);
  EXPECT_EQ(loop, done_on);
  EXPECT_EQ(std::vector<size_t>{1}, applied_);

  std::ofstream(dir_ / "rules" / "b.yaml")
      << "id: t.b\ntitle: t\nseverity: error\ncategory: build\nmatch: ['(x']\n"
         "root_cause: r\nfix: f\n";
  reloads->Request("test");
  ASSERT_TRUE(RunUntilResults(2));
  EXPECT_FALSE(results_[1].ok);
  ASSERT_FALSE(results_[1].errors.empty());
  EXPECT_THAT(results_[1].errors[0], HasSubstr((dir_ / "rules" / "b.yaml").string() + ":"));
  EXPECT_EQ(1u, applied_.size());  // nothing of it was applied
}

TEST_F(ReloadCoordinatorTest, RequestsDuringALoadShareOneMoreLoad) {
  std::atomic<int> loads{0};
  auto reloads = Make([&](const std::string& path) {
    ++loads;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a slow compile
    return LoadConfigAndRules(path);
  });
  int answered = 0;
  for (int i = 0; i < 5; ++i) reloads->Request("burst", [&](const ReloadResult&) { ++answered; });
  ASSERT_TRUE(RunUntilResults(2));
  EXPECT_EQ(5, answered);
  EXPECT_EQ(2, loads.load());  // the first, and one for the four that came during it
}

TEST_F(ReloadCoordinatorTest, ALoadOverTheTimeBudgetIsRejectedAndItsLateResultDropped) {
  auto reloads = Make([&](const std::string& path) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return LoadConfigAndRules(path);
  });
  reloads->SetBudget({.timeout = std::chrono::milliseconds(200), .max_memory_bytes = 1 << 30});
  reloads->Request("slow");
  ASSERT_TRUE(RunUntilResults(1));
  EXPECT_FALSE(results_[0].ok);
  EXPECT_THAT(results_[0].errors.at(0), HasSubstr("key 'reload.timeout_ms'"));
  // Still compiling: a new request is answered at once rather than queued behind it.
  reloads->Request("again");
  ASSERT_TRUE(RunUntilResults(2));
  EXPECT_THAT(results_[1].errors.at(0), HasSubstr("still compiling"));
  // The late result is dropped, never applied.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1800);
  while (std::chrono::steady_clock::now() < until) {
    io_.restart();
    io_.run_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(applied_.empty());
  EXPECT_EQ(2u, results_.size());
}

TEST_F(ReloadCoordinatorTest, ALoadOverTheMemoryBudgetIsRejected) {
  {
    // The budget is measured with glibc's mallinfo2, which a sanitizer's allocator bypasses.
    const size_t before = mallinfo2().hblkhd + mallinfo2().uordblks;
    const std::string probe(64 << 20, 'p');
    const size_t after = mallinfo2().hblkhd + mallinfo2().uordblks;
    if (after < before + (32 << 20))
      GTEST_SKIP() << "allocations are not visible to mallinfo2 here";
  }
  auto reloads = Make([&](const std::string& path) {
    Result<LoadedConfig> loaded = LoadConfigAndRules(path);
    // A pack that holds 64 MiB once loaded.
    if (loaded.ok()) loaded.value().warnings.push_back(std::string(64 << 20, 'x'));
    return loaded;
  });
  reloads->SetBudget({.timeout = std::chrono::seconds(20), .max_memory_bytes = 16 << 20});
  reloads->Request("big");
  ASSERT_TRUE(RunUntilResults(1));
  EXPECT_FALSE(results_[0].ok);
  EXPECT_THAT(results_[0].errors.at(0), HasSubstr("key 'reload.max_memory_bytes'"));
  EXPECT_TRUE(applied_.empty());
}

}  // namespace
}  // namespace faultline
