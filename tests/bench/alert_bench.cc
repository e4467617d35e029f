// alert_bench: what a user waits for an alert, measured end to end on loopback.
//
//   alert_bench [SAMPLES [PEER_SAMPLES]]
//
// Starts `faultline run` (the binary of the build it belongs to) on a temporary folder with a state
// store and one webhook receiver (the test receiver of tests/support), group_wait_ms 0. Then:
//   latency: SAMPLES times, appends one line with a new signature to a tailed file and measures
//            from the write to the webhook request arriving; prints p50, p99 and max.
//   flood:   writes 1,000 lines with 1,000 new signatures at once, in one file (one run) and in
//            200 files (runs) of 5, and measures how fast they arrive: notifications (HTTP
//            requests) and signatures (listed or counted in them) per second, with the receiver's
//            rate limit raised out of the way, then with the default one.
//   peer:    the stack a user would otherwise build, on the same writes in the same run:
//            mtail (a counter on the same pattern) scraped every second by Prometheus, whose
//            rule `increase(failures_total[5s]) > 0` (evaluated every second) goes to
//            Alertmanager (group_wait 0s, group_interval 1s) and its webhook to the same test
//            receiver as faultline's (another path). PEER_SAMPLES (default 20) times: one line
//            is appended to the file both tail, and the time to each request is taken; before
//            the next, the stack's alert must have resolved (the 5 s window passed, Alertmanager
//            dropped the group), else a second failure would not be a new alert to it. Prints
//            p50 and p99 (of 20 samples, p99 is the worst) for both. Skipped, with a message, when
//            /usr/bin/mtail, prometheus or prometheus-alertmanager is missing. Every tool runs
//            with its defaults otherwise (mtail polls files every 250 ms; faultline's file
//            source its default).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/process.h"
#include "tests/support/http_receiver.h"

namespace {

using Clock = std::chrono::system_clock;
namespace fs = std::filesystem;

constexpr char kRule[] = R"(id: bench.numbered
title: Numbered failure
severity: error
category: runtime
match: ['failure number \d+']
labels: {n: 'failure number (?P<n>\d+)'}
max_label_values: 1000
root_cause: r
fix: f
)";

std::string WriteSetup(const fs::path& dir, uint16_t port, const std::string& url,
                       const std::string& limits) {
  fs::create_directories(dir / "rules");
  fs::create_directories(dir / "logs");
  std::ofstream(dir / "rules" / "bench.yaml") << kRule;
  const fs::path config = dir / "faultline.yaml";
  std::ofstream(config)
      << "rules: {paths: [rules]}\nhttp: {listen: '127.0.0.1:" << port << "'}\n"
      << "sources:\n  - {id: bench, type: file, paths: ['logs/*.log'], start_at: beginning}\n"
      << "alerts:\n  group_wait_ms: 0\n  receivers:\n"
      << "    - {name: hook, type: webhook, url: '" << url << "'" << limits << "}\n";
  return config.string();
}

// `runs` files of `per_run` lines each, every line a new signature, written at once.
void Flood(const std::string& label, const std::string& limits, int runs, int per_run) {
  faultline::testing::TestReceiver hook;
  const fs::path dir = faultline::testing::TempDir("alert_bench_flood");
  const uint16_t port = faultline::testing::FreePort();
  const std::string config = WriteSetup(dir, port, hook.url(), limits);
  faultline::testing::Daemon agent({"run", "-c", config});
  std::string body;
  faultline::testing::Eventually(
      [&] { return faultline::testing::HttpGet(port, "/readyz", &body) == 200; });
  const int total = runs * per_run;
  const auto start = Clock::now();
  for (int r = 0; r < runs; ++r) {
    std::string lines;
    for (int i = 0; i < per_run; ++i)
      lines += "failure number " + std::to_string(r * per_run + i) + "\n";
    std::ofstream(dir / "logs" / ("run" + std::to_string(r) + ".log"), std::ios::app) << lines;
  }
  std::size_t items = 0;
  faultline::testing::Eventually(
      [&] {
        items = 0;
        for (const auto& r : hook.requests()) {
          const auto j = nlohmann::json::parse(r.body);
          items += j["alerts"].size() + j["more"].get<std::size_t>();
        }
        return items >= static_cast<std::size_t>(total);
      },
      std::chrono::seconds(120));
  const auto requests = hook.requests();
  const double seconds =
      requests.empty() ? 0 : std::chrono::duration<double>(requests.back().at - start).count();
  std::printf(
      "flood (%s): %d runs x %d new signatures -> %zu notifications carrying %zu in "
      "%.2f s: %.1f notifications/s, %.0f signatures/s\n",
      label.c_str(), runs, per_run, requests.size(), items, seconds, requests.size() / seconds,
      items / seconds);
  agent.Stop(SIGTERM);
  fs::remove_all(dir);
}

