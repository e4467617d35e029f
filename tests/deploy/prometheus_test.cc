// End to end with the real engines a fleet runs on: Debian's Prometheus, started on loopback by
// the test, scraping a faultline agent the test started, with the scrape config, recording and
// alerting rules of deploy/prometheus/ and the dashboard of deploy/grafana/.
//
// What is asserted: after known failures are written to a tailed log, PromQL
// faultline_signature_matches_total and increase(...) give exactly the counts written; every
// rule loads and evaluates without error; the recording rules produce their series; every
// panel query of the Grafana dashboard returns data (those about metrics other issues are still
// adding must return none, and are printed); a global Prometheus running
// deploy/prometheus/federation.yml receives the recorded series; and FaultlineAgentDown fires in
// /api/v1/alerts once the agent is stopped.
//
// Intervals are shortened so that the test takes ~20 s: scrape and evaluation every second,
// and the `for:` of FaultlineAgentDown 2 s instead of 5 minutes (its expression is unchanged;
// the 5 minutes are covered by promtool test rules, deploy/prometheus/tests/).
//
// Without /usr/bin/prometheus the test fails under CI (CI=true; scripts/install-deps.sh installs
// it) and is skipped elsewhere, naming the package.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <regex>
#include <set>
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
using nlohmann::json;
using testing::Daemon;
using testing::Eventually;
using testing::FreePort;
using testing::HttpGet;

constexpr char kPrometheus[] = "/usr/bin/prometheus";
constexpr char kDeploy[] = FAULTLINE_SOURCE_DIR "/deploy";

// Metrics the dashboard charts and the rules alert on that other issues are adding to the agent.
// A query reading one the agent does not export yet must return nothing, and its panel is
// reported as not checked; once the agent exports it, its panels must return data like the
// others. A metric that is neither exported nor listed here is a typo, and fails the test.
const std::set<std::string>& BeingAdded() {
  static const auto* metrics = new std::set<std::string>{
      "faultline_file_lag_bytes",                                  // lag per source (issue 11)
      "faultline_notifications_total",                             // alert delivery (issue 9)
      "faultline_notification_queue_depth",                        // alert delivery (issue 9)
      "faultline_receiver_disabled",                               // alert delivery (issue 9)
      "faultline_last_successful_notification_timestamp_seconds",  // alert delivery (issue 9)
      "faultline_alert_events_total",                              // alert lifecycle (issue 9)
      "faultline_checkpoints_total",                               // state store (issue 8)
      "faultline_checkpoint_errors_total",                         // state store (issue 8)
      "faultline_checkpoint_duration_seconds_bucket",              // state store (issue 8)
      "faultline_bytes_lost_total",                                // state store (issue 8)
      "faultline_config_reloads_total",                            // hot reload (issue 11)
      "faultline_config_last_reload_successful",                   // hot reload (issue 11)
  };
  return *metrics;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Replaces every match of `pattern` in `text`; fails the test when there is none, so a config
// that changed shape is noticed instead of silently run unshortened.
std::string ReplaceAll(const std::string& text, const std::string& pattern,
                       const std::string& with) {
  const std::regex re(pattern);
  EXPECT_TRUE(std::regex_search(text, re)) << "no '" << pattern << "' to replace";
  return std::regex_replace(text, re, with);
}

std::string UrlEncode(const std::string& s) {
  std::ostringstream out;
  for (const unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out << c;
    } else {
      out << '%' << std::uppercase << std::hex << std::setw(2) << std::setfill('0')
          << static_cast<int>(c) << std::nouppercase << std::dec;
    }
  }
  return out.str();
}

