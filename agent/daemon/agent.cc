#include "agent/daemon/agent.h"

#include <dirent.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>

#include "agent/api/admin_token.h"
#include "agent/api/alert_routes.h"
#include "agent/api/findings_json.h"
#include "agent/api/status_json.h"
#include "agent/api/status_page.h"
#include "agent/api/unrecognised_json.h"
#include "agent/framing/utf8.h"

namespace faultline {

// Counts every finding; logs it at debug level only, since a failure repeated on every line
// must not flood the agent's own log.
class Agent::MetricsSink : public FindingSink {
 public:
  explicit MetricsSink(Metrics& metrics) : metrics_(metrics) {}
  void OnFinding(const Finding& f) override {
    metrics_.CountFinding(f);
    spdlog::debug("{} [{}] line {}: {}", f.rule->id, SeverityName(f.severity), f.line_number,
                  SanitizeForDisplay(f.text));
  }

 private:
  Metrics& metrics_;
};

// Hands the owned events of findings to the alert lifecycle.
class Agent::AlertSink : public FindingEventSink {
 public:
  explicit AlertSink(Alerting& alerting) : alerting_(alerting) {}
  void OnEvent(const FindingEvent& event) override { alerting_.OnFinding(event); }

 private:
  Alerting& alerting_;
};

// Shows the alert lifecycle every stream's batches and end.
class Agent::AlertStreams : public StreamWatcher {
 public:
  explicit AlertStreams(Alerting& alerting) : alerting_(alerting) {}
  void OnBatch(const StreamOrigin& origin, const LineBatch& batch, uint64_t first_line,
               bool matched) override {
    alerting_.OnBatch(origin.stream_id, origin.source_id, batch, first_line, matched);
  }
  void OnStreamEnd(const StreamOrigin& origin) override { alerting_.OnStreamEnd(origin.stream_id); }

 private:
  Alerting& alerting_;
};

void Agent::RebindStreams(const std::shared_ptr<const RuleSet>& rules, MatchScratch* scratch) {
  live_streams_.Rebind(rules, scratch);
}

MatchedStream::Wiring Agent::StreamWiring() {
  return MatchedStream::Wiring{
      .rules = rules_,
      .scratch = scratch_.get(),
      .framing = config_.framing,
      .findings = &findings_,
      .metrics = &metrics_,
      .discovery = config_.discover_enabled ? &discovery_ : nullptr,
      .watcher = alert_streams_.get(),
      .live = &live_streams_,
  };
}

namespace {

// Descriptors a working agent needs free at any time: HTTP connections, a file reopened after a
// rotation, the state store.
constexpr long kReserveDescriptors = 32;

// Open descriptors of this process, counted in /proc/self/fd.
long OpenDescriptors() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  long n = 0;
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n - 3;  // ".", ".." and the folder's own descriptor
}

}  // namespace

Agent::Agent(Config config, std::shared_ptr<const RuleSet> rules, AgentOptions options)
    : config_(std::move(config)),
      rules_(std::move(rules)),
      options_(options),
      signals_(io_),
      metrics_(signature_labels_),
      metrics_sink_(std::make_unique<MetricsSink>(metrics_)),
      events_(signature_labels_),
      discovery_(DiscoveryOptions{.max_templates = config_.discover_max_templates,
                                  .alert_after = config_.discover_alert_after}),
      scratch_(std::make_unique<MatchScratch>(rules_->patterns())),
      http_(io_),
      checkpoint_timer_(io_),
      sources_([this](const Config& section) { return ContextFor(section); }) {
  signature_labels_.Bind(rules_->rules());
  metrics_.BindRules(rules_->rules());
  findings_.Add(metrics_sink_.get());
  findings_.Add(&events_);
  events_.Add(&latest_);
  events_.Add(&tally_);
}

Agent::~Agent() = default;

Result<void> Agent::CreateAlerting() {
  if (!config_.alerts.enabled) return {};
  Result<std::unique_ptr<Alerting>> alerting = Alerting::Create(
      io_, config_, rules_->rules(), metrics_.alerts(), /*store_backed=*/options_.keep_state);
  if (!alerting.ok()) return alerting.errors();
  alerting_ = std::move(alerting).value();
  return {};
}

