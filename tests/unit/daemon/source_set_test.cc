#include "agent/daemon/source_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "tests/support/wait.h"

namespace faultline {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

namespace fs = std::filesystem;
using testing::RunUntil;

// What each stream received, by "source id:path" and generation.
struct Stream {
  std::string bytes;
  bool ended = false;
};

class SourceSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("faultline_source_set_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    descriptors_ = std::make_shared<DescriptorBudget>(64);
  }
  void TearDown() override { fs::remove_all(dir_); }

  SourceContext ContextFor(const Config& section) {
    return SourceContext{
        .io = io_,
        .config = section,
        .consumers = [this](const std::string& id) -> StreamConsumerFactory {
          return [this, id](const std::string& path) {
            auto stream = std::make_shared<Stream>();
            streams_.emplace(id + ":" + fs::path(path).filename().string(), stream);
            struct Consumer : StreamConsumer {
              std::shared_ptr<Stream> s;
              void OnBytes(std::string_view b) override { s->bytes.append(b); }
              void OnQuiet() override {}
              void OnEnd() override { s->ended = true; }
            };
            auto c = std::make_unique<Consumer>();
            c->s = stream;
            return c;
          };
        },
        .labeled_consumers = {},  // no syslog sources here
        .descriptors = descriptors_,
        .ended = [] {},  // files never end
    };
  }

  FileSourceConfig File(std::string id, std::string name) {
    std::ofstream(dir_ / name, std::ios::app) << id << " line\n";
    FileSourceConfig source;
    source.id = std::move(id);
    source.paths = {(dir_ / name).string()};
    source.start_at = StartAt::kBeginning;
    source.poll_interval_ms = 20;
    return source;
  }

  // Runs the loop until the latest stream of each of `names` has bytes.
  bool Read(std::initializer_list<std::string> names) {
    return RunUntil(io_, [&] {
      for (const std::string& name : names) {
        auto [begin, end] = streams_.equal_range(name);
        if (begin == end || std::prev(end)->second->bytes.empty()) return false;
      }
      return true;
    });
  }

  size_t Generations(const std::string& name) const { return streams_.count(name); }

  fs::path dir_;
  asio::io_context io_;
  std::shared_ptr<DescriptorBudget> descriptors_;
  std::multimap<std::string, std::shared_ptr<Stream>> streams_;
};

TEST_F(SourceSetTest, ApplyStartsAddedStopsRemovedAndLeavesUnchangedSourcesRunning) {
  SourceSet set([this](const Config& section) { return ContextFor(section); });
  Config first;
  first.file_sources = {File("a", "a.log"), File("b", "b.log")};
  const SourceSet::Changes started = set.Apply(first);
  EXPECT_THAT(started.started, ElementsAre("a", "b"));
  ASSERT_TRUE(Read({"a:a.log", "b:b.log"}));

  Config second;
  second.file_sources = {File("b", "b.log"), File("c", "c.log")};
  const SourceSet::Changes changes = set.Apply(second);
  EXPECT_THAT(changes.started, ElementsAre("c"));
  EXPECT_THAT(changes.stopped, ElementsAre("a"));
  EXPECT_THAT(changes.restarted, IsEmpty());
  ASSERT_TRUE(Read({"c:c.log"}));
  EXPECT_TRUE(streams_.find("a:a.log")->second->ended);
  // b kept its one stream and read on in it: nothing read twice, nothing ended.
  ASSERT_EQ(1u, Generations("b:b.log"));
  const Stream& b = *streams_.find("b:b.log")->second;
  EXPECT_FALSE(b.ended);
  std::ofstream(dir_ / "b.log", std::ios::app) << "more\n";
  ASSERT_TRUE(RunUntil(io_, [&] { return b.bytes == "b line\nb line\nmore\n"; }));

  std::vector<std::string> ids;
  for (const auto& [id, status] : set.Status()) {
    ids.push_back(id);
    EXPECT_EQ("file", status.type);
    ASSERT_EQ(1u, status.streams.size());
    EXPECT_EQ(0u, status.streams[0].lag_bytes);
  }
  EXPECT_THAT(ids, ElementsAre("b", "c"));
}

TEST_F(SourceSetTest, ASourceWhoseSectionChangedIsRestarted) {
  SourceSet set([this](const Config& section) { return ContextFor(section); });
  Config first;
  first.file_sources = {File("a", "a.log")};
  set.Apply(first);
  ASSERT_TRUE(Read({"a:a.log"}));
  Config second;
  second.file_sources = {File("a", "a2.log")};
  const SourceSet::Changes changes = set.Apply(second);
  EXPECT_THAT(changes.restarted, ElementsAre("a"));
  EXPECT_THAT(changes.started, IsEmpty());
  ASSERT_TRUE(Read({"a:a2.log"}));
  EXPECT_TRUE(streams_.find("a:a.log")->second->ended);
  set.Stop();
  EXPECT_EQ(0u, set.size());
  EXPECT_TRUE(streams_.find("a:a2.log")->second->ended);
}

}  // namespace
}  // namespace faultline