// A program other than faultline, in the background; SIGKILLed on destruction.
class Child {
 public:
  Child(const std::vector<std::string>& args, const fs::path& log) {
    pid_ = fork();
    if (pid_ == 0) {
      std::FILE* out = std::fopen(log.c_str(), "w");
      if (out != nullptr) {
        dup2(fileno(out), 1);
        dup2(fileno(out), 2);
      }
      std::vector<char*> argv;
      std::vector<std::string> storage = args;
      for (auto& a : storage) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

 private:
  pid_t pid_ = -1;
};

class PrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kPrometheus)) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") {
        FAIL() << kPrometheus
               << " is missing: scripts/install-deps.sh installs Debian's prometheus";
      }
      GTEST_SKIP() << kPrometheus << " is missing (Debian package prometheus)";
    }
    dir_ = testing::TempDir("prometheus_e2e");
    fs::create_directories(dir_ / "logs");
    fs::create_directories(dir_ / "prometheus" / "targets");
    fs::create_directories(dir_ / "prometheus" / "rules");
    agent_port_ = FreePort();
    prometheus_port_ = FreePort();
    while (prometheus_port_ == agent_port_) prometheus_port_ = FreePort();
  }

  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void StartAgent() {
    const fs::path config = dir_ / "faultline.yaml";
    WriteFile(config, "rules:\n  paths: [" FAULTLINE_SOURCE_DIR
                      "/rules]\n"
                      "http:\n  listen: 127.0.0.1:" +
                          std::to_string(agent_port_) +
                          "\n"
                          "sources:\n"
                          "  - id: train\n    type: file\n    paths: [\"logs/*.log\"]\n"
                          "    start_at: beginning\n    poll_interval_ms: 50\n");
    agent_ = std::make_unique<Daemon>(std::vector<std::string>{"run", "-c", config.string()});
    ASSERT_TRUE(Eventually([&] {
      std::string body;
      return HttpGet(agent_port_, "/readyz", &body) == 200;
    })) << agent_->Stderr();
  }

  // deploy/prometheus/ copied with shortened intervals, the agent as its one file_sd target
  // (host node-a) and Alertmanager pointed at a closed port.
  void StartPrometheus() {
    const fs::path out = dir_ / "prometheus";
    std::string config = ReadFile(fs::path(kDeploy) / "prometheus/prometheus.yml");
    config = ReplaceAll(config, "scrape_interval: 15s", "scrape_interval: 1s");
    config = ReplaceAll(config, "evaluation_interval: 15s", "evaluation_interval: 1s");
    config = ReplaceAll(config, "refresh_interval: 1m", "refresh_interval: 1s");
    config = ReplaceAll(config, "127\\.0\\.0\\.1:9093", "127.0.0.1:" + std::to_string(FreePort()));
    WriteFile(out / "prometheus.yml", config);
    std::string agent_rules =
        ReadFile(fs::path(kDeploy) / "prometheus/rules/faultline-agent.rules.yml");
    // Only FaultlineAgentDown's `for` is shortened (the first `for: 5m` of the file).
    const std::string down =
        "alert: FaultlineAgentDown\n        expr: up{job=\"faultline\"} == 0\n"
        "        for: 5m\n";
    const std::size_t at = agent_rules.find(down);
    ASSERT_NE(std::string::npos, at) << "FaultlineAgentDown changed shape";
    agent_rules.replace(at, down.size(),
                        "alert: FaultlineAgentDown\n        expr: up{job=\"faultline\"} == 0\n"
                        "        for: 2s\n");
    WriteFile(out / "rules/faultline-agent.rules.yml", agent_rules);
    WriteFile(
        out / "rules/faultline-recording.rules.yml",
        ReplaceAll(ReadFile(fs::path(kDeploy) / "prometheus/rules/faultline-recording.rules.yml"),
                   "interval: 1m", "interval: 1s"));
    WriteFile(out / "targets/agent.yml", "- targets: [\"127.0.0.1:" + std::to_string(agent_port_) +
                                             "\"]\n  labels:\n    host: node-a\n");
    prometheus_ = std::make_unique<Child>(
        std::vector<std::string>{
            kPrometheus, "--config.file=" + (out / "prometheus.yml").string(),
            "--storage.tsdb.path=" + (dir_ / "data").string(),
            "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_),
            "--log.level=warn"},
        dir_ / "prometheus.log");
    ASSERT_TRUE(Eventually([&] {
      std::string body;
      return HttpGet(prometheus_port_, "/-/ready", &body) == 200;
    })) << ReadFile(dir_ / "prometheus.log");
  }

  // deploy/prometheus/federation.yml, every second, federating from the Prometheus above as
  // cluster "a"; returns its port.
  uint16_t StartGlobalPrometheus() {
    const fs::path out = dir_ / "global";
    fs::create_directories(out / "federate");
    std::string config = ReadFile(fs::path(kDeploy) / "prometheus/federation.yml");
    config = ReplaceAll(config, "scrape_interval: 1m", "scrape_interval: 1s");
    WriteFile(out / "federation.yml", config);
    WriteFile(out / "federate/local.yml",
              "- targets: [\"127.0.0.1:" + std::to_string(prometheus_port_) +
                  "\"]\n  labels:\n    cluster: a\n");
    const uint16_t port = FreePort();
    global_ = std::make_unique<Child>(
        std::vector<std::string>{kPrometheus, "--config.file=" + (out / "federation.yml").string(),
                                 "--storage.tsdb.path=" + (out / "data").string(),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port),
                                 "--log.level=warn"},
        dir_ / "global.log");
    return port;
  }

  // GET /api/v1/<path> of the Prometheus on `port` (default: the one scraping the agent); the
  // `data` member of a successful answer, else null (and a failure).
  json Api(const std::string& path, uint16_t port = 0) {
    std::string body;
    const int status = HttpGet(port == 0 ? prometheus_port_ : port, "/api/v1/" + path, &body);
    if (status != 200) {
      ADD_FAILURE() << path << ": HTTP " << status << ": " << body;
      return nullptr;
    }
    const json answer = json::parse(body, nullptr, false);
    if (answer.is_discarded() || answer.value("status", "") != "success") {
      ADD_FAILURE() << path << ": " << body;
      return nullptr;
    }
    return answer["data"];
  }

  // The result vector of an instant query, at `time` (seconds) when given.
  json Query(const std::string& promql, const std::string& time = "", uint16_t port = 0) {
    json data =
        Api("query?query=" + UrlEncode(promql) + (time.empty() ? "" : "&time=" + time), port);
    return data.is_null() ? json::array() : data["result"];
  }

  // The value of the single series `promql` selects, or NaN when it selects none.
  double Value(const std::string& promql, const std::string& time = "") {
    const json result = Query(promql, time);
    if (result.size() != 1) return std::nan("");
    return std::stod(result[0]["value"][1].get<std::string>());
  }

  // The agent's own /metrics value of one sample line prefix, or NaN.
  double AgentMetric(const std::string& series) {
    std::string body;
    if (HttpGet(agent_port_, "/metrics", &body) != 200) return std::nan("");
    std::istringstream lines(body);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    }
    return std::nan("");
  }

  fs::path dir_;
  uint16_t agent_port_ = 0;
  uint16_t prometheus_port_ = 0;
  std::unique_ptr<Daemon> agent_;
  std::unique_ptr<Child> prometheus_;
  std::unique_ptr<Child> global_;
};