void Agent::StartAlerting() {
  if (alerting_ == nullptr) return;
  alert_sink_ = std::make_unique<AlertSink>(*alerting_);
  alert_streams_ = std::make_unique<AlertStreams>(*alerting_);
  events_.Add(alert_sink_.get());
  if (options_.serve_http) AddLifecycleRoutes();
  alerting_->SetCheckpointRequest([this] { RequestCheckpoint(); });
  if (config_.discover_enabled) {
    discovery_.SetAlertHook([this](const FindingEvent& event) { alerting_->OnFinding(event); });
  }
  alerting_->Start();
}

Result<void> Agent::OpenState() {
  counter_states_ =
      std::make_unique<CounterStates>([this] { return metrics_.PersistedCounters(); });
  stream_states_ = std::make_unique<StreamStates>([this] {
    UpdateBytesLost();  // before the counters are read in the same checkpoint
    StreamStates::Snapshot snapshot;
    for (const FileStreamSet* set : file_stream_sets_) set->CollectStreams(snapshot.streams);
    for (const FileSourceConfig& source : config_.file_sources) snapshot.sources.insert(source.id);
    return snapshot;
  });
  // Every component with state of its own adds its participant here; all of them are migrated
  // and loaded before a line is read, and every checkpoint writes them in one transaction.
  // Streams first: their snapshot brings the lost-bytes counters up to date for the counters'.
  std::vector<StateParticipant*> participants = {stream_states_.get(), counter_states_.get()};
  if (alerting_ != nullptr) {
    alert_states_ = std::make_unique<AlertStates>(*alerting_);
    participants.push_back(alert_states_.get());
  }
  Result<std::unique_ptr<StateStore>> store = StateStore::Open(config_.state.dir, participants);
  if (!store.ok()) return store.errors();
  store_ = std::move(store).value();
  if (!store_->moved_aside().empty()) metrics_.CountCorruptStateFile();
  if (!store_->writable()) checkpoint_error_ = store_->unavailable_reason();
  // Counters of every configured source continue (a pipe, stdin or a socket has no positions,
  // but its lines counter must not go back to 0); a source no longer configured loses them.
  const auto known_source = [this](const std::string& id) {
    bool known = false;
    ForEachSourceList(config_, [&](const auto& list) {
      for (const auto& source : list) known = known || source.id == id;
    });
    return known;
  };
  metrics_.RestoreCounters(counter_states_->saved(), known_source);
  if (store_->loaded()) {
    spdlog::info("state: {}: continuing {} counters and {} file positions", store_->path(),
                 counter_states_->saved().size(), stream_states_->saved_count());
    if (alert_states_ != nullptr) {
      spdlog::info("state: {} known signatures, {} notifications still to deliver",
                   alert_states_->loaded_signatures(), alert_states_->loaded_queued());
    }
  } else {
    spdlog::info("state: {}: no saved state, starting fresh", store_->path());
  }
  return {};
}

void Agent::ArmCheckpointTimer() {
  checkpoint_timer_.expires_after(std::chrono::milliseconds(config_.state.checkpoint_interval_ms));
  checkpoint_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    Checkpoint();
    ArmCheckpointTimer();
  });
}

