#include "agent/app/agent.h"

#include <spdlog/spdlog.h>

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <optional>

#include "agent/app/admin_token.h"
#include "agent/app/findings_json.h"
#include "agent/app/status_json.h"
#include "agent/app/status_page.h"
#include "agent/app/unrecognised_json.h"
#include "agent/framing/utf8.h"
#include "agent/match/stream_pipeline.h"

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

// One stream of any source: its pipeline and the counters of its source.
class Agent::MatchedStream : public StreamConsumer {
 public:
  // `discovery`, when given, records this stream's unrecognised errors.
  MatchedStream(StreamOrigin origin, const std::shared_ptr<const RuleSet>& rules, FindingSink* sink,
             MatchScratch* scratch, size_t max_line_bytes, Metrics& metrics,
             Metrics::SourceCounters counters, Discovery* discovery,
             std::unordered_set<MatchedStream*>& live)
      : origin_(std::move(origin)),
        unrecognised_(discovery == nullptr
                          ? std::nullopt
                          : std::make_optional<StreamDiscovery>(*discovery, origin_.source_id,
                                                                origin_.stream_name,
                                                                rules->max_explain_window())),
        pipeline_(rules, sink, scratch, max_line_bytes, &origin_, nullptr,
                  unrecognised_ ? &*unrecognised_ : nullptr),
        metrics_(metrics),
        counters_(counters),
        live_(live) {
    live_.insert(this);
  }
  ~MatchedStream() override { live_.erase(this); }

  // A reload: the same stream, framer and pending context, matched by the new rules.
  void Rebind(const std::shared_ptr<const RuleSet>& rules, MatchScratch* scratch) {
    pipeline_.Rebind(rules, scratch);
    if (unrecognised_) unrecognised_->SetExplainWindow(rules->max_explain_window());
  }

  void OnBytes(std::string_view bytes) override {
    counters_.bytes->Increment(static_cast<double>(bytes.size()));
    pipeline_.Feed(bytes);
    pipeline_.Drain();  // a daemon reports within milliseconds, not when a batch fills
    Account();
  }
  void OnQuiet() override {
    if (pipeline_.has_pending() || (unrecognised_ && unrecognised_->held() > 0)) {
      pipeline_.SettlePending();
      Account();
    }
  }
  void OnEnd() override {
    pipeline_.Finish();
    Account();
  }

 private:
  void Account() {
    const uint64_t lines = pipeline_.lines();
    const uint64_t truncated = pipeline_.truncated_lines();
    counters_.lines->Increment(static_cast<double>(lines - counted_lines_));
    if (truncated != counted_truncated_) metrics_.AddTruncatedLines(truncated - counted_truncated_);
    counted_lines_ = lines;
    counted_truncated_ = truncated;
    if (unrecognised_) {
      const uint64_t n = unrecognised_->unrecognised_lines();
      counters_.unrecognised->Increment(static_cast<double>(n - counted_unrecognised_));
      counted_unrecognised_ = n;
    }
  }

  const StreamOrigin origin_;
  std::optional<StreamDiscovery> unrecognised_;
  StreamPipeline pipeline_;
  Metrics& metrics_;
  const Metrics::SourceCounters counters_;
  uint64_t counted_lines_ = 0;
  uint64_t counted_truncated_ = 0;
  uint64_t counted_unrecognised_ = 0;
  std::unordered_set<MatchedStream*>& live_;
};

