// `faultline scan` on container logs: every real log of the corpora, written as containerd (the
// CRI format Kubernetes keeps under /var/log/pods) or Docker's json-file driver would write it,
// gives the findings of the log itself; and `--input-format` chooses or refuses a format.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "tests/integration/agent_folder.h"
#include "tests/integration/process.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::RunFaultline;

const std::string kPackRules = std::string(FAULTLINE_SOURCE_DIR) + "/rules";

// containerd's CRI logger: one record per line the program printed, a line longer than its
// 16 KiB buffer split into P records ended by an F one; stdout and stderr interleaved.
constexpr size_t kRuntimeBufferBytes = 16 * 1024;

std::string AsContainerLog(const std::string& text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  size_t line_number = 0;
  for (size_t at = 0; at < text.size(); ++line_number) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string_view stream = line_number % 3 == 0 ? "stdout" : "stderr";
    size_t piece = at;
    do {
      const size_t n = std::min(kRuntimeBufferBytes, end - piece);
      const bool partial = piece + n < end;
      out += "2024-05-01T12:00:00." + std::to_string(100000000 + line_number % 900000000) + "Z ";
      out += stream;
      out += partial ? " P " : " F ";
      out.append(text, piece, n);
      out += '\n';
      piece += n;
    } while (piece < end);
    at = end + 1;
  }
  return out;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What a report says, without where (file names and line numbers differ between the two forms).
using FindingKey = std::tuple<std::string, int, std::string, std::string, std::string>;
std::vector<FindingKey> Findings(const nlohmann::json& report) {
  std::vector<FindingKey> keys;
  for (const auto& f : report["findings"]) {
    keys.emplace_back(f["signature"], f["count"].get<int>(), f["severity"], f["role"],
                      f["first"]["text"]);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

// Docker's json-file driver: one JSON object per line the program printed, "log" first with the
// line and its "\n"; a line longer than its 16 KiB buffer split into records whose "log" has no
// "\n". Go's encoder writes invalid UTF-8 as U+FFFD, as nlohmann's replace handler does.
std::string AsDockerLog(const std::string& text) {
  std::string out;
  out.reserve(text.size() + text.size() / 2);
  size_t line_number = 0;
  for (size_t at = 0; at < text.size(); ++line_number) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    size_t piece = at;
    do {
      const size_t n = std::min(kRuntimeBufferBytes, end - piece);
      const bool partial = piece + n < end;
      nlohmann::ordered_json record;
      record["log"] = text.substr(piece, n) + (partial ? "" : "\n");
      record["stream"] = line_number % 3 == 0 ? "stdout" : "stderr";
      record["time"] = "2024-05-01T12:00:00.123456789Z";
      out += record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out += '\n';
      piece += n;
    } while (piece < end);
    at = end + 1;
  }
  return out;
}

class ContainerLogTest : public testing::AgentFolderTest {
 protected:
  // Scans every log of the corpora as it is and as `write` makes it, in one run each, and
  // compares what the two reports found.
  void ExpectTheFindingsOfTheLogsThemselves(std::string (*write)(const std::string&)) {
    std::vector<fs::path> logs;
    for (const std::string& root : {std::string(FAULTLINE_SOURCE_DIR) + "/tests/corpus/field",
                                    std::string(FAULTLINE_SOURCE_DIR) + "/../shared/corpus"}) {
      if (!fs::exists(root)) continue;  // a user's clone has no shared/ corpus
      for (const auto& entry : fs::recursive_directory_iterator(root)) {
        const std::string ext = entry.path().extension();
        if (entry.is_regular_file() && ext != ".tsv" && ext != ".md") logs.push_back(entry.path());
      }
    }
    std::sort(logs.begin(), logs.end());
    ASSERT_GE(logs.size(), 60u);
    std::vector<std::string> plain = {"scan", "--rules", kPackRules, "--format", "json"};
    std::vector<std::string> wrapped = plain;
    for (size_t i = 0; i < logs.size(); ++i) {
      plain.push_back(logs[i].string());
      wrapped.push_back(WriteFile("pods/" + std::to_string(i) + ".log", write(ReadAll(logs[i]))));
    }
    const auto from_plain = RunFaultline(plain);
    const auto from_wrapped = RunFaultline(wrapped);
    ASSERT_NE(2, from_plain.exit_code) << from_plain.err;
    ASSERT_NE(2, from_wrapped.exit_code) << from_wrapped.err;
    const auto a = nlohmann::json::parse(from_plain.out);
    const auto b = nlohmann::json::parse(from_wrapped.out);
    ASSERT_GE(a["findings"].size(), 50u);
    EXPECT_EQ(Findings(a), Findings(b));
    EXPECT_EQ(a["unrecognised"].size(), b["unrecognised"].size());
    EXPECT_EQ(a["unrecognised_lines"], b["unrecognised_lines"]);
    EXPECT_EQ(a["lines_truncated"], b["lines_truncated"]);
  }
};

TEST_F(ContainerLogTest, EveryCorpusLogWrittenByContainerdGivesTheFindingsOfTheLogItself) {
  ExpectTheFindingsOfTheLogsThemselves(AsContainerLog);
}

TEST_F(ContainerLogTest, EveryCorpusLogWrittenByDockerGivesTheFindingsOfTheLogItself) {
  ExpectTheFindingsOfTheLogsThemselves(AsDockerLog);
}

TEST_F(ContainerLogTest, InputFormatPlainReadsTheRecordsAsTheyAreAndAnUnknownOneIsAUsageError) {
  const std::string log =
      WriteFile("pod.log",
                "2024-05-01T12:00:00.1Z stderr F Traceback (most recent call last):\n"
                "2024-05-01T12:00:00.2Z stderr F   File \"train.py\", line 3, in <module>\n"
                "2024-05-01T12:00:00.3Z stderr F ValueError: the labels do not match the inputs\n");
  const auto named = RunFaultline({"scan", "--rules", kPackRules, "--format", "json", log});
  EXPECT_EQ(1, named.exit_code) << named.err;
  EXPECT_THAT(named.out, HasSubstr("python.exception.uncaught"));

  const auto as_plain = RunFaultline(
      {"scan", "--rules", kPackRules, "--input-format", "plain", "--format", "json", log});
  EXPECT_THAT(as_plain.out, ::testing::Not(HasSubstr("python.exception.uncaught")));

  const auto unknown = RunFaultline({"scan", "--input-format", "journald", log});
  EXPECT_EQ(2, unknown.exit_code);
  EXPECT_THAT(unknown.err,
              HasSubstr("--input-format must be one of auto, plain, cri, docker, not 'journald'"));
}

}  // namespace
}  // namespace faultline
