// Agent: the daemon behind `faultline run`. It wires the stages of DESIGN.md together on one
// Asio event loop: sources (file tailers, sockets) -> framing and matching (one StreamPipeline
// per stream) -> the finding fan-out (metrics first; the lifecycle tracker and alert policy are
// added to the same fan-out; owned events feed the latest hit per signature) and the HTTP
// listener that serves /metrics, /healthz, /readyz and /api/v1/findings.
//
// Everything runs on the one thread that calls Run(); Stop() may be called from a signal handler
// installed on the same loop (Start installs one for SIGINT and SIGTERM; SIGHUP is logged and
// ignored until reload exists, so that a stray `kill -HUP` or a closed terminal never stops the
// agent). When every source has ended (stdin closed; sources that follow files never end), the
// agent stops by itself. Start fails, with the reason, only at load time (the listener cannot
// bind). Owns everything it creates; the RuleSet is shared.
#ifndef FAULTLINE_APP_AGENT_H_
#define FAULTLINE_APP_AGENT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/config/config.h"
#include "agent/core/asio.h"
#include "agent/http/http_server.h"
#include "agent/match/rule_set.h"
#include "agent/sink/finding_events.h"
#include "agent/sink/metrics.h"
#include "agent/sink/signature_labels.h"
#include "agent/app/sources.h"

namespace faultline {

// What a command that embeds the agent changes (`faultline watch`); the defaults are the daemon's.
struct AgentOptions {
  bool serve_http = true;      // listen on http.listen; false: no HTTP server at all
  bool handle_signals = true;  // SIGINT/SIGTERM stop the agent (watch forwards them instead)
  bool config_sources = true;  // start the sources the config declares
};

class Agent {
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

  bool Start(std::string* error);
  // Runs the loop until SIGINT/SIGTERM or Stop().
  void Run();
  void Stop();

 private:
  class MetricsSink;
  class MatchedStream;

  void AddRoutes();
  void WaitForSignal();
  // Why the agent is not ready to do its job; empty when it is (/readyz).
  std::string NotReadyReason() const;

  const Config config_;
  const std::shared_ptr<const RuleSet> rules_;
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
  uint64_t streams_started_ = 0;
  bool sources_started_ = false;
  MatchScratch scratch_;
  HttpServer http_;
  std::vector<std::unique_ptr<Source>> sources_;
  size_t ended_sources_ = 0;
  bool stopped_ = false;
};

}  // namespace faultline

#endif  // FAULTLINE_APP_AGENT_H_
