// The bearer token of the admin routes that change the agent's state (POST /-/reload, the
// signature lifecycle's fix/unfix/mute/unmute, a receiver test).
//
// ReadAdminToken reads a token file: the token is on its first line; surrounding whitespace and
// the newline are not part of it. A token shorter than kMinAdminTokenBytes is refused: it would be
// guessable. A file that others may read is accepted with a warning in the error-free result
// (`warning`), since a token any local user can read protects nothing from them.
//
// LoadAdminToken is the one place that decides which token an agent uses: the file
// `http.admin_token_file` names when set; else state.dir/admin_token, generated (32 random bytes
// as hex, mode 0600, O_EXCL so that two agents racing cannot both write it) when `create` and it
// does not exist yet. The CLI on the same host reads the same file (create false). Without either,
// the token is empty and the routes that need one refuse.
//
// Load-time only; thread-safe. Errors name the file and the key `http.admin_token_file`.
#ifndef FAULTLINE_API_ADMIN_TOKEN_H_
#define FAULTLINE_API_ADMIN_TOKEN_H_

#include <cstddef>
#include <string>

#include "agent/config/config.h"
#include "agent/core/result.h"

namespace faultline {

inline constexpr std::size_t kMinAdminTokenBytes = 16;

struct AdminToken {
  std::string token;    // empty: no token configured or generated
  std::string warning;  // empty, or why the file is not as private as it should be
};

Result<AdminToken> ReadAdminToken(const std::string& path);

Result<AdminToken> LoadAdminToken(const Config& config, bool create);

// Where a generated token lives: admin_token in the agent's state folder.
std::string GeneratedAdminTokenPath(const Config& config);

}  // namespace faultline

#endif  // FAULTLINE_API_ADMIN_TOKEN_H_