bool Agent::Checkpoint() {
  const auto started = std::chrono::steady_clock::now();
  // Everything they were waiting for changed before this Collect.
  std::vector<std::function<void(const std::string&)>> waiters;
  waiters.swap(commit_waiters_);
  StateStore::Batch batch = store_->Collect();
  DbStatus status;
  if (!store_->writable()) {
    status = DbStatus(SQLITE_CANTOPEN, store_->unavailable_reason());
  } else {
    status = store_->Write(batch);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (status.ok()) {
    store_->Committed(batch);
    if (!batch.parts.empty()) metrics_.CountCheckpoint(true, seconds);
    if (!checkpoint_error_.empty()) {
      spdlog::info("state: checkpoints are written again to {}", store_->path());
      checkpoint_error_.clear();
    }
    for (const auto& done : waiters) done("");
    return true;
  }
  metrics_.CountCheckpoint(false, seconds);
  // Notifications waiting for this checkpoint go out without it (at-least-once, alert_states.h).
  if (alerting_ != nullptr) alerting_->OnCheckpointFailed();
  const std::string why = "cannot write a checkpoint to " + store_->path() + ": " +
                          (status.message().empty() ? status.ToString() : status.message());
  // Logged when the reason changes, not every interval: a full disk stays full for a while.
  if (why != checkpoint_error_) spdlog::warn("state: {}; counting goes on, retrying", why);
  checkpoint_error_ = why;
  for (const auto& done : waiters) done(why);
  return false;
}

void Agent::RequestCheckpoint() {
  if (store_ == nullptr || checkpoint_posted_ || stopping_) return;
  checkpoint_posted_ = true;
  asio::post(io_, [this] {
    checkpoint_posted_ = false;
    if (!stopping_) Checkpoint();
  });
}

void Agent::AddLifecycleRoutes() {
  AddAlertRoutes(
      http_, *alerting_, admin_token_,
      [this](std::function<void(const std::string&)> done) { CommitThen(std::move(done)); });
}

void Agent::CommitThen(std::function<void(const std::string& error)> done) {
  if (store_ == nullptr) {
    done("");
    return;
  }
  if (stopping_) {
    // The last checkpoints of Stop have been written or are being written: this one may miss them.
    done("the agent is stopping");
    return;
  }
  commit_waiters_.push_back(std::move(done));
  RequestCheckpoint();
}

void Agent::UpdateBytesLost() {
  for (const FileStreamSet* set : file_stream_sets_) {
    uint64_t& reported = bytes_lost_reported_[set->source_id()];
    const uint64_t total = set->bytes_lost();
    if (total > reported) metrics_.AddBytesLost(set->source_id(), "truncated", total - reported);
    reported = total;
  }
}

const std::vector<SavedStream>& Agent::Saved(const std::string& source_id) const {
  return stream_states_->saved(source_id);
}

bool Agent::HasHistory(const std::string& source_id) const {
  return stream_states_->has_history(source_id);
}

int64_t Agent::CheckpointTimeNs(const std::string& source_id) const {
  return stream_states_->saved_at_ns(source_id);
}

std::unique_ptr<ResumableConsumer> Agent::StartFileStream(const std::string& source_id,
                                                          const std::string& path, uint64_t offset,
                                                          const SavedStream* resumed,
                                                          const bool* frozen) {
  return std::make_unique<MatchedStream>(MatchedStream::Options{
      .wiring = StreamWiring(),
      .origin = StreamOrigin{source_id, ++streams_started_, path},
      .counters = metrics_.ForSource(source_id),
      .file = metrics_.AcquireFile(source_id, path),
      .resume = {.offset = offset,
                 .saved = resumed != nullptr ? &resumed->state : nullptr,
                 .frozen = frozen},
  });
}

void Agent::HandOver(const std::string& source_id, std::vector<SavedStream> streams) {
  // At the agent's stop the last checkpoint holds the streams; nothing takes their place.
  if (stopping_) return;
  stream_states_->HandOver(source_id, std::move(streams));
}

void Agent::AddFileStreams(const FileStreamSet* set) { file_stream_sets_.push_back(set); }

void Agent::RemoveFileStreams(const FileStreamSet* set) {
  // Its bytes lost are counted now: the source that takes its place counts its own from 0.
  UpdateBytesLost();
  bytes_lost_reported_.erase(set->source_id());
  std::erase(file_stream_sets_, set);
}

void Agent::AddFindingSink(FindingSink* sink) { findings_.Add(sink); }

void Agent::AddSource(SourceBuilder build) { extra_sources_.push_back(std::move(build)); }

Result<void> Agent::Start() {
  // With alerts, the lifecycle routes need a token even without a file: one is generated.
  Result<AdminToken> token = LoadAdminToken(config_, /*create=*/config_.alerts.enabled);
  if (!token.ok()) return token.errors();
  admin_token_ = token.value().token;
  if (!token.value().warning.empty()) spdlog::warn("{}", token.value().warning);
  // Caught from here on, queued until Run: a SIGTERM while sources start still stops cleanly.
  if (options_.handle_signals) {
    signals_.add(SIGINT);
    signals_.add(SIGTERM);
    signals_.add(SIGHUP);
    WaitForSignal();
  }
  // The state next: a second agent on the same state.dir must fail here, before it binds a port
  // or reads a line.
  if (Result<void> alerting = CreateAlerting(); !alerting.ok()) return alerting;
  if (options_.keep_state) {
    if (Result<void> state = OpenState(); !state.ok()) return state;
  }
  StartAlerting();
  if (options_.serve_http) {
    AddRoutes();
    Result<void> listening = http_.Listen(config_.http_address, config_.http_port);
    if (!listening.ok()) return listening;
    spdlog::info("serving /metrics on http://{}:{}/metrics", config_.http_address, http_.port());
  }

  // One descriptor budget for every source, from the limit raised as far as it goes.
  descriptors_ = std::make_shared<DescriptorBudget>(
      DescriptorBudget::ForLimit(RaiseDescriptorLimit(), config_.max_open_files));
  if (options_.config_sources) {
    const SourceSet::Changes changes = sources_.Apply(config_);
    if (!changes.failed.empty()) {  // at start, a source that cannot open is a load error
      return Failure("source " + changes.failed.front().first + ": " +
                     changes.failed.front().second);
    }
  }
  const SourceContext context = ContextFor(config_);
  for (const SourceBuilder& build : extra_sources_) extra_running_.push_back(build(context));
  for (auto& source : extra_running_) {
    if (Result<void> opened = source->Open(); !opened.ok()) return opened;
  }
  for (auto& source : extra_running_) source->Start();
  sources_started_ = true;
  if (store_ != nullptr) {
    // At once, not an interval later: where each file starts is durable before a line of it is
    // counted, so a crash right after this start resumes there instead of applying start_at.
    Checkpoint();
    ArmCheckpointTimer();
  }
  // Reload re-reads the config's sources; an agent without them has nothing to reload.
  if (options_.config_sources) StartReloads();
  return {};
}

SourceContext Agent::ContextFor(const Config& section) {
  return SourceContext{
      .io = io_,
      .config = section,
      .consumers = [this](const std::string& source_id) -> StreamConsumerFactory {
        const Metrics::SourceCounters counters = metrics_.ForSource(source_id);
        return [this, counters, source_id](const std::string& name) {
          return std::make_unique<MatchedStream>(MatchedStream::Options{
              .wiring = StreamWiring(),
              .origin = StreamOrigin{source_id, ++streams_started_, name},
              .counters = counters,
          });
        };
      },
      .labeled_consumers = [this](const std::string& source_id) -> LabeledStreamConsumerFactory {
        const Metrics::SourceCounters counters = metrics_.ForSource(source_id);
        return [this, counters, source_id](const std::string& name, const StreamLabels& labels) {
          return std::make_unique<MatchedStream>(MatchedStream::Options{
              .wiring = StreamWiring(),
              .origin = StreamOrigin{source_id, ++streams_started_, name, labels},
              .counters = counters,
          });
        };
      },
      .descriptors = descriptors_,
      // Sources end only from the loop, after Start has returned: the sources are all there.
      .ended =
          [this] {
            if (++ended_sources_ < sources_.size() + extra_running_.size()) return;
            asio::post(io_, [this] {
              spdlog::info("every source has ended, stopping");
              Stop();
            });
          },
      .file_streams = store_ != nullptr ? this : nullptr,
  };
}

// Every HTTP route of the agent, registered in one place. Routes that let log text or control
// out are `admin`: loopback Host only, and later a bearer token for the ones that change state.
void Agent::AddRoutes() {
  http_.AddRoute(
      {.path = "/metrics", .handler = [this](const HttpRequest&) {
         metrics_.CountMatchErrors(MatchErrorTotals());
         UpdateBytesLost();
         std::vector<Metrics::FileSample> files;
         for (const FileStreamSet* set : file_stream_sets_) set->CollectFiles(files);
         metrics_.UpdateFiles(files);
         CountUnrecognised();
         return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", metrics_.Serialize()};
       }});
  // The loop answers: that is all liveness means, so a slow disk never restarts the agent.
  http_.AddRoute(
      {.path = "/healthz", .handler = [](const HttpRequest&) {
         return HttpResponse{200, "text/plain; charset=utf-8", "ok: event loop answering\n"};
       }});
  // Log lines leave the agent here: a web page rebound to 127.0.0.1 must not read them.
  http_.AddRoute({.path = "/api/v1/findings", .admin = true, .handler = [this](const HttpRequest&) {
                    return HttpResponse{200, "application/json", LatestFindingsJson(latest_)};
                  }});
  http_.AddRoute(
      {.path = "/api/v1/unrecognised", .admin = true, .handler = [this](const HttpRequest&) {
         return HttpResponse{200, "application/json", UnrecognisedJson(discovery_)};
       }});
  // The status page and its JSON show log lines, so they are admin routes like the findings.
  http_.AddRoute({.path = "/", .admin = true, .handler = [this](const HttpRequest&) {
                    return HttpResponse{200, "text/html; charset=utf-8", RenderStatusHtml(Status()),
                                        StatusPageHeaders()};
                  }});
  http_.AddRoute({.path = "/api/v1/status", .admin = true, .handler = [this](const HttpRequest&) {
                    return HttpResponse{200, "application/json", StatusJson(Status())};
                  }});
  http_.AddRoute({.path = "/readyz", .handler = [this](const HttpRequest&) {
                    const std::string reason = NotReadyReason();
                    if (!reason.empty()) {
                      return HttpResponse{503, "text/plain; charset=utf-8", reason + "\n"};
                    }
                    const size_t sources = sources_.size() + extra_running_.size();
                    return HttpResponse{200, "text/plain; charset=utf-8",
                                        "ready: " + std::to_string(rules_->rules().size()) +
                                            " rules, " + std::to_string(sources) + " source(s)\n"};
                  }});
}

void Agent::CountUnrecognised() {
  // The most frequent templates, lines summed per id (two templates can come to the same text).
  std::vector<Metrics::TemplateCount> top;
  for (const TemplateStats* t : discovery_.Sorted()) {
    auto same = std::find_if(top.begin(), top.end(),
                             [&](const Metrics::TemplateCount& c) { return c.id == t->id; });
    if (same != top.end()) {
      same->count += t->count;
    } else if (top.size() < config_.discover_max_series) {
      top.push_back({t->id, t->count});
    }
  }
  metrics_.SetUnrecognised(top, discovery_.size(), discovery_.evictions());
}

void Agent::WaitForSignal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    if (signal == SIGHUP) {
      if (reloads_ != nullptr) {
        spdlog::info("received SIGHUP: reloading {}", config_.file);
        reloads_->Request("SIGHUP");
      } else {
        spdlog::warn("received SIGHUP: this agent has no config sources to reload; still running");
      }
      WaitForSignal();
      return;
    }
    spdlog::info("received {}, stopping", signal == SIGINT ? "SIGINT" : "SIGTERM");
    Stop();
  });
}

