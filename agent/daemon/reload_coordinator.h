// ReloadCoordinator: takes a new config and rule pack while the agent runs, without stopping the
// event loop for the slow part.
//
// A reload (SIGHUP, POST /-/reload, a watched file changing) is a Request on the loop. The config
// file is read, its rules loaded and compiled (Vectorscan, RE2) and a MatchScratch made on the
// coordinator's worker thread; the result comes back to the loop with asio::post, where `apply`
// swaps it in (Agent::ApplyReload) in one step. The loop never waits for the worker, so lines
// keep flowing while a pack compiles; only `apply` pauses them.
//
// Budget: a load taking longer than the budget's timeout is rejected at the deadline (the worker
// also gives up between steps; a compile it is inside finishes, and its result is dropped). A load
// that needs more memory than the memory budget is rejected once it is done. What it needs is the
// larger of two measures, both taken on the worker around the load and compile:
// - its peak: how far the process's resident memory rose above where it stood before the load,
//   at its highest. The kernel's high-water mark (VmHWM in /proc/self/status) is reset to the
//   current resident size by writing "5" to /proc/self/clear_refs before the load and read after
//   it, so the transient memory of Vectorscan's compiler (its graphs and automata, far larger
//   than the database it leaves) and of RE2's is counted, which the heap held afterwards never
//   shows. Resident memory is the cost the host pays, and the kernel counts it whatever
//   allocator made it (glibc, Vectorscan's, a sanitizer's). Where clear_refs cannot be written
//   (a hardened /proc), the mark is still read: a load that pushed it past its old height is
//   measured the same way; one that stayed below it is measured by its retained heap alone,
//   and the rejection says so;
// - its retained heap: the heap in use (glibc mallinfo2, every arena) after the compile, with
//   the new pack held, less before; it catches memory that a reused free block held, which the
//   resident size does not see grow.
// Both are process-wide, so the loop's own allocations during a load count too; a budget is a
// bound on what a reload may cost the host, which includes them. The memory is used before the
// rejection: a compile needing more than the host has still runs the host out of it. A side
// effect of the reset: the process's VmHWM (and getrusage's ru_maxrss) show the peak since the
// last reload, not since the start.
// The budget is the running config's; a new config's budget takes effect for the reload after it.
//
// Rejected (invalid config, rule error, over budget): the errors, each with file, line and key,
// go to the result; nothing of the new config is used, and the old one keeps running.
//
// Requests are coalesced: while a load runs, further requests wait for it to finish and then
// share one more load, so an edit saved just after a reload began is never missed, and a burst of
// SIGHUPs costs two loads, not a hundred. A request that comes while the worker is still inside
// a load that timed out is rejected at once, so that no request waits without bound.
//
// Threads: Request, Stop and every callback on the loop thread; the worker touches nothing but
// the files it reads and the values it builds. The io_context must outlive the coordinator;
// destroying it joins the worker (a compile in progress finishes first).
#ifndef FAULTLINE_DAEMON_RELOAD_COORDINATOR_H_
#define FAULTLINE_DAEMON_RELOAD_COORDINATOR_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/config/config.h"
#include "agent/core/asio.h"
#include "agent/core/clock.h"
#include "agent/core/result.h"
#include "agent/match/pattern_set.h"
#include "agent/match/rule_set.h"