void Agent::RebindStreams(const std::shared_ptr<const RuleSet>& rules, MatchScratch* scratch) {
  for (MatchedStream* stream : live_streams_) stream->Rebind(rules, scratch);
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
      sources_([this](const Config& section) { return ContextFor(section); }) {
  signature_labels_.Bind(rules_->rules());
  metrics_.BindRules(rules_->rules());
  findings_.Add(metrics_sink_.get());
  findings_.Add(&events_);
  events_.Add(&latest_);
  events_.Add(&tally_);
}

Agent::~Agent() = default;

void Agent::AddFindingSink(FindingSink* sink) { findings_.Add(sink); }

void Agent::AddSource(SourceBuilder build) { extra_sources_.push_back(std::move(build)); }

bool Agent::Start(std::string* error) {
  if (!config_.http_admin_token_file.empty()) {
    Result<AdminToken> token = ReadAdminToken(config_.http_admin_token_file);
    if (!token.ok()) {
      *error = FormatErrors(token.errors());
      return false;
    }
    admin_token_ = token.value().token;
    if (!token.value().warning.empty()) spdlog::warn("{}", token.value().warning);
  }
  // Caught from here on, queued until Run: a SIGTERM while sources start still stops cleanly.
  if (options_.handle_signals) {
    signals_.add(SIGINT);
    signals_.add(SIGTERM);
    signals_.add(SIGHUP);
    WaitForSignal();
  }
  if (options_.serve_http) {
    AddRoutes();
    if (!http_.Listen(config_.http_address, config_.http_port, error)) return false;
    spdlog::info("serving /metrics on http://{}:{}/metrics", config_.http_address, http_.port());
  }

  // One descriptor budget for every source, from the limit raised as far as it goes.
  descriptors_ = std::make_shared<DescriptorBudget>(
      DescriptorBudget::ForLimit(RaiseDescriptorLimit(), config_.max_open_files));
  if (options_.config_sources) {
    const SourceSet::Changes changes = sources_.Apply(config_);
    if (!changes.failed.empty()) {  // at start, a source that cannot open is a load error
      *error = "source " + changes.failed.front().first + ": " + changes.failed.front().second;
      return false;
    }
  }
  const SourceContext context = ContextFor(config_);
  for (const SourceBuilder& build : extra_sources_) extra_running_.push_back(build(context));
  for (auto& source : extra_running_) {
    if (!source->Open(error)) return false;
  }
  for (auto& source : extra_running_) source->Start();
  sources_started_ = true;
  // Reload re-reads the config's sources; an agent without them has nothing to reload.
  if (options_.config_sources) StartReloads();
  return true;
}

SourceContext Agent::ContextFor(const Config& section) {
  return SourceContext{
      .io = io_,
      .config = section,
      .consumers =
          [this](const std::string& source_id) -> StreamConsumerFactory {
            const Metrics::SourceCounters counters = metrics_.ForSource(source_id);
            return [this, counters, source_id](const std::string& name) {
              return std::make_unique<MatchedStream>(StreamOrigin{source_id, ++streams_started_, name},
                                                  rules_, &findings_, scratch_.get(),
                                                  config_.max_line_bytes, metrics_, counters,
                                                  config_.discover_enabled ? &discovery_ : nullptr,
                                                  live_streams_);
            };
          },
      .labeled_consumers =
          [this](const std::string& source_id) -> LabeledStreamConsumerFactory {
            const Metrics::SourceCounters counters = metrics_.ForSource(source_id);
            return [this, counters, source_id](const std::string& name,
                                               const StreamLabels& labels) {
              return std::make_unique<MatchedStream>(
                  StreamOrigin{source_id, ++streams_started_, name, labels}, rules_, &findings_,
                  scratch_.get(), config_.max_line_bytes, metrics_, counters,
                  config_.discover_enabled ? &discovery_ : nullptr, live_streams_);
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
  };
}

// Every HTTP route of the agent, registered in one place. Routes that let log text or control
// out are `admin`: loopback Host only, and later a bearer token for the ones that change state.
void Agent::AddRoutes() {
  http_.AddRoute(
      {.path = "/metrics", .handler = [this](const HttpRequest&) {
         metrics_.CountMatchErrors(MatchErrorTotals());
         CountUnrecognised();
         return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", metrics_.Serialize()};
       }});
  // The loop answers: that is all liveness means, so a slow disk never restarts the agent.
  http_.AddRoute({.path = "/healthz", .handler = [](const HttpRequest&) {
                    return HttpResponse{200, "text/plain; charset=utf-8",
                                        "ok: event loop answering\n"};
                  }});
  // Log lines leave the agent here: a web page rebound to 127.0.0.1 must not read them.
  http_.AddRoute({.path = "/api/v1/findings", .admin = true, .handler = [this](const HttpRequest&) {
                    return HttpResponse{200, "application/json", LatestFindingsJson(latest_)};
                  }});
  http_.AddRoute({.path = "/api/v1/unrecognised", .admin = true, .handler = [this](const HttpRequest&) {
                    return HttpResponse{200, "application/json", UnrecognisedJson(discovery_)};
                  }});
  // The status page and its JSON show log lines, so they are admin routes like the findings.
  http_.AddRoute({.path = "/", .admin = true, .handler = [this](const HttpRequest&) {
                    return HttpResponse{200, "text/html; charset=utf-8",
                                        RenderStatusHtml(Status()), StatusPageHeaders()};
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
  if (reloads_ != nullptr) reloads_->Stop();
  if (config_watcher_ != nullptr) config_watcher_->Stop();
  sources_.Stop();
  for (auto& source : extra_running_) source->Stop();
  http_.Stop();
}

}  // namespace faultline