constexpr char kOom[] = "gpu.cuda.out_of_memory";
constexpr char kTimeLimit[] = "slurm.job.time_limit";

std::string Matches(const std::string& signature) {
  return "faultline_signature_matches_total{job=\"faultline\", host=\"node-a\", signature=\"" +
         signature + "\"}";
}

// The PromQL of every target of every panel, with Grafana's variables as the dashboard's
// defaults would expand them over the test's short history ("All" hosts and severities).
struct PanelQuery {
  std::string panel;  // title (refId)
  std::string expr;
  bool instant = false;
};

std::vector<PanelQuery> DashboardQueries() {
  const json dashboard =
      json::parse(ReadFile(fs::path(kDeploy) / "grafana/dashboards/faultline.json"));
  std::vector<PanelQuery> queries;
  for (const json& panel : dashboard["panels"]) {
    if (panel["type"] == "row") continue;
    for (const json& target : panel["targets"]) {
      std::string expr = target["expr"];
      expr = std::regex_replace(expr, std::regex("\\$__rate_interval"), "10s");
      expr = std::regex_replace(expr, std::regex("\\$__range"), "5m");
      expr = std::regex_replace(expr, std::regex("\\$host"), ".*");
      expr = std::regex_replace(expr, std::regex("\\$severity"), ".*");
      queries.push_back(
          {panel["title"].get<std::string>() + " (" + target["refId"].get<std::string>() + ")",
           expr, target.value("instant", false)});
    }
  }
  return queries;
}

