// Agent: the daemon behind `faultline run`. It wires the stages of docs/design.md together on one
// Asio event loop: sources (file tailers, sockets) -> framing, matching and counting (one
// MatchedStream per stream, agent/stream/matched_stream.h) -> the finding fan-out (metrics first;
// the lifecycle tracker and alert policy are added to the same fan-out; owned events feed the
// latest hit per signature and the per-signature tally) and the HTTP listener that serves /metrics,
// /healthz, /readyz, /api/v1/findings, /api/v1/unrecognised, the status page `/` and /api/v1/status
// (agent_status.cc builds what the last two show). Each stream also has a StreamDiscovery
// (agent/discover/) when discover.enabled: error lines no rule explains go to the agent's one
// Discovery. Its alert hook (Discovery::SetAlertHook: an owned FindingEvent for signature
// `unrecognised.<template id>` once a template has discover.alert_after lines) goes to the alert
// side, when there is one.
//
// State (state.dir, agent/state/state_store.h): Start opens the store before anything is read,
// restores the counters and the alert side (lifecycle, group_wait, outbox: alert_states.h) and
// hands the saved file positions to the file sources; a checkpoint is
// written at most every state.checkpoint_interval_ms (when something changed), and at Stop, where
// file streams are saved as they stand (a partial line or a hit waiting for context is read again
// after the restart, not settled now), and as soon as the alert side has a notification to make
// durable (it is sent once the checkpoint holding it commits). A second agent on the same
// state.dir, or a state file from a newer faultline, fails Start; a store that cannot be written
// never stops ingestion: faultline_checkpoint_errors_total rises, /readyz says why, and the next
// checkpoint tries again. A file source that a reload restarts hands its streams over as they stand
// (file_streams.h), so the new one resumes them like a restart would: a reload neither loses nor
// counts twice.
//
// Everything runs on the one thread that calls Run(); Stop() may be called from a signal handler
// installed on the same loop (Start installs one for SIGINT and SIGTERM, and SIGHUP reloads).
// Reload (SIGHUP, POST /-/reload, reload.watch) loads and compiles on the ReloadCoordinator's
// worker and is applied on the loop by ApplyReload (agent_reload.cc says what changes and what
// stays); an agent without config sources (`faultline watch`) does not reload. When every source
// has ended (stdin closed; sources that follow files never end), the agent stops by itself.
// Start fails, with the reason, only at load time (the listener cannot bind, the admin token file
// cannot be read). Owns everything it creates; the RuleSet is shared.
#ifndef FAULTLINE_DAEMON_AGENT_H_
#define FAULTLINE_DAEMON_AGENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/alert/alert_states.h"
#include "agent/alert/alerting.h"
#include "agent/api/status_report.h"
#include "agent/config/config.h"
#include "agent/core/asio.h"
#include "agent/core/clock.h"
#include "agent/daemon/config_watcher.h"
#include "agent/daemon/file_streams.h"
#include "agent/daemon/reload_coordinator.h"
#include "agent/daemon/source_set.h"
#include "agent/daemon/sources.h"
#include "agent/discover/discovery.h"
#include "agent/http/http_server.h"
#include "agent/match/rule_set.h"
#include "agent/sink/finding_events.h"
#include "agent/sink/metrics.h"
#include "agent/sink/signature_labels.h"
#include "agent/sink/signature_tally.h"
#include "agent/state/counter_states.h"
#include "agent/state/state_store.h"
#include "agent/state/stream_states.h"
#include "agent/stream/matched_stream.h"

namespace faultline {

// What a command that embeds the agent changes (`faultline watch`); the defaults are the daemon's.
struct AgentOptions {
  bool serve_http = true;      // listen on http.listen; false: no HTTP server at all
  bool handle_signals = true;  // SIGINT/SIGTERM stop the agent (watch forwards them instead)
  bool config_sources = true;  // start the sources the config declares
  // Open state.dir: counters and file positions continue across restarts. A one-shot command
  // (watch) keeps none, and so never contends for another agent's state.dir.
  bool keep_state = true;
};

class Agent : private FileStreamHost {
 public:
  using SourceBuilder = std::function<std::unique_ptr<Source>(const SourceContext&)>;

  Agent(Config config, std::shared_ptr<const RuleSet> rules, AgentOptions options = {});
  ~Agent();

  // Before Start: one more stage of the finding fan-out, after the agent's own (watch's report).
  // Not owned; must outlive the agent.
  void AddFindingSink(FindingSink* sink);
  // Before Start: a source the config does not declare (watch's command), built with the same
  // context as the config's sources and started after them.
  void AddSource(SourceBuilder build);
  Metrics& metrics() { return metrics_; }

  // Opens the state, binds the HTTP server, opens and starts every source. The errors that stop
  // the start (a second agent on the same state.dir, an address in use, a source that cannot
  // open); the agent must not Run then.
  Result<void> Start();
  // Runs the loop until SIGINT/SIGTERM or Stop().
  void Run();
  void Stop();

 private:
  class MetricsSink;
  class AlertSink;
  class AlertStreams;

  // Opens the state store and restores the counters (and the alert lifecycle and outbox, when
  // alerting exists by then); an error when the agent must not start.
  Result<void> OpenState();
  void ArmCheckpointTimer();
  // Writes a checkpoint now; false when it could not be written.
  bool Checkpoint();
  // A checkpoint soon, on the loop (once however often asked): notifications wait for one.
  void RequestCheckpoint();
  // A checkpoint soon, then `done` with "" once it committed, or with why it did not (the admin
  // routes answer after it: alert_routes.h). Without a store, `done` runs at once.
  void CommitThen(std::function<void(const std::string& error)> done);
  void UpdateBytesLost();

