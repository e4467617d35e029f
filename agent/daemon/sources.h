// Sources: the running sources of streams the config declares, built in one place.
//
// A Source turns one config section into streams and hands each stream's bytes to a consumer it
// gets from SourceContext::consumers. A source type is registered once, by its list's entry in
// kSourceLists (agent/config/config.h): BuildSources, reload and the restart's counters walk that
// table, and BuildSources calls the type's BuildSource overload below (defined in the type's own
// file, <type>_source.cc), so a registered type without one does not compile. CONTRIBUTING.md
// has every step; the agent, the pipelines and the sinks do not change.
//
// Everything runs on the agent's event loop; Start and Stop are called once each, from it. A
// source that cannot start a stream (a file it may not read) reports it and keeps the rest going;
// nothing here throws.
#ifndef FAULTLINE_DAEMON_SOURCES_H_
#define FAULTLINE_DAEMON_SOURCES_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/config/config.h"
#include "agent/core/asio.h"
#include "agent/core/result.h"
#include "agent/source/descriptor_budget.h"
#include "agent/source/source_status.h"
#include "agent/source/stream_consumer.h"

namespace faultline {

class FileStreamHost;

class Source {
 public:
  virtual ~Source() = default;
  // Load-time setup that can fail (binding a listener), before any source starts: an error
  // with the reason stops the agent's start.
  virtual Result<void> Open() { return {}; }
  virtual void Start() = 0;
  // Ends every stream (each consumer gets OnEnd) and releases what the source holds.
  virtual void Stop() = 0;
  // What the status page shows of the source: its streams, their lag, its problems.
  virtual SourceStatus Status() const { return {}; }
  // Why the source cannot do its job as configured now (/readyz); empty when it can.
  virtual std::string NotReadyReason() const { return ""; }
};

// What a source needs of the agent.
struct SourceContext {
  asio::io_context& io;
  const Config& config;
  // The consumer factory for the streams of source `source_id`.
  std::function<StreamConsumerFactory(const std::string& source_id)> consumers;
  // The same, for streams with labels of their own (syslog's host and app).
  std::function<LabeledStreamConsumerFactory(const std::string& source_id)> labeled_consumers;
  // Shared by every source that holds descriptors.
  std::shared_ptr<DescriptorBudget> descriptors;
  // Called once by a source whose streams have all ended for good (stdin closed, a watched
  // command's output closed); when every source has ended, the agent stops. Sources that follow
  // files, pipes or sockets never end and never call it.
  std::function<void()> ended;
  // Saved file streams and checkpoints (file_streams.h); null without a state store.
  FileStreamHost* file_streams = nullptr;
};

std::vector<std::unique_ptr<Source>> BuildSources(const SourceContext& context);

// One section of a source type's list -> its source; one overload per entry of kSourceLists.
std::unique_ptr<Source> BuildSource(const SourceContext& context, const FileSourceConfig& section);
std::unique_ptr<Source> BuildSource(const SourceContext& context, const NetSourceConfig& section);
std::unique_ptr<Source> BuildSource(const SourceContext& context, const StdinSourceConfig& section);
std::unique_ptr<Source> BuildSource(const SourceContext& context, const FifoSourceConfig& section);

}  // namespace faultline

#endif  // FAULTLINE_DAEMON_SOURCES_H_
