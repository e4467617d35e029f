#include "agent/api/findings_json.h"

#include <chrono>
#include <nlohmann/json.hpp>

namespace faultline {

std::string LatestFindingsJson(const LatestFindings& latest) {
  nlohmann::json findings = nlohmann::json::array();
  for (const FindingEvent& e : latest.events()) {
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [name, value] : e.labels) labels[name] = value;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        e.observed_at.time_since_epoch());
    findings.push_back({{"signature", e.signature},
                        {"rule_id", e.rule_id},
                        {"severity", SeverityName(e.severity)},
                        {"labels", labels},
                        {"source", e.source_id},
                        {"stream", e.stream_name},
                        {"line", e.line_number},
                        {"observed_at_ms", ms.count()},
                        {"text", e.text},
                        {"text_truncated", e.text_truncated},
                        {"context_before", e.context_before}});
  }
  nlohmann::json out = {{"findings", findings}, {"forgotten", latest.forgotten()}};
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace faultline
