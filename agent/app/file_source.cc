// Sources of `type: file`: one FileTailer per config entry (file_tailer.h has what it does).
#include <chrono>

#include "agent/app/sources.h"
#include "agent/source/file_tailer.h"

namespace faultline {
namespace {

class FileSource : public Source {
 public:
  FileSource(asio::io_context& io, FileTailerOptions options, StreamConsumerFactory consumers)
      : tailer_(io, std::move(options), std::move(consumers)) {}
  void Start() override { tailer_.Start(); }
  void Stop() override { tailer_.Stop(); }
  SourceStatus Status() const override { return tailer_.Status(); }
  std::string NotReadyReason() const override { return tailer_.Problem(); }

 private:
  FileTailer tailer_;
};

}  // namespace

void BuildFileSources(const SourceContext& context, std::vector<std::unique_ptr<Source>>& out) {
  for (const FileSourceConfig& source : context.config.file_sources) {
    FileTailerOptions options;
    options.patterns = source.paths;
    options.exclude = source.exclude;
    options.start_at_end = source.start_at == StartAt::kEnd;
    options.poll_interval = std::chrono::milliseconds(source.poll_interval_ms);
    options.rescan_interval = std::chrono::milliseconds(source.rescan_interval_ms);
    options.quiet_after = std::chrono::milliseconds(context.config.context_idle_flush_ms);
    options.rotate_wait = std::chrono::milliseconds(source.rotate_wait_ms);
    options.descriptors = context.descriptors;
    out.push_back(std::make_unique<FileSource>(context.io, std::move(options),
                                               context.consumers(source.id)));
  }
}

}  // namespace faultline
