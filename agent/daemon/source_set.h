// SourceSet: the agent's running sources, keyed by their config id, so that a reload can start
// the sources it adds and stop the ones it removes without touching the others.
//
// Each source is built from a Config that holds only its own section (and the global settings
// of the config it came from), through the one registration point BuildSources (sources.h); the
// SourceSet keeps that Config alive as long as the source, so a source may keep a reference to
// it. Apply compares sections by value: a source whose section is unchanged keeps running (its
// streams, offsets and pending context untouched); one whose section changed is stopped (its
// streams end and settle) and started again from the new section; one that is gone is stopped.
//
// Runs on the event-loop thread, like the sources. A source that cannot follow a stream reports
// it through its status and its log; one that cannot open at all (a listener whose address is
// taken) is not kept, is reported in Changes::failed and is tried again by the next Apply.
#ifndef FAULTLINE_DAEMON_SOURCE_SET_H_
#define FAULTLINE_DAEMON_SOURCE_SET_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/config/config.h"
#include "agent/core/result.h"
#include "agent/daemon/sources.h"

namespace faultline {

class SourceSet {
 public:
  // Makes the SourceContext a source is built with, for a Config holding only that source.
  using ContextFactory = std::function<SourceContext(const Config& section)>;

  explicit SourceSet(ContextFactory context) : context_(std::move(context)) {}
  ~SourceSet() { Stop(); }
  SourceSet(const SourceSet&) = delete;
  SourceSet& operator=(const SourceSet&) = delete;

  // What Apply did, by source id.
  struct Changes {
    std::vector<std::string> started;
    std::vector<std::string> stopped;
    std::vector<std::string> restarted;
    // Sources that could not open (a listener's address in use), with the reason: not running,
    // so the next Apply tries them again.
    std::vector<std::pair<std::string, std::string>> failed;
  };

  // Makes the running sources those of `config` (see the top). The first call starts them all.
  Changes Apply(const Config& config);
  // Stops every source. Idempotent.
  void Stop();

  size_t size() const { return running_.size(); }
  // Each running source's id and status, by id.
  std::vector<std::pair<std::string, SourceStatus>> Status() const;
  // The first running source that is not ready, as "source ID: reason"; empty when all are.
  std::string NotReadyReason() const;

 private:
  struct Running {
    std::unique_ptr<Config> section;
    std::unique_ptr<Source> source;
  };

  // Builds, opens and starts the source of `section`; the reason when it cannot open.
  Result<Running> Start(Config section);

  const ContextFactory context_;
  std::map<std::string, Running> running_;
};

// The sources of `config`, each as a Config that holds only that source, by id.
std::map<std::string, Config> SourceSections(const Config& config);
// Whether two such sections declare the same source in the same way.
bool SameSourceSection(const Config& a, const Config& b);

}  // namespace faultline

#endif  // FAULTLINE_DAEMON_SOURCE_SET_H_
