// Precision of the bundled pack on real healthy and near-miss logs (tests/healthy/<domain>/*.log:
// installs that succeed with warnings, NCCL INFO chatter, batch-size finders that recover from an
// OOM, ...): scanning any of them must raise nothing at error severity or worse. A failure lists
// every offending file with the rule, line and text, so a rule author sees at once what to fix.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/process.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using testing::RunFaultline;

const std::string kHealthyRules = std::string(FAULTLINE_SOURCE_DIR) + "/rules";
const fs::path kHealthy = fs::path(FAULTLINE_SOURCE_DIR) / "tests" / "healthy";

// The issue that asked for these logs wants at least this many kept as tests.
constexpr size_t kMinHealthyLogs = 20;

std::vector<fs::path> HealthyLogs() {
  std::vector<fs::path> logs;
  for (const auto& entry : fs::recursive_directory_iterator(kHealthy)) {
    if (entry.is_regular_file() && entry.path().extension() == ".log") logs.push_back(entry.path());
  }
  std::sort(logs.begin(), logs.end());
  return logs;
}

// Error-level findings of one scan, as "file:line: rule (severity, N lines): text".
std::vector<std::string> ErrorFindings(const std::vector<fs::path>& logs) {
  std::vector<std::string> args = {"scan", "--rules", kHealthyRules, "--format", "json"};
  for (const fs::path& log : logs) args.push_back(log.string());
  const auto r = RunFaultline(args);
  if (r.exit_code != 0 && r.exit_code != 1) {
    return {"scan exited " + std::to_string(r.exit_code) + ": " + r.err};
  }
  const auto doc = nlohmann::json::parse(r.out);
  std::vector<std::string> found;
  for (const auto& f : doc["findings"]) {
    const std::string severity = f["severity"];
    if (severity != "error" && severity != "critical") continue;
    found.push_back(fs::relative(f["first"]["file"].get<std::string>(), kHealthy).string() + ":" +
                    std::to_string(f["first"]["line"].get<int>()) + ": " +
                    f["signature"].get<std::string>() + " (" + severity + ", " +
                    std::to_string(f["count"].get<int>()) + " lines): " +
                    f["first"]["text"].get<std::string>().substr(0, 160));
  }
  return found;
}

TEST(HealthyLogs, NoneRaisesAnErrorLevelFinding) {
  const std::vector<fs::path> logs = HealthyLogs();
  EXPECT_GE(logs.size(), kMinHealthyLogs);
  // One scan of them all is the fast check; only when it finds something is each file scanned on
  // its own, so that every offending file is named, not just the first per rule.
  if (ErrorFindings(logs).empty()) return;
  std::vector<std::string> offending;
  for (const fs::path& log : logs) {
    for (std::string& o : ErrorFindings({log})) offending.push_back(std::move(o));
  }
  std::string list;
  for (const std::string& o : offending) list += "\n  " + o;
  ADD_FAILURE() << offending.size() << " error-level findings on healthy logs:" << list;
}

}  // namespace
}  // namespace faultline
