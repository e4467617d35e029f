#include "agent/api/findings_json.h"

#include <nlohmann/json.hpp>

#include "agent/core/clock.h"

namespace faultline {

std::string LatestFindingsJson(const LatestFindings& latest) {
  nlohmann::json findings = nlohmann::json::array();
  for (const FindingEvent& e : latest.events()) {
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [name, value] : e.labels) labels[name] = value;
    findings.push_back({{"signature", e.signature},
                        {"rule_id", e.rule_id},
                        {"severity", SeverityName(e.severity)},
                        {"labels", labels},
                        {"source", e.source_id},
                        {"stream", e.stream_name},
                        {"line", e.line_number},
                        {"observed_at_ms", UnixMs(e.observed_at)},
                        {"text", e.text},
                        {"text_truncated", e.text_truncated},
                        {"context_before", e.context_before}});
  }
  nlohmann::json out = {{"findings", findings}, {"forgotten", latest.forgotten()}};
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace faultline
