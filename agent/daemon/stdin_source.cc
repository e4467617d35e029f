// Sources of `type: stdin` (at most one; stdin_reader.h has what it does). The source ends when
// standard input closes.
#include <chrono>

#include "agent/daemon/sources.h"
#include "agent/source/stdin_reader.h"

namespace faultline {
namespace {

class StdinSource : public Source {
 public:
  StdinSource(asio::io_context& io, std::chrono::milliseconds quiet_after,
              StreamConsumerFactory consumers, std::function<void()> ended)
      : reader_(io, quiet_after, std::move(consumers), std::move(ended)) {}
  void Start() override { reader_.Start(); }
  void Stop() override { reader_.Stop(); }

 private:
  StdinReader reader_;
};

}  // namespace

std::unique_ptr<Source> BuildSource(const SourceContext& context, const StdinSourceConfig& source) {
  return std::make_unique<StdinSource>(
      context.io, std::chrono::milliseconds(context.config.context_idle_flush_ms),
      context.consumers(source.id), context.ended);
}

}  // namespace faultline