// The metric names an expression reads: faultline_* and up, not the recorded series
// (level:faultline_...:rate5m) that contain such a name.
std::set<std::string> MetricsOf(const std::string& expr) {
  std::set<std::string> names;
  const std::regex name("(^|[^:\\w])(faultline_\\w+|up)(?![:\\w])");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator();
       ++it) {
    names.insert((*it)[2]);
  }
  return names;
}

TEST_F(PrometheusTest, CountsPanelsRulesAndAgentDownAlertAgainstARealPrometheus) {
  StartAgent();
  StartPrometheus();

  // Scraped at least once before any failure: the series exist at 0, as the agent creates them.
  ASSERT_TRUE(Eventually([&] { return Value(Matches(kOom)) == 0.0; }, std::chrono::seconds(30)))
      << ReadFile(dir_ / "prometheus.log");
  EXPECT_EQ(1.0, Value("up{job=\"faultline\", host=\"node-a\"}"));

  // Known failures: three CUDA OOMs and two Slurm time limits among ordinary lines.
  std::ostringstream log;
  for (int i = 0; i < 3; ++i) {
    log << "step " << i << " loss 2.31\n"
        << "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU " << i
        << "; 79.15 GiB total capacity; 75.01 GiB already allocated)\n";
  }
  for (int i = 0; i < 2; ++i) {
    log << "slurmstepd: error: *** JOB 12" << i
        << " ON node07 CANCELLED AT 2026-12-01T10:00:00 DUE TO TIME LIMIT ***\n";
  }
  WriteFile(dir_ / "logs/train.log", log.str());
  const double lines_written = 8;

  ASSERT_TRUE(Eventually(
      [&] {
        return Value(Matches(kOom)) == 3.0 && Value(Matches(kTimeLimit)) == 2.0 &&
               Value("faultline_lines_total{job=\"faultline\", source=\"train\"}") == lines_written;
      },
      std::chrono::seconds(30)))
      << "OOM " << Value(Matches(kOom)) << ", time limit " << Value(Matches(kTimeLimit))
      << ", lines " << Value("faultline_lines_total{source=\"train\"}") << "\n"
      << agent_->Stderr();
  EXPECT_EQ(3.0, AgentMetric("faultline_signature_matches_total{severity=\"error\",signature=\"" +
                             std::string(kOom) + "\"}"));

  // increase() over a window that holds the series from its first sample (0) to its last is the
  // exact count: at the last sample's own timestamp Prometheus extrapolates neither way.
  const json last = Query("timestamp(" + Matches(kOom) + ")");
  ASSERT_EQ(1u, last.size());
  const std::string at = last[0]["value"][1];
  EXPECT_DOUBLE_EQ(3.0, Value("increase(" + Matches(kOom) + "[5m])", at));
  EXPECT_DOUBLE_EQ(2.0, Value("increase(" + Matches(kTimeLimit) + "[5m])", at));
  EXPECT_DOUBLE_EQ(
      5.0, Value("sum(increase(faultline_signature_matches_total{job=\"faultline\"}[5m]))", at));
  EXPECT_DOUBLE_EQ(
      lines_written,
      Value("increase(faultline_lines_total{job=\"faultline\", source=\"train\"}[5m])", at));

  // Every rule has been evaluated without error, and the recording rules produce their series.
  ASSERT_TRUE(Eventually(
      [&] {
        return Value(
                   "host_signature:faultline_signature_matches:rate5m{host=\"node-a\", "
                   "signature=\"" +
                   std::string(kOom) + "\"}") > 0;
      },
      std::chrono::seconds(20)));
  const json groups = Api("rules")["groups"];
  std::size_t rules = 0;
  for (const json& group : groups) {
    for (const json& rule : group["rules"]) {
      ++rules;
      EXPECT_EQ("ok", rule.value("health", "")) << rule.dump();
    }
  }
  EXPECT_GE(rules, 13u);
  EXPECT_FALSE(Query("signature:faultline_signature_matches:rate5m").empty());
  EXPECT_FALSE(Query("host:faultline_lines:rate5m{host=\"node-a\"}").empty());

  // A global Prometheus federates the recorded series (and the agents' up) with a cluster label.
  const uint16_t global = StartGlobalPrometheus();
  EXPECT_TRUE(Eventually(
      [&] {
        std::string body;
        return HttpGet(global, "/-/ready", &body) == 200 &&
               !Query(
                    "host_signature:faultline_signature_matches:rate5m{cluster=\"a\", "
                    "host=\"node-a\","
                    " signature=\"" +
                        std::string(kOom) + "\"}",
                    "", global)
                    .empty() &&
               !Query("up{cluster=\"a\", job=\"faultline\", host=\"node-a\"}", "", global).empty();
      },
      std::chrono::seconds(20)))
      << ReadFile(dir_ / "global.log");
  EXPECT_TRUE(Query("faultline_signature_matches_total", "", global).empty())
      << "the global Prometheus should hold recorded series only";

  // Every metric the rules and the dashboard read is exported or being added (no typo).
  std::string exposition;
  ASSERT_EQ(200, HttpGet(agent_port_, "/metrics", &exposition));
  const auto exported = [&](const std::string& metric) {
    return exposition.find("\n" + metric + "{") != std::string::npos ||
           exposition.find("\n" + metric + " ") != std::string::npos;
  };
  std::string rule_text;
  for (const auto& file : fs::directory_iterator(fs::path(kDeploy) / "prometheus/rules")) {
    rule_text += ReadFile(file.path());
  }
  for (const std::string& m : MetricsOf(rule_text)) {
    if (m == "up") continue;
    EXPECT_TRUE(exported(m) || BeingAdded().count(m))
        << "the rules read " << m << ", which no agent exports";
  }

  // Every dashboard panel returns data, unless what it reads is not exported yet.
  const auto now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::set<std::string> unchecked;
  const std::vector<PanelQuery> queries = DashboardQueries();
  EXPECT_GE(queries.size(), 20u);
  for (const PanelQuery& q : queries) {
    bool available = false;
    for (const std::string& m : MetricsOf(q.expr)) {
      if (m == "up" || exported(m)) {
        available = true;
      } else {
        EXPECT_TRUE(BeingAdded().count(m))
            << "panel '" << q.panel << "' reads " << m << ", which no agent exports";
      }
    }
    json result;
    if (q.instant) {
      result = Query(q.expr);
    } else {
      std::ostringstream range;
      range << std::fixed << std::setprecision(3) << "query_range?query=" << UrlEncode(q.expr)
            << "&start=" << now - 60 << "&end=" << now << "&step=1";
      const json data = Api(range.str());
      result = data.is_null() ? json::array() : data["result"];
    }
    if (available) {
      EXPECT_FALSE(result.empty()) << "panel '" << q.panel << "' has no data: " << q.expr;
    } else {
      EXPECT_TRUE(result.empty()) << q.panel << ": " << q.expr;
      unchecked.insert(q.panel);
    }
  }
  for (const std::string& panel : unchecked) {
    std::printf("panel query not checked (the agent does not export its metrics yet): %s\n",
                panel.c_str());
  }

  // The agent stops: FaultlineAgentDown fires for its host.
  EXPECT_TRUE(Query("ALERTS{alertname=\"FaultlineAgentDown\"}").empty());
  EXPECT_EQ(0, agent_->Stop(SIGTERM));
  const auto firing = [&] {
    const json data = Api("alerts");
    if (data.is_null()) return false;
    for (const json& alert : data["alerts"]) {
      if (alert["labels"].value("alertname", "") == "FaultlineAgentDown" &&
          alert["labels"].value("host", "") == "node-a" &&
          alert["labels"].value("severity", "") == "page" && alert.value("state", "") == "firing") {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(Eventually(firing, std::chrono::seconds(30))) << Api("alerts").dump();
}

}  // namespace
}  // namespace faultline
