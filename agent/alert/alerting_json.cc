// Alerting (alerting.h), the JSON of GET /api/v1/signatures, `faultline signatures` and the
// receivers' delivery state.

#include <nlohmann/json.hpp>

#include "agent/alert/alerting.h"
#include "agent/alert/redact.h"

namespace faultline {
namespace {

using nlohmann::json;

json FixJson(const FixRecord& f) {
  return json{{"id", f.id},
              {"selector", f.selector},
              {"fixed_in", f.fixed_in},
              {"after_version", f.after_version},
              {"fixed_at", FormatTimestampMs(f.fixed_at_ms)},
              {"by", f.by},
              {"note", f.note},
              {"origin", FixOriginName(f.origin)},
              {"regressed", std::vector<std::string>(f.regressed_signatures.begin(),
                                                     f.regressed_signatures.end())}};
}

}  // namespace

std::string Alerting::SignaturesJson() const {
  const int64_t now = NowMs();
  json list = json::array();
  for (const auto& [signature, r] : tracker_.records()) {
    json labels = json::object();
    for (const auto& [name, value] : r.labels) labels[name] = value;
    json fixes = json::array();
    for (const FixRecord& f : tracker_.fixes()) {
      if (f.Covers(signature, r.rule_id)) fixes.push_back(FixJson(f));
    }
    json mute = nullptr;
    if (r.mute) {
      mute = json{{"until", FormatTimestampMs(r.mute->until_ms)},
                  {"reason", r.mute->reason},
                  {"by", r.mute->by},
                  {"occurrences", r.mute->occurrences}};
    }
    json notified = json::object();
    for (const auto& [receiver, at] : r.notified_by_receiver)
      notified[receiver] = FormatTimestampMs(at);
    list.push_back(
        {{"signature", signature},
         {"rule_id", r.rule_id},
         {"labels", labels},
         {"state", SignatureStateName(tracker_.StateOf(r, now))},
         {"count", r.count},
         {"first_seen", FormatTimestampMs(r.first_seen_ms)},
         {"last_seen", FormatTimestampMs(r.last_seen_ms)},
         {"versions_seen", r.versions_seen},
         {"pre_fix",
          {{"version", r.pre_fix_version},
           {"time", r.pre_fix_time},
           {"version_unknown", r.version_unknown}}},
         {"fixes", fixes},
         {"mute", mute},
         {"resolution",
          {{"job", r.failed_in_job}, {"clean_runs", r.clean_runs}, {"flapping", r.flapping}}},
         {"last_hit",
          {{"source", r.last_source},
           {"file", RedactSecrets(r.last_file)},
           {"line", r.last_line},
           {"text", RedactSecrets(r.last_hit)}}},
         {"notified", notified}});
  }
  json fixes = json::array();
  for (const FixRecord& f : tracker_.fixes()) fixes.push_back(FixJson(f));
  return json{{"signatures", list}, {"fixes", fixes}}.dump(2, ' ', false,
                                                           json::error_handler_t::replace);
}

std::string Alerting::StateName(std::string_view signature) const {
  const SignatureRecord* record = tracker_.Find(signature);
  if (record == nullptr) return "";
  return std::string(SignatureStateName(tracker_.StateOf(*record, NowMs())));
}

std::string Alerting::ReceiversJson() const {
  json list = json::array();
  for (const Receiver& r : receivers_) {
    const Outbox::TargetStatus& s = outbox_->targets().at(r.target());
    list.push_back({{"name", r.name()},
                    {"target", r.target()},
                    {"disabled", s.disabled},
                    {"disabled_reason", s.disabled_reason},
                    {"paused_until", FormatTimestampMs(s.paused_until_ms)},
                    {"last_success", FormatTimestampMs(s.last_success_ms)},
                    {"queued", s.queued},
                    {"coalesced", s.coalesced}});
  }
  return json{{"receivers", list}}.dump(2);
}

}  // namespace faultline
