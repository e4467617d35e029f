// Webhook signing: the headers that let a receiver check that a request came from this agent and
// was not replayed (docs/alerting.md section 6).
//
// Standard Webhooks v1.0.0: the signed content is `${webhook-id}.${webhook-timestamp}.${body}`,
// signed with HMAC-SHA256 under the base64-decoded secret (`whsec_` + base64); the
// `webhook-signature` header is a space-separated list of `v1,<base64 MAC>`, one per secret, so
// that two secrets can be active while a receiver rotates. `webhook-id` is the notification's
// id, the same on every retry (the receiver's idempotency key); `webhook-timestamp` is the
// attempt's time in Unix seconds.
//
// GitHub style (`X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`) is offered too, for
// receivers built for GitHub's webhooks; it signs no timestamp, so it does not stop replays.
//
// HMAC through OpenSSL. Pure functions; thread-safe; they never throw. A secret that does not
// decode is reported by ParseWebhookSecret at load time, not at send time.
#ifndef FAULTLINE_ALERT_WEBHOOK_SIGNING_H_
#define FAULTLINE_ALERT_WEBHOOK_SIGNING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/result.h"

namespace faultline {

// The key bytes of a Standard Webhooks secret: the base64 after `whsec_` (the prefix is
// optional), 24..64 bytes once decoded as the spec asks; for anything else, why not.
Result<std::string> ParseWebhookSecret(std::string_view secret);

// `v1,<base64>` for one key.
std::string StandardWebhookSignature(std::string_view key, std::string_view id, int64_t timestamp,
                                     std::string_view body);

// The `webhook-signature` header value: one `v1,` entry per key, space-separated, in order.
std::string StandardWebhookSignatureHeader(const std::vector<std::string>& keys,
                                           std::string_view id, int64_t timestamp,
                                           std::string_view body);

// `sha256=<hex>`: the X-Hub-Signature-256 value for `secret` (used as given, not decoded).
std::string GithubSignature256(std::string_view secret, std::string_view body);

// The building blocks, exposed for receivers in tests and for the verifier sample in
// docs/alerts.md.
std::string HmacSha256(std::string_view key, std::string_view data);
std::string Base64Encode(std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view text);
std::string HexEncode(std::string_view bytes);

}  // namespace faultline

#endif  // FAULTLINE_ALERT_WEBHOOK_SIGNING_H_