std::string Agent::NotReadyReason() const {
  if (rules_->rules().empty()) return "not ready: no rules loaded";
  if (!sources_started_) return "not ready: sources not started";
  if (std::string reason = sources_.NotReadyReason(); !reason.empty()) {
    return "not ready: " + reason;
  }
  if (!checkpoint_error_.empty()) {
    return "not ready: " + checkpoint_error_ + " (counting goes on; restarting now would read " +
           "again, not lose, what came since the last checkpoint)";
  }
  rlimit limit{};
  const long open = OpenDescriptors();
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && open >= 0 && limit.rlim_cur != RLIM_INFINITY &&
      static_cast<long>(limit.rlim_cur) - open < kReserveDescriptors) {
    return "not ready: " + std::to_string(open) + " of " + std::to_string(limit.rlim_cur) +
           " file descriptors in use";
  }
  return "";
}

void Agent::Run() { io_.run(); }

void Agent::Stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  checkpoint_timer_.cancel();
  if (reloads_ != nullptr) reloads_->Stop();
  if (config_watcher_ != nullptr) config_watcher_->Stop();
  // File streams are saved as they stand and then read nothing more, so a partial line or a hit
  // waiting for context is read again after the restart instead of being settled early now.
  if (store_ != nullptr && sources_started_) {
    Checkpoint();
    stream_states_->Freeze();
  }
  stopping_ = true;
  if (alerting_ != nullptr) alerting_->StopRuns();
  sources_.Stop();
  for (auto& source : extra_running_) source->Stop();
  // Delivery stops first, so the last checkpoint holds every result that came back (a delivered
  // notification is not sent again after the restart), and what the other streams settled as
  // they ended (a last partial line of a socket) is counted.
  if (alerting_ != nullptr) alerting_->Stop();
  if (store_ != nullptr && sources_started_) Checkpoint();
  http_.Stop();
}

}  // namespace faultline
