// SignatureRecord, FixRecord, MuteRecord: what the agent remembers about every signature it has
// seen (docs/design.md section 5), persisted in the state store and shown by
// `faultline signatures`.
//
// A fix applies to a selector: an exact signature (`rule.id{lib=aio}`) or a rule id, which covers
// every signature of the rule, including ones not seen yet (a `fixes:` entry shipped to a fleet).
// It says how "newer than the fix" is judged:
//   - fixed_in V: an occurrence in V or later regresses (the fix was to ship in V);
//   - after_version V ("fixed in the next version"): the highest version seen when the fix was
//     marked; only an occurrence in a version above V regresses;
//   - neither: by time, the line's own timestamp when it has one, else its arrival, after
//     fixed_at.
// A fix raises at most one regression per signature (regressed_signatures remembers which).
//
// Plain values; copyable.
#ifndef FAULTLINE_ALERT_SIGNATURE_RECORD_H_
#define FAULTLINE_ALERT_SIGNATURE_RECORD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/alert/notification.h"

namespace faultline {

enum class FixOrigin { kCli, kApi, kConfig, kObserved };
std::string_view FixOriginName(FixOrigin origin);
std::optional<FixOrigin> ParseFixOrigin(std::string_view name);

struct FixRecord {
  int64_t id = 0;             // unique among the agent's fixes
  std::string selector;       // a signature or a rule id
  std::string fixed_in;       // occurrences at or above this version regress
  std::string after_version;  // occurrences above this version regress
  int64_t fixed_at_ms = 0;
  std::string by;
  std::string note;
  FixOrigin origin = FixOrigin::kCli;
  // Signatures this fix has already raised its one regression for.
  std::set<std::string> regressed_signatures;

  bool Covers(std::string_view signature, std::string_view rule_id) const {
    return selector == signature || selector == rule_id;
  }
};

struct MuteRecord {
  int64_t set_at_ms = 0;
  int64_t until_ms = 0;
  std::string reason;
  std::string by;
  // What happened while it held, for the one summary at its end.
  uint64_t occurrences = 0;
  std::set<std::string> runs;  // streams that had occurrences, bounded by kMaxMutedRuns
  uint64_t runs_overflow = 0;
  bool regressed = false;
  static constexpr std::size_t kMaxMutedRuns = 1000;
};

enum class SignatureState {
  kNew,
  kActive,
  kQuiet,
  kFixed,
  kRegressed,
  kMuted,
  kResolved,  // resolved by successful runs, not failing since
  kFlapping,  // fired and resolved again and again (signature_tracker.h)
};
std::string_view SignatureStateName(SignatureState state);

struct SignatureRecord {
  static constexpr std::size_t kMaxVersionsSeen = 16;

  std::string signature;
  std::string rule_id;
  std::vector<std::pair<std::string, std::string>> labels;
  int64_t first_seen_ms = 0;
  int64_t last_seen_ms = 0;
  uint64_t count = 0;
  // The failure-severity part: `new` is the first failure, not the first warning.
  int64_t last_failure_ms = 0;
  bool announced = false;                  // `new` was raised
  bool resolved = false;                   // `resolved` was raised and nothing occurred since
  std::vector<std::string> versions_seen;  // first appearance order, at most kMaxVersionsSeen
  // Occurrences judged not newer than the fix that covered them, by reason.
  uint64_t pre_fix_version = 0;
  uint64_t pre_fix_time = 0;
  uint64_t version_unknown = 0;
  // Notifications: the last one about this signature (any receiver) and per receiver.
  int64_t last_notified_ms = 0;
  uint64_t since_notified = 0;  // failure occurrences since then
  std::map<std::string, int64_t> notified_by_receiver;
  // Resolution by runs: the job (source id) of the last failure and the successful runs of that
  // job since it.
  std::string failed_in_job;
  uint64_t clean_runs = 0;
  // Flapping: when it was resolved within the flap window (newest last), whether it is flapping,
  // when a message about it last went out while it was, and the kind of the latest event held
  // back since then (sent when the hour is up or the flapping ends).
  std::vector<int64_t> resolved_at_ms;
  bool flapping = false;
  int64_t flap_notified_ms = 0;
  std::optional<AlertKind> flap_held;
  // Recurrence backoff (exponential realert, 1 h doubling to 24 h).
  int64_t last_recurrence_ms = 0;
  int64_t recurrence_backoff_ms = 0;
  std::optional<MuteRecord> mute;
  // The latest hit, for `faultline signatures` and the API.
  std::string last_source;
  std::string last_file;
  uint64_t last_line = 0;
  std::string last_hit;
};

}  // namespace faultline

#endif  // FAULTLINE_ALERT_SIGNATURE_RECORD_H_
