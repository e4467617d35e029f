// RenderAlertmanagerAlerts: a Notification as the body of Alertmanager's `POST /api/v2/alerts`
// (a JSON array of postableAlert; docs/alerting.md sections 1.5 and 8.2).
//
// Alertmanager identifies an alert by its label set, so only what names the failure is a label:
// alertname="FaultlineSignature", signature (the full key), rule, the rule's own bounded labels
// (renamed `label_<name>` if one would clash with ours), severity, source and host. Everything
// that changes between messages (kind, counts, versions, the hit line, line numbers) is an
// annotation, or every update would be a new alert. A test notification adds
// faultline_test="true", so it is its own alert and can be silenced or routed apart.
//
// startsAt is the signature's first occurrence (for a regression or recurrence, which fire anew,
// that occurrence); endsAt is when the alert stops firing without
// another update (the item's active_until: its last occurrence plus quiet_for), or the
// notification's time for `resolved`, which is how Alertmanager is told it is over.
//
// Pure; deterministic; thread-safe; never throws.
#ifndef FAULTLINE_ALERT_ALERTMANAGER_BODY_H_
#define FAULTLINE_ALERT_ALERTMANAGER_BODY_H_

#include <string>

#include "agent/alert/notification.h"

namespace faultline {

inline constexpr char kAlertmanagerAlertName[] = "FaultlineSignature";

std::string RenderAlertmanagerAlerts(const Notification& notification);

}  // namespace faultline

#endif  // FAULTLINE_ALERT_ALERTMANAGER_BODY_H_
