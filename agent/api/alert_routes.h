// The admin API of the alert lifecycle (issue 9), registered on the agent's HTTP server:
//
//   GET  /api/v1/signatures                       every signature: state, counts, first and
//                                                 last seen, versions, fixes, mute, last hit
//   GET  /api/v1/receivers                        every receiver target's delivery state
//   POST /api/v1/signatures/{id}/fix              {"version": "0.15.0", "note": "...", "by": "..."}
//   POST /api/v1/signatures/{id}/unfix
//   POST /api/v1/signatures/{id}/mute             {"for": "8h" | "duration_ms": N, "reason": "...",
//                                                  "by": "..."}
//   POST /api/v1/signatures/{id}/unmute
//   POST /api/v1/receivers/{name}/test            {"signature": "..."}: 202, the test goes out
//                                                 through the whole pipeline
//
// {id} is a signature or a rule id, percent-encoded
// ("deepspeed.async_io.windows_link%7Blib%3Daio%7D"). Every route is an admin route (loopback or
// the agent's own address in Host); the POST routes also need `Authorization: Bearer <token>`, the
// token LoadAdminToken returns (admin_token.h). Answers are JSON; errors are 400 (bad body), 404
// (unknown signature or receiver) with {"error": "..."}.
//
// A change (fix, unfix, mute, unmute) is answered only once it is durable: the route asks
// `commit` for a checkpoint of the state store and answers 200 when it committed, so a `kill -9`
// right after the answer loses nothing. When it could not be written (full disk, read-only
// state.dir) the answer is 503 with the reason: the change holds in the running agent and is
// written by the next checkpoint that succeeds.
//
// Runs on the event loop with the server; the Alerting must outlive the server's routes.
#ifndef FAULTLINE_API_ALERT_ROUTES_H_
#define FAULTLINE_API_ALERT_ROUTES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "agent/alert/alerting.h"
#include "agent/config/config.h"
#include "agent/core/result.h"
#include "agent/http/http_server.h"

namespace faultline {

// Writes what changed to the state store, then calls `done` on the loop with an empty string, or
// with why it could not be written. Without a store it calls `done` at once with "".
using CommitRequest = std::function<void(std::function<void(const std::string& error)> done)>;

void AddAlertRoutes(HttpServer& http, Alerting& alerting, const std::string& admin_token,
                    CommitRequest commit);

// "8h", "30m", "90s", "2d", "500ms" or a number of milliseconds; nullopt otherwise.
std::optional<int64_t> ParseDurationMs(std::string_view text);

// Percent-decodes a path segment ("%7B" -> "{"); malformed escapes stay as written.
std::string PercentDecode(std::string_view text);

}  // namespace faultline

#endif  // FAULTLINE_API_ALERT_ROUTES_H_
