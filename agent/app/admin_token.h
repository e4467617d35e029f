// ReadAdminToken: the bearer token of the admin routes that change the agent's state
// (POST /-/reload), read from the file `http.admin_token_file` names.
//
// The file holds the token on its first line; surrounding whitespace and the newline are not
// part of it. A token shorter than kMinAdminTokenBytes is refused: it would be guessable. A file
// that others may read is accepted with a warning in the error-free result (`warning`), since a
// token any local user can read protects nothing from them. Load-time only; thread-safe.
#ifndef FAULTLINE_APP_ADMIN_TOKEN_H_
#define FAULTLINE_APP_ADMIN_TOKEN_H_

#include <cstddef>
#include <string>

#include "agent/core/result.h"

namespace faultline {

inline constexpr std::size_t kMinAdminTokenBytes = 16;

struct AdminToken {
  std::string token;
  std::string warning;  // empty, or why the file is not as private as it should be
};

// Errors name the file and the key `http.admin_token_file`.
Result<AdminToken> ReadAdminToken(const std::string& path);

}  // namespace faultline

#endif  // FAULTLINE_APP_ADMIN_TOKEN_H_
