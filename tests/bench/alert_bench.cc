// alert_bench: what a user waits for an alert, measured end to end on loopback.
//
//   alert_bench [SAMPLES]
//
// Starts `faultline run` (the binary of the build it belongs to) on a temporary folder with a state store and one webhook receiver (the
// test receiver of tests/support), group_wait_ms 0. Then:
//   latency: SAMPLES times, appends one line with a new signature to a tailed file and measures
//            from the write to the webhook request arriving; prints p50, p99 and max.
//   flood:   writes 1,000 lines with 1,000 new signatures at once, in one file (one run) and in
//            200 files (runs) of 5, and measures how fast they arrive: notifications (HTTP
//            requests) and signatures (listed or counted in them) per second, with the receiver's
//            rate limit raised out of the way, then with the default one.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

std::string WriteSetup(const fs::path& dir, uint16_t port, const std::string& url, const std::string& limits) {
  fs::create_directories(dir / "rules");
  fs::create_directories(dir / "logs");
  std::ofstream(dir / "rules" / "bench.yaml") << kRule;
  const fs::path config = dir / "faultline.yaml";
  std::ofstream(config) << "rules: {paths: [rules]}\nhttp: {listen: '127.0.0.1:" << port << "'}\n"
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
  faultline::testing::Eventually([&] { return faultline::testing::HttpGet(port, "/readyz", &body) == 200; });
  const int total = runs * per_run;
  const auto start = Clock::now();
  for (int r = 0; r < runs; ++r) {
    std::string lines;
    for (int i = 0; i < per_run; ++i) lines += "failure number " + std::to_string(r * per_run + i) + "\n";
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
  std::printf("flood (%s): %d runs x %d new signatures -> %zu notifications carrying %zu in "
              "%.2f s: %.1f notifications/s, %.0f signatures/s\n",
              label.c_str(), runs, per_run, requests.size(), items, seconds,
              requests.size() / seconds, items / seconds);
  agent.Stop(SIGTERM);
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::atoi(argv[1]) : 50;
  faultline::testing::TestReceiver hook;
  const fs::path dir = faultline::testing::TempDir("alert_bench_latency");
  const uint16_t port = faultline::testing::FreePort();
  const std::string config = WriteSetup(dir, port, hook.url(), ", rate_per_second: 1000, burst: 1000");
  faultline::testing::Daemon agent({"run", "-c", config});
  std::string body;
  faultline::testing::Eventually([&] { return faultline::testing::HttpGet(port, "/readyz", &body) == 200; });
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
    ms.push_back(std::chrono::duration<double, std::milli>(hook.requests()[i].at - written).count());
    usleep(50 * 1000);  // one at a time: the figure is the latency of a lone failure
  }
  agent.Stop(SIGTERM);
  fs::remove_all(dir);
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * ms.size()))]; };
  std::printf("latency, line written -> webhook request, %d samples, group_wait_ms 0: "
              "p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
              samples, at(0.5), at(0.99), ms.back());
  Flood("rate limit 1000/s", ", rate_per_second: 1000, burst: 1000", 1, 1000);
  Flood("rate limit 1000/s", ", rate_per_second: 1000, burst: 1000", 200, 5);
  Flood("default webhook rate limit 10/s burst 20", "", 200, 5);
  return 0;
}
