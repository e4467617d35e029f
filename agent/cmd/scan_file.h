// ScanFd: reads one finished stream to its end through a StreamPipeline into a ScanReport.
// Shared by `scan`, `rules test` and `rules eval`, so all three see exactly what the daemon sees.
#ifndef FAULTLINE_CMD_SCAN_FILE_H_
#define FAULTLINE_CMD_SCAN_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent/cmd/scan_report.h"
#include "agent/core/result.h"
#include "agent/discover/discovery.h"
#include "agent/framing/framing_options.h"
#include "agent/match/match_ahead.h"
#include "agent/match/rule_set.h"

namespace faultline {

// Reads `fd` (not closed) to EOF as the stream `name`: a regular file through mappings, anything
// else with read() (source/input_reader.h). `on_bytes` is told of every piece. An error when a
// read fails; what was read before is still in the report. `discovery`, when
// given, records the error lines no rule explained (the rules must be compiled with the
// discovery's watch patterns, error_cues.h). `ahead`, when given, runs the primary pass on its
// workers (match_ahead.h; started with `rules`): the same report, sooner on several CPUs.
Result<void> ScanFd(int fd, const std::string& name, const std::shared_ptr<const RuleSet>& rules,
                    MatchScratch& scratch, const FramingOptions& framing, ScanReport& report,
                    const std::function<void(size_t)>& on_bytes, Discovery* discovery = nullptr,
                    MatchAhead* ahead = nullptr);

// Scans in-memory text (rule examples) as one stream.
void ScanText(std::string_view text, const std::string& name,
              const std::shared_ptr<const RuleSet>& rules, MatchScratch& scratch,
              ScanReport& report);

// Opens and scans the file at `path`; an error when it cannot be opened or read.
Result<void> ScanPath(const std::string& path, const std::shared_ptr<const RuleSet>& rules,
                      MatchScratch& scratch, ScanReport& report);

}  // namespace faultline

#endif  // FAULTLINE_CMD_SCAN_FILE_H_
