// The JSON of GET /api/v1/findings: the latest hit of every signature, most recent first, with
// the lines before it. Pure; the events' text is already valid UTF-8.
#ifndef FAULTLINE_API_FINDINGS_JSON_H_
#define FAULTLINE_API_FINDINGS_JSON_H_

#include <string>

#include "agent/sink/finding_events.h"

namespace faultline {

std::string LatestFindingsJson(const LatestFindings& latest);

}  // namespace faultline

#endif  // FAULTLINE_API_FINDINGS_JSON_H_
