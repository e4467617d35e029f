#include "agent/daemon/reload_coordinator.h"

#include <fcntl.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "agent/api/admin_token.h"
#include "agent/config/config_loader.h"
#include "agent/core/clock.h"
#include "agent/match/database_cache.h"
#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

// Heap in use by the whole process: every arena plus mmapped chunks.
std::size_t HeapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// The process's resident memory now and its high-water mark, from /proc/self/status.
struct Resident {
  std::size_t now = 0;
  std::size_t peak = 0;
  bool ok = false;
};

Resident ReadResident() {
  Resident r;
  std::FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return r;
  char line[256];
  bool have_now = false;
  bool have_peak = false;
  unsigned long long kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "VmRSS: %llu kB", &kib) == 1) {
      r.now = static_cast<std::size_t>(kib) << 10;
      have_now = true;
    } else if (std::sscanf(line, "VmHWM: %llu kB", &kib) == 1) {
      r.peak = static_cast<std::size_t>(kib) << 10;
      have_peak = true;
    }
  }
  std::fclose(f);
  r.ok = have_now && have_peak;
  return r;
}

// Resets the high-water mark to the resident size now (proc(5), /proc/pid/clear_refs).
bool ResetResidentPeak() {
  const int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, "5", 1) == 1;
  close(fd);
  return ok;
}

// What a load needs: see the header. Fills the three measures of `loaded`.
void Measure(const Resident& before, std::size_t heap_before, bool reset, LoadedConfig* loaded) {
  const Resident after = ReadResident();
  const std::size_t heap_after = HeapInUse();
  loaded->retained_bytes = heap_after > heap_before ? heap_after - heap_before : 0;
  // Without a reset, a mark above its old height was made during the load.
  loaded->peak_known = before.ok && after.ok && (reset || after.peak > before.peak);
  loaded->peak_bytes = loaded->peak_known && after.peak > before.now ? after.peak - before.now : 0;
}

std::string Mib(std::size_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

Error BudgetError(const std::string& path, std::string key, std::string message) {
  return Error{
      .file = path, .line = 0, .rule_id = "", .key = std::move(key), .message = std::move(message)};
}

std::vector<std::string> Strings(const ErrorList& errors) {
  std::vector<std::string> out;
  out.reserve(errors.size());
  for (const Error& e : errors) out.push_back(e.ToString());
  return out;
}

}  // namespace

Result<LoadedConfig> LoadConfigAndRules(const std::string& path) {
  return LoadConfigAndRulesWatching(path, {});
}

Result<LoadedConfig> LoadConfigAndRulesWatching(const std::string& path,
                                                const std::vector<std::string>& watch_patterns) {
  Result<Config> config = LoadConfig(path);
  if (!config.ok()) return config.errors();
  LoadedConfig loaded;
  loaded.config = std::move(config).value();
  // The file's token, else the one the agent generated at its start (LoadAdminToken).
  Result<AdminToken> token = LoadAdminToken(loaded.config, /*create=*/false);
  if (!token.ok()) return token.errors();
  loaded.admin_token = std::move(token.value().token);
  if (!token.value().warning.empty()) loaded.warnings.push_back(token.value().warning);
  Result<std::vector<Rule>> rules = LoadRules(loaded.config.rule_paths);
  if (!rules.ok()) return rules.errors();
  Result<std::shared_ptr<const RuleSet>> set =
      RuleSet::Compile(std::move(rules).value(), DatabaseCache::DefaultDir(), watch_patterns);
  if (!set.ok()) return set.errors();
  loaded.rules = std::move(set).value();
  loaded.scratch = std::make_unique<MatchScratch>(loaded.rules->patterns());
  return loaded;
}

ReloadCoordinator::ReloadCoordinator(asio::io_context& io, std::string config_path, Apply apply,
                                     Done on_result, Loader loader)
    : io_(io),
      config_path_(std::move(config_path)),
      apply_(std::move(apply)),
      on_result_(std::move(on_result)),
      loader_(std::move(loader)),
      deadline_timer_(io) {
  worker_ = std::thread([this] { Work(); });
}

