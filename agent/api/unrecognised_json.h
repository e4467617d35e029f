// The JSON of GET /api/v1/unrecognised: the templates of error lines no rule explained, most
// lines first, each with its first occurrence and a few example lines. Pure; log bytes are
// sanitised to valid UTF-8.
#ifndef FAULTLINE_API_UNRECOGNISED_JSON_H_
#define FAULTLINE_API_UNRECOGNISED_JSON_H_

#include <string>

#include "agent/discover/discovery.h"

namespace faultline {

std::string UnrecognisedJson(const Discovery& discovery);

}  // namespace faultline

#endif  // FAULTLINE_API_UNRECOGNISED_JSON_H_
