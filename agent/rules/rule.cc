#include "agent/rules/rule.h"

namespace faultline {

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
    case Severity::kCritical:
      return "critical";
  }
  return "error";
}

std::optional<Severity> ParseSeverity(std::string_view name) {
  if (name == "info") return Severity::kInfo;
  if (name == "warning") return Severity::kWarning;
  if (name == "error") return Severity::kError;
  if (name == "critical") return Severity::kCritical;
  return std::nullopt;
}

}  // namespace faultline
