#include "agent/app/scan_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/framing/line_framer.h"
#include "agent/match/stream_pipeline.h"

namespace faultline {
namespace {
constexpr size_t kReadBytes = 1 << 20;
}  // namespace

bool ScanFd(int fd, const std::string& name, const std::shared_ptr<const RuleSet>& rules,
            MatchScratch& scratch, size_t max_line_bytes, ScanReport& report,
            const std::function<void(size_t)>& on_bytes, std::string* error) {
  report.BeginFile(name);
  StreamPipeline pipeline(rules, &report, &scratch, max_line_bytes);
  std::string buffer(kReadBytes, '\0');
  bool ok = true;
  while (true) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = "cannot read " + name + ": " + std::strerror(errno);
      ok = false;
      break;
    }
    if (n == 0) break;
    pipeline.Feed(std::string_view(buffer.data(), n));
    if (on_bytes) on_bytes(static_cast<size_t>(n));
  }
  pipeline.Finish();
  report.EndFile(pipeline.lines(), pipeline.truncated_lines());
  return ok;
}

void ScanText(std::string_view text, const std::string& name,
              const std::shared_ptr<const RuleSet>& rules, MatchScratch& scratch,
              ScanReport& report) {
  report.BeginFile(name);
  StreamPipeline pipeline(rules, &report, &scratch, kDefaultMaxLineBytes);
  pipeline.Feed(text);
  pipeline.Finish();
  report.EndFile(pipeline.lines(), pipeline.truncated_lines());
}

bool ScanPath(const std::string& path, const std::shared_ptr<const RuleSet>& rules,
              MatchScratch& scratch, ScanReport& report, std::string* error) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  const bool ok =
      ScanFd(fd, path, rules, scratch, kDefaultMaxLineBytes, report, nullptr, error);
  close(fd);
  return ok;
}

}  // namespace faultline
