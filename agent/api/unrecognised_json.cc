#include "agent/api/unrecognised_json.h"

#include <nlohmann/json.hpp>

#include "agent/core/clock.h"
#include "agent/framing/utf8.h"

namespace faultline {
std::string UnrecognisedJson(const Discovery& discovery) {
  nlohmann::json templates = nlohmann::json::array();
  for (const TemplateStats* t : discovery.Sorted()) {
    nlohmann::json examples = nlohmann::json::array();
    for (const std::string& e : t->examples) examples.push_back(SanitizeUtf8(e));
    templates.push_back({{"template_id", t->id},
                         {"template", SanitizeUtf8(t->text)},
                         {"signature", "unrecognised." + t->id},
                         {"cue", CueName(t->cue)},
                         {"severity", SeverityName(CueSeverity(t->cue))},
                         {"count", t->count},
                         {"first",
                          {{"source", t->first.source_id},
                           {"file", SanitizeUtf8(t->first.stream)},
                           {"line", t->first.line_number},
                           {"text", SanitizeUtf8(t->first.text)}}},
                         {"first_seen_ms", UnixMs(t->first_seen)},
                         {"last_seen_ms", UnixMs(t->last_seen)},
                         {"examples", examples}});
  }
  const nlohmann::json out = {{"unrecognised", templates},
                              {"lines", discovery.lines()},
                              {"evicted", discovery.evictions()}};
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace faultline