// p-quantile of sorted `ms`.
double Quantile(const std::vector<double>& ms, double q) {
  return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * static_cast<double>(ms.size())))];
}

// Requests to `path` among `requests`; for Alertmanager's webhook only the firing ones.
std::vector<Clock::time_point> Arrivals(
    const std::vector<faultline::testing::ReceivedRequest>& requests, const std::string& path) {
  std::vector<Clock::time_point> out;
  for (const auto& r : requests) {
    if (r.target != path) continue;
    if (path == "/am" && nlohmann::json::parse(r.body).value("status", "") != "firing") continue;
    out.push_back(r.at);
  }
  return out;
}

// The data of a Prometheus or Alertmanager JSON answer at `path`, else null.
nlohmann::json GetJson(uint16_t port, const std::string& path) {
  std::string body;
  if (faultline::testing::HttpGet(port, path, &body) != 200) return nullptr;
  return nlohmann::json::parse(body, nullptr, false);
}

int Peer(int samples) {
  for (const char* tool :
       {"/usr/bin/mtail", "/usr/bin/prometheus", "/usr/bin/prometheus-alertmanager"}) {
    if (!fs::exists(tool)) {
      std::printf(
          "peer: skipped, %s is missing (Debian packages mtail, prometheus, "
          "prometheus-alertmanager)\n",
          tool);
      return 0;
    }
  }
  using faultline::testing::Eventually;
  using faultline::testing::FreePort;
  using faultline::testing::Program;
  faultline::testing::TestReceiver hook;
  const fs::path dir = faultline::testing::TempDir("alert_bench_peer");
  const uint16_t agent_port = FreePort();
  const std::string config =
      WriteSetup(dir, agent_port, hook.url("/faultline"), ", rate_per_second: 1000, burst: 1000");
  const fs::path log = dir / "logs" / "shared.log";
  std::ofstream(log) << "started\n";  // mtail polls only the files there at its start

  uint16_t mtail_port = FreePort(), prom_port = FreePort(), am_port = FreePort();
  while (prom_port == mtail_port) prom_port = FreePort();
  while (am_port == mtail_port || am_port == prom_port || am_port == agent_port)
    am_port = FreePort();
  fs::create_directories(dir / "mtail");
  std::ofstream(dir / "mtail" / "bench.mtail")
      << "counter failures_total\n/failure number \\d+/ {\n  failures_total++\n}\n";
  std::ofstream(dir / "alertmanager.yml")
      << "route:\n  receiver: hook\n  group_wait: 0s\n  group_interval: 1s\n  repeat_interval: 1h\n"
      << "receivers:\n  - name: hook\n    webhook_configs:\n      - url: '" << hook.url("/am")
      << "'\n        send_resolved: false\n";
  std::ofstream(dir / "rules.yml") << "groups:\n  - name: bench\n    rules:\n"
                                   << "      - alert: BenchFailure\n"
                                   << "        expr: increase(failures_total[5s]) > 0\n";
  std::ofstream(dir / "prometheus.yml")
      << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      << "rule_files: ['" << (dir / "rules.yml").string() << "']\n"
      << "alerting:\n  alertmanagers:\n    - static_configs: [{targets: ['127.0.0.1:" << am_port
      << "']}]\n"
      << "scrape_configs:\n  - job_name: mtail\n    static_configs: [{targets: ['127.0.0.1:"
      << mtail_port << "']}]\n";
  Program mtail({"/usr/bin/mtail", "--progs", (dir / "mtail").string(), "--logs", log.string(),
                 "--address", "127.0.0.1", "--port", std::to_string(mtail_port), "--logtostderr"},
                (dir / "mtail.log").string());
  Program am(
      {"/usr/bin/prometheus-alertmanager", "--config.file=" + (dir / "alertmanager.yml").string(),
       "--storage.path=" + (dir / "am").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(am_port), "--cluster.listen-address="},
      (dir / "am.log").string());
  Program prometheus(
      {"/usr/bin/prometheus", "--config.file=" + (dir / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (dir / "data").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
      (dir / "prometheus.log").string());
  faultline::testing::Daemon agent({"run", "-c", config});
  std::string body;
  // The counter must have a few samples at 0 first: increase() sees nothing of a series' first.
  const bool ready = Eventually(
      [&] {
        const nlohmann::json r =
            GetJson(prom_port, "/api/v1/query?query=count_over_time(failures_total%5B10s%5D)");
        return faultline::testing::HttpGet(agent_port, "/readyz", &body) == 200 &&
               faultline::testing::HttpGet(am_port, "/-/ready", &body) == 200 && r.is_object() &&
               !r["data"]["result"].empty() &&
               std::stod(r["data"]["result"][0]["value"][1].get<std::string>()) >= 3;
      },
      std::chrono::seconds(60));
  if (!ready) {
    std::cerr << "peer: the stack did not start; logs in " << dir << "\n";
    return 1;
  }
  std::vector<double> ours, theirs;
  for (int i = 0; i < samples; ++i) {
    // The stack's last alert is over: Prometheus has none pending or firing, Alertmanager none
    // active, and its group has had a group_interval to go.
    const bool calm = Eventually(
        [&] {
          const nlohmann::json p = GetJson(prom_port, "/api/v1/alerts");
          const nlohmann::json a = GetJson(am_port, "/api/v2/alerts?active=true");
          return p.is_object() && p["data"]["alerts"].empty() && a.is_array() && a.empty();
        },
        std::chrono::seconds(60));
    if (!calm) {
      std::cerr << "peer: the stack's alert did not resolve; logs in " << dir << "\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const auto written = Clock::now();
    {
      std::ofstream out(log, std::ios::app);
      out << "failure number " << i << "\n";
    }
    const bool both = Eventually(
        [&] {
          const auto requests = hook.requests();
          return Arrivals(requests, "/faultline").size() > static_cast<std::size_t>(i) &&
                 Arrivals(requests, "/am").size() > static_cast<std::size_t>(i);
        },
        std::chrono::seconds(60));
    if (!both) {
      std::cerr << "peer: no notification for sample " << i << " from "
                << (Arrivals(hook.requests(), "/faultline").size() > static_cast<std::size_t>(i)
                        ? "the stack"
                        : "faultline")
                << "; logs in " << dir << "\n";
      return 1;
    }
    const auto requests = hook.requests();
    const auto ms = [&](Clock::time_point at) {
      return std::chrono::duration<double, std::milli>(at - written).count();
    };
    ours.push_back(ms(Arrivals(requests, "/faultline")[i]));
    theirs.push_back(ms(Arrivals(requests, "/am")[i]));
  }
  agent.Stop(SIGTERM);
  std::sort(ours.begin(), ours.end());
  std::sort(theirs.begin(), theirs.end());
  std::printf(
      "peer, the same %d writes, line written -> request at the receiver:\n"
      "  faultline (group_wait_ms 0):                              p50 %.0f ms, p99 %.0f ms, max "
      "%.0f ms\n"
      "  mtail -> Prometheus (1 s scrape and eval, increase()) -> Alertmanager (group_wait 0s):"
      " p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
      samples, Quantile(ours, 0.5), Quantile(ours, 0.99), ours.back(), Quantile(theirs, 0.5),
      Quantile(theirs, 0.99), theirs.back());
  fs::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::atoi(argv[1]) : 50;
  const int peer_samples = argc > 2 ? std::atoi(argv[2]) : 20;
  faultline::testing::TestReceiver hook;
  const fs::path dir = faultline::testing::TempDir("alert_bench_latency");
  const uint16_t port = faultline::testing::FreePort();
  const std::string config =
      WriteSetup(dir, port, hook.url(), ", rate_per_second: 1000, burst: 1000");
  faultline::testing::Daemon agent({"run", "-c", config});
  std::string body;
  faultline::testing::Eventually(
      [&] { return faultline::testing::HttpGet(port, "/readyz", &body) == 200; });
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) {
    const auto written = Clock::now();
    {
      std::ofstream out(dir / "logs" / "latency.log", std::ios::app);
      out << "failure number " << i << "\n";
    }
    if (!hook.WaitFor(static_cast<std::size_t>(i + 1), std::chrono::seconds(30))) {
      std::cerr << "no notification for sample " << i << "\n" << agent.Stderr();
      return 1;
    }
    ms.push_back(
        std::chrono::duration<double, std::milli>(hook.requests()[i].at - written).count());
    usleep(50 * 1000);  // one at a time: the figure is the latency of a lone failure
  }
  agent.Stop(SIGTERM);
  fs::remove_all(dir);
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * ms.size()))];
  };
  std::printf(
      "latency, line written -> webhook request, %d samples, group_wait_ms 0: "
      "p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
      samples, at(0.5), at(0.99), ms.back());
  Flood("rate limit 1000/s", ", rate_per_second: 1000, burst: 1000", 1, 1000);
  Flood("rate limit 1000/s", ", rate_per_second: 1000, burst: 1000", 200, 5);
  Flood("default webhook rate limit 10/s burst 20", "", 200, 5);
  return Peer(peer_samples);
}
