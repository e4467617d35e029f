// StatusJson: `GET /api/v1/status`, the status page's content as one JSON object, for scripts and
// dashboards. Same StatusReport as the page (status_report.h); times are RFC 3339 UTC strings and
// milliseconds since the epoch. Strings are valid UTF-8 (invalid bytes replaced), and JSON
// escaping makes them safe to embed. Pure; thread-safe; nothing fails.
#ifndef FAULTLINE_API_STATUS_JSON_H_
#define FAULTLINE_API_STATUS_JSON_H_

#include <string>

#include "agent/api/status_report.h"

namespace faultline {

std::string StatusJson(const StatusReport& report);

}  // namespace faultline

#endif  // FAULTLINE_API_STATUS_JSON_H_