  // FileStreamHost
  const std::vector<SavedStream>& Saved(const std::string& source_id) const override;
  bool HasHistory(const std::string& source_id) const override;
  int64_t CheckpointTimeNs(const std::string& source_id) const override;
  void HandOver(const std::string& source_id, std::vector<SavedStream> streams) override;
  std::unique_ptr<ResumableConsumer> StartFileStream(const std::string& source_id,
                                                     const std::string& path, uint64_t offset,
                                                     const SavedStream* resumed,
                                                     const bool* frozen) override;
  void AddFileStreams(const FileStreamSet* set) override;
  void RemoveFileStreams(const FileStreamSet* set) override;

  void AddRoutes();
  // Brings the unrecognised-error metrics up to date (at scrape time).
  void CountUnrecognised();
  void WaitForSignal();
  // Builds the alert side when the config has `alerts:` (or its load-time errors), before the
  // state opens so that its participant loads the lifecycle and outbox; StartAlerting then
  // connects it (findings, routes, checkpoint requests) and starts delivery.
  Result<void> CreateAlerting();
  void StartAlerting();
  // The lifecycle's admin routes (alert_routes.h), with the admin token and CommitThen.
  void AddLifecycleRoutes();
  // Why the agent is not ready to do its job; empty when it is (/readyz).
  std::string NotReadyReason() const;
  // What the status page and /api/v1/status show now (agent_status.cc).
  StatusReport Status();
  // The SourceContext of a source built from `section` (source_set.h).
  SourceContext ContextFor(const Config& section);
  // Reload (agent_reload.cc): the coordinator, the route and the watcher; applying a new config
  // on the loop; recording what became of a reload.
  void StartReloads();
  void AddReloadRoute();
  std::vector<std::string> ApplyReload(LoadedConfig next, std::string* summary);
  // Every live stream goes on with `rules` (MatchedStream::Rebind).
  void RebindStreams(const std::shared_ptr<const RuleSet>& rules, MatchScratch* scratch);
  // What every new stream shares: the rules in use now, the fan-out, metrics, discovery, alerts.
  MatchedStream::Wiring StreamWiring();
  void OnReloadResult(const ReloadResult& result);
  // Engine errors of every scratch the agent used, the one in use and those reloads retired.
  MatchErrors MatchErrorTotals() const;

  Config config_;  // the running config: replaced by a reload
  std::shared_ptr<const RuleSet> rules_;
  const AgentOptions options_;
  std::vector<SourceBuilder> extra_sources_;
  asio::io_context io_;
  asio::signal_set signals_;
  SignatureLabels signature_labels_;
  Metrics metrics_;
  std::unique_ptr<MetricsSink> metrics_sink_;
  FindingFanout findings_;
  FindingEventBuilder events_;
  LatestFindings latest_;
  Discovery discovery_;
  SignatureTally tally_;
  const WallTime started_at_ = SystemNow();
  WallTime rules_loaded_at_ = started_at_;
  uint64_t streams_started_ = 0;
  bool sources_started_ = false;
  std::unique_ptr<MatchScratch> scratch_;
  MatchErrors retired_match_errors_;
  HttpServer http_;
  std::shared_ptr<DescriptorBudget> descriptors_;
  std::string admin_token_;
  // Null unless the config has `alerts:`. Declared before the sources, whose streams use it.
  std::unique_ptr<Alerting> alerting_;
  std::unique_ptr<AlertSink> alert_sink_;
  std::unique_ptr<AlertStreams> alert_streams_;  // what MatchedStream shows the alert side
  // The state store and its participants (a participant must outlive the store); null when
  // options_.keep_state is false.
  std::unique_ptr<AlertStates> alert_states_;  // null without alerting
  std::unique_ptr<CounterStates> counter_states_;
  std::unique_ptr<StreamStates> stream_states_;
  std::unique_ptr<StateStore> store_;
  std::vector<const FileStreamSet*> file_stream_sets_;
  std::map<std::string, uint64_t> bytes_lost_reported_;  // by source
  asio::steady_timer checkpoint_timer_;
  std::string checkpoint_error_;    // why the last checkpoint failed; empty when it did not
  bool stopping_ = false;           // the agent is stopping: no more checkpoints on the timer
  bool checkpoint_posted_ = false;  // RequestCheckpoint's checkpoint is on its way
  // Called by the next checkpoint to start (CommitThen): it holds what changed before they asked.
  std::vector<std::function<void(const std::string& error)>> commit_waiters_;
  // Every stream's pipeline, for a reload to rebind (declared before the sources that own them).
  LiveStreams live_streams_;
  SourceSet sources_;                                   // the config's sources, by id
  std::vector<std::unique_ptr<Source>> extra_running_;  // from extra_sources_, never reloaded
  size_t ended_sources_ = 0;
  bool stopped_ = false;
  std::unique_ptr<ReloadCoordinator> reloads_;
  std::unique_ptr<ConfigWatcher> config_watcher_;
  std::optional<ReloadResult> last_reload_;
  uint64_t reloads_ok_ = 0;
  uint64_t reloads_failed_ = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_DAEMON_AGENT_H_
