// Sources of `type: fifo`: one FifoReader per config entry (fifo_reader.h has what it does). A
// pipe that cannot be made or opened is reported once and the other sources run on.
#include <spdlog/spdlog.h>

#include <chrono>

#include "agent/daemon/sources.h"
#include "agent/source/fifo_reader.h"

namespace faultline {
namespace {

class FifoSource : public Source {
 public:
  FifoSource(asio::io_context& io, std::string id, std::string path,
             std::chrono::milliseconds quiet_after, StreamConsumerFactory consumers)
      : id_(std::move(id)), reader_(io, std::move(path), quiet_after, std::move(consumers)) {}
  void Start() override {
    if (Result<void> started = reader_.Start(); !started.ok()) {
      spdlog::error("source {}: {}; not reading it", id_, JoinErrors(started.errors()));
    }
  }
  void Stop() override { reader_.Stop(); }

 private:
  const std::string id_;
  FifoReader reader_;
};

}  // namespace

std::unique_ptr<Source> BuildSource(const SourceContext& context, const FifoSourceConfig& source) {
  return std::make_unique<FifoSource>(
      context.io, source.id, source.path,
      std::chrono::milliseconds(context.config.context_idle_flush_ms),
      context.consumers(source.id));
}

}  // namespace faultline
