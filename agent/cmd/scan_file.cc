#include "agent/cmd/scan_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "agent/framing/line_framer.h"
#include "agent/match/stream_pipeline.h"
#include "agent/source/input_reader.h"

namespace faultline {

Result<void> ScanFd(int fd, const std::string& name, const std::shared_ptr<const RuleSet>& rules,
                    MatchScratch& scratch, const FramingOptions& framing, ScanReport& report,
                    const std::function<void(size_t)>& on_bytes, Discovery* discovery,
                    MatchAhead* ahead) {
  report.BeginFile(name);
  std::optional<StreamDiscovery> unrecognised;
  if (discovery != nullptr) {
    unrecognised.emplace(*discovery, "", name, rules->max_explain_window());
  }
  StreamPipeline pipeline(rules, &report, &scratch, framing, nullptr, nullptr,
                          unrecognised ? &*unrecognised : nullptr);
  pipeline.set_match_ahead(ahead);
  const InputReadResult read = ReadInput(fd, [&](std::string_view bytes) {
    pipeline.Feed(bytes);
    if (on_bytes) on_bytes(bytes.size());
  });
  pipeline.Finish();
  report.EndFile(pipeline.lines(), pipeline.truncated_lines());
  if (!read.ok()) return Failure("cannot read " + name + ": " + read.error);
  return {};
}

void ScanText(std::string_view text, const std::string& name,
              const std::shared_ptr<const RuleSet>& rules, MatchScratch& scratch,
              ScanReport& report) {
  report.BeginFile(name);
  StreamPipeline pipeline(rules, &report, &scratch, FramingOptions{});
  pipeline.Feed(text);
  pipeline.Finish();
  report.EndFile(pipeline.lines(), pipeline.truncated_lines());
}

Result<void> ScanPath(const std::string& path, const std::shared_ptr<const RuleSet>& rules,
                      MatchScratch& scratch, ScanReport& report) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Failure("cannot open " + path + ": " + std::strerror(errno));
  Result<void> scanned = ScanFd(fd, path, rules, scratch, FramingOptions{}, report, nullptr);
  close(fd);
  return scanned;
}

}  // namespace faultline
