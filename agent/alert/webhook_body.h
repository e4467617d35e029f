// RenderWebhookBody: a Notification as the JSON body of a generic webhook request (the `webhook`
// receiver; signed by webhook_signing.h).
//
// Shape: the first item's fields at the top level, so a receiver handling one alert at a time
// reads `kind`, `signature`, `severity`, `title`, `count` directly, and every item under
// `alerts` (one entry per signature of a group_wait batch or digest):
//
//   {"type": "faultline.alert", "id": "ntf_...", "timestamp": "2026-...Z", "test": false,
//    "kind": "regression", "signature": "...", "rule_id": "...", "labels": {...},
//    "title": "...", "severity": "error", "state": "regressed",
//    "root_cause": "...", "fix": "...", "fix_command": "...",
//    "source": "...", "host": "...", "file": "...", "line": 812,
//    "hit": "...", "context_before": [...], "context_after": [...],
//    "count": 3, "count_since_last": 1, "first_seen": "...", "last_seen": "...",
//    "versions": {"package": "deepspeed", "seen_in": "0.15.1", "seen": [...],
//                 "fixed_in": "0.15.0", "fixed_at": "...", "fixed_by": "...", "note": "..."},
//    "event_id": "...", "alert_id": "<stable per signature>",
//    "alerts": [ {the same fields}, ... ], "more": 0}
//
// `alert_id` is the same for every message about one signature (new, ongoing, resolved), so a
// receiver can close what it opened. The body stays under kMaxBodyBytes (the Standard Webhooks
// guidance, 20 KB): context lines go first, then long hit lines are cut, then later alerts are
// left out and counted in `more`.
//
// Pure; deterministic (the same notification gives the same bytes, which retries rely on);
// thread-safe; never throws.
#ifndef FAULTLINE_ALERT_WEBHOOK_BODY_H_
#define FAULTLINE_ALERT_WEBHOOK_BODY_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "agent/alert/notification.h"

namespace faultline {

inline constexpr std::size_t kMaxWebhookBodyBytes = 20 * 1024;

std::string RenderWebhookBody(const Notification& notification);

// A short stable id for a signature ("sig_" + 16 hex digits of a hash of the key).
std::string AlertIdOf(std::string_view signature);

}  // namespace faultline

#endif  // FAULTLINE_ALERT_WEBHOOK_BODY_H_