namespace faultline {

// A config with everything it needs compiled, ready to be applied on the loop.
struct LoadedConfig {
  Config config;
  std::shared_ptr<const RuleSet> rules;
  std::unique_ptr<MatchScratch> scratch;
  std::string admin_token;  // empty without http.admin_token_file or a generated token
  std::vector<std::string> warnings;
  // What the load and compile cost, as measured (see the top). Set by the coordinator.
  std::size_t peak_bytes = 0;      // resident memory growth at its highest
  std::size_t retained_bytes = 0;  // heap held once compiled
  bool peak_known = false;         // false: the high-water mark could not be reset nor passed
};

// Reads `path` and everything it names, and compiles it. Errors have file, line and key.
Result<LoadedConfig> LoadConfigAndRules(const std::string& path);
// The same, with `watch_patterns` compiled in beside the rules (RuleSet::Compile), for an agent
// whose streams have a LineWatcher (discovery).
Result<LoadedConfig> LoadConfigAndRulesWatching(const std::string& path,
                                                const std::vector<std::string>& watch_patterns);

struct ReloadBudget {
  std::chrono::milliseconds timeout{20000};
  std::size_t max_memory_bytes = std::size_t{1} << 30;
};

// What became of one reload.
struct ReloadResult {
  bool ok = false;
  std::string trigger;
  WallTime at;  // when it was asked for
  std::vector<std::string> errors;           // why it was rejected
  std::vector<std::string> warnings;         // what it could not change, and what it restarted
  std::string summary;                       // what runs now, for the log and the HTTP answer
  double duration_ms = 0;                    // from the request to the result
  double apply_ms = 0;                       // of that, the time the loop spent applying
  std::size_t peak_bytes = 0;                // memory the load needed (LoadedConfig), when loaded
  std::size_t retained_bytes = 0;
};

class ReloadCoordinator {
 public:
  // Swaps `loaded` in; returns warnings and sets *summary. Runs on the loop; must not throw.
  using Apply = std::function<std::vector<std::string>(LoadedConfig loaded, std::string* summary)>;
  using Done = std::function<void(const ReloadResult&)>;
  // Loads a config; the default is LoadConfigAndRules (tests give a slow or failing one).
  using Loader = std::function<Result<LoadedConfig>(const std::string& path)>;

  // `on_result` sees every result (metrics, status page, log).
  ReloadCoordinator(asio::io_context& io, std::string config_path, Apply apply, Done on_result,
                    Loader loader = LoadConfigAndRules);
  ~ReloadCoordinator();
  ReloadCoordinator(const ReloadCoordinator&) = delete;
  ReloadCoordinator& operator=(const ReloadCoordinator&) = delete;

  void SetBudget(ReloadBudget budget) { budget_ = budget; }

  // Asks for a reload (see the top on coalescing); `done`, when given, gets this request's
  // result on the loop.
  void Request(std::string trigger, Done done = {});

  // Results pending are dropped and no new load starts; the worker finishes what it does.
  void Stop();

  bool busy() const { return in_flight_ || worker_busy_; }

 private:
  struct Waiter {
    std::string trigger;
    std::chrono::steady_clock::time_point asked;
    WallTime asked_wall;
    Done done;
  };
  struct Job {
    uint64_t id;
    std::string path;
    ReloadBudget budget;
    std::chrono::steady_clock::time_point deadline;
  };

  void StartNext();
  void Work();
  // On the loop: the worker's result for job `id`.
  void OnLoaded(uint64_t id, std::shared_ptr<Result<LoadedConfig>> loaded);
  void OnTimeout(uint64_t id);
  void Finish(ReloadResult result);

  asio::io_context& io_;
  const std::string config_path_;
  const Apply apply_;
  const Done on_result_;
  const Loader loader_;
  ReloadBudget budget_;

  // Loop-thread state.
  std::vector<Waiter> current_;  // waiting for the job in flight
  std::vector<Waiter> queued_;   // asked while it ran: the next job is theirs
  bool in_flight_ = false;       // current_ waits for a result
  bool worker_busy_ = false;     // the worker is on a job (maybe one already timed out)
  uint64_t job_id_ = 0;
  bool stopped_ = false;
  asio::steady_timer deadline_timer_;

  // Shared with the worker, under mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Job> job_;
  bool quit_ = false;
  std::thread worker_;
  bool warned_no_reset_ = false;  // the worker's
  // Completions posted by the worker check this, so a result never reaches a dead coordinator.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace faultline

#endif  // FAULTLINE_DAEMON_RELOAD_COORDINATOR_H_
