// Notification: one message for one receiver, in a form every notifier renders from (Slack
// blocks, a signed webhook body, Alertmanager alerts), and that the outbox stores as JSON so
// that a retry after a restart renders exactly the bytes the first attempt sent.
//
// A notification holds one or more AlertItems: the events that group_wait batched (signatures of
// one run), or, for a digest, the ones rate limiting coalesced. Each item is a lifecycle event of
// one signature with everything a person needs to act: what failed, why, the fix, where (source,
// host, file, line), the hit with context, counts, first and last seen, versions and labels. Text
// in an item is already redacted (redact.h) and bounded; renderers still escape it for their
// format.
//
// Plain values; copyable; no invariants beyond what ToJson/FromJson round-trip. FromJson fails
// (nullopt) only on JSON that ToJson did not write.
#ifndef FAULTLINE_ALERT_NOTIFICATION_H_
#define FAULTLINE_ALERT_NOTIFICATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/rules/rule.h"

namespace faultline {

// The lifecycle events (docs/design.md section 5) and the agent's own messages about itself.
enum class AlertKind {
  kNew,               // first occurrence ever
  kRegression,        // an occurrence newer than a fix
  kRecurrence,        // back after quiet_for without one
  kOngoing,           // a digest while it repeats
  kResolved,          // fixed, or quiet for resolve_after (opt-in per receiver)
  kMuteEnded,         // what happened while a mute held
  kReceiverDisabled,  // meta-alert: a receiver answered "gone" (404 no_service, 410)
};

std::string_view AlertKindName(AlertKind kind);  // "new", "regression", ...
std::optional<AlertKind> ParseAlertKind(std::string_view name);

struct AlertItem {
  std::string event_id;  // unique per lifecycle event
  AlertKind kind = AlertKind::kNew;
  std::string signature;  // rule id plus bounded labels
  std::string rule_id;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string title;
  Severity severity = Severity::kError;
  std::string state;  // the signature's state after the event (new, active, regressed, ...)
  std::string root_cause;
  std::string fix;
  std::string fix_command;
  // Where the occurrence was: source id, host, the stream (a file path), its line.
  std::string source;
  std::string host;
  std::string file;
  uint64_t line = 0;
  std::vector<std::string> context_before;
  std::string hit;
  std::vector<std::string> context_after;
  uint64_t count = 0;             // occurrences ever
  uint64_t count_since_last = 0;  // since the previous notification of this signature
  int64_t first_seen_ms = 0;      // Unix milliseconds
  int64_t last_seen_ms = 0;
  // The package the rule's versions refer to, the version the stream ran (empty: unknown), and
  // for a regression the fix it broke.
  std::string package;
  std::string seen_in_version;
  std::vector<std::string> versions_seen;
  std::string fixed_in_version;
  int64_t fixed_at_ms = 0;
  std::string fix_note;
  std::string fixed_by;
  // Why an occurrence was judged newer (or not) than the fix: "version", "timestamp", "arrival".
  std::string regression_basis;
  // Alertmanager: until when the alert counts as firing without another update.
  int64_t active_until_ms = 0;
  // Free text for the agent's own messages (mute summary, a disabled receiver's reason).
  std::string detail;
  // Signatures of the same run that this failure explains (rules with `role: symptom`, such as
  // the NCCL watchdog timeouts after one rank's OOM): they count and keep their lifecycle, but are
  // named here instead of notified on their own (Alerting, "Root cause and consequences").
  std::vector<std::string> consequences;
};

struct Notification {
  std::string id;  // the webhook-id: stable across retries and restarts
  std::string receiver;
  int64_t created_ms = 0;
  bool test = false;  // from `faultline alert test`: marked [TEST] everywhere
  std::vector<AlertItem> items;
  // Items coalesced into this digest by rate limiting beyond those listed in `items`.
  uint64_t more = 0;
};

std::string NotificationToJson(const Notification& notification);
std::optional<Notification> NotificationFromJson(std::string_view json);

// A one-line summary for logs, the Slack text fallback and Alertmanager summaries:
// "REGRESSION: deepspeed.async_io.windows_link seen in 0.15.1, fixed in 0.15.0 (source build)".
std::string ItemSummary(const AlertItem& item);
// Upper-case kind for headers: "NEW", "REGRESSION", ...
std::string KindHeadline(AlertKind kind);
// RFC 3339 UTC with milliseconds ("2026-09-30T12:00:02.000Z"); empty for 0.
std::string FormatTimestampMs(int64_t unix_ms);

}  // namespace faultline

#endif  // FAULTLINE_ALERT_NOTIFICATION_H_