ReloadCoordinator::~ReloadCoordinator() {
  *alive_ = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

void ReloadCoordinator::Request(std::string trigger, Done done) {
  if (stopped_) return;
  if (!in_flight_ && worker_busy_) {
    // The worker is still inside a load that timed out; a request queued behind it could wait
    // without bound, so it is answered now.
    ReloadResult busy;
    busy.trigger = std::move(trigger);
    busy.at = SystemNow();
    busy.errors = {BudgetError(config_path_, "reload.timeout_ms",
                               "the previous reload timed out and is still compiling; try again "
                               "once it is done")
                       .ToString()};
    on_result_(busy);
    if (done) done(busy);
    return;
  }
  queued_.push_back(Waiter{std::move(trigger), std::chrono::steady_clock::now(),
                           SystemNow(), std::move(done)});
  if (!in_flight_ && !worker_busy_) StartNext();
}

void ReloadCoordinator::Stop() {
  stopped_ = true;
  boost::system::error_code ignored;
  deadline_timer_.cancel(ignored);
  current_.clear();
  queued_.clear();
  in_flight_ = false;
}

void ReloadCoordinator::StartNext() {
  if (queued_.empty() || stopped_) return;
  current_ = std::move(queued_);
  queued_.clear();
  in_flight_ = true;
  worker_busy_ = true;
  const uint64_t id = ++job_id_;
  const auto deadline = std::chrono::steady_clock::now() + budget_.timeout;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = Job{id, config_path_, budget_, deadline};
  }
  wake_.notify_one();
  deadline_timer_.expires_at(deadline);
  deadline_timer_.async_wait([this, id, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive) OnTimeout(id);
  });
}

void ReloadCoordinator::Work() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return quit_ || job_.has_value(); });
      if (quit_) return;
      job = std::move(*job_);
      job_.reset();
    }
    const bool reset = ResetResidentPeak();
    if (!reset && !warned_no_reset_) {
      warned_no_reset_ = true;
      spdlog::warn(
          "reload: /proc/self/clear_refs is not writable ({}); reload.max_memory_bytes counts a "
          "compile's peak only when it passes the process's earlier peak",
          std::strerror(errno));
    }
    const Resident before = ReadResident();
    const std::size_t heap_before = HeapInUse();
    auto loaded = std::make_shared<Result<LoadedConfig>>(loader_(job.path));
    if (loaded->ok()) {
      LoadedConfig& value = loaded->value();
      Measure(before, heap_before, reset, &value);
      const std::size_t used = std::max(value.peak_bytes, value.retained_bytes);
      if (used > job.budget.max_memory_bytes) {
        std::string message = "loading and compiling the new config and rules needed " + Mib(used) +
                              ", more than the budget of " + Mib(job.budget.max_memory_bytes) +
                              " (";
        message += value.peak_known
                       ? "resident memory rose by " + Mib(value.peak_bytes) + " at its peak; "
                       : "the compile's peak could not be measured; ";
        message += Mib(value.retained_bytes) + " of heap held once compiled)";
        *loaded = BudgetError(job.path, "reload.max_memory_bytes", std::move(message));
      } else if (std::chrono::steady_clock::now() > job.deadline) {
        *loaded = BudgetError(job.path, "reload.timeout_ms",
                              "loading and compiling took longer than " +
                                  std::to_string(job.budget.timeout.count()) + " ms");
      }
    }
    // A rejected pack was freed here, off the loop; an accepted one goes to the loop.
    asio::post(io_, [this, id = job.id, loaded, alive = alive_] {
      if (*alive) OnLoaded(id, loaded);
    });
  }
}

void ReloadCoordinator::OnTimeout(uint64_t id) {
  if (!in_flight_ || id != job_id_) return;
  ReloadResult result;
  result.errors = {BudgetError(config_path_, "reload.timeout_ms",
                               "loading and compiling took longer than " +
                                   std::to_string(budget_.timeout.count()) +
                                   " ms; the running config is kept")
                       .ToString()};
  Finish(std::move(result));
}

void ReloadCoordinator::OnLoaded(uint64_t id, std::shared_ptr<Result<LoadedConfig>> loaded) {
  worker_busy_ = false;
  if (in_flight_ && id == job_id_ && !stopped_) {
    boost::system::error_code ignored;
    deadline_timer_.cancel(ignored);
    ReloadResult result;
    if (!loaded->ok()) {
      result.errors = Strings(loaded->errors());
    } else {
      result.peak_bytes = loaded->value().peak_bytes;
      result.retained_bytes = loaded->value().retained_bytes;
      const auto apply_start = std::chrono::steady_clock::now();
      result.warnings = apply_(std::move(loaded->value()), &result.summary);
      result.apply_ms = MillisecondsSince(apply_start);
      result.ok = true;
    }
    Finish(std::move(result));
  }
  // The old pack, now unused, is freed here with `loaded`; then the next load, if one was asked.
  if (!in_flight_) StartNext();
}

void ReloadCoordinator::Finish(ReloadResult result) {
  std::vector<Waiter> waiters = std::move(current_);
  current_.clear();
  in_flight_ = false;
  if (waiters.empty()) return;
  result.trigger = waiters.front().trigger;
  result.at = waiters.front().asked_wall;
  result.duration_ms = MillisecondsSince(waiters.front().asked);
  on_result_(result);
  for (Waiter& w : waiters) {
    if (w.done) w.done(result);
  }
}

}  // namespace faultline
