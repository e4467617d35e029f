#include "agent/app/admin_token.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace faultline {

Result<AdminToken> ReadAdminToken(const std::string& path) {
  const auto error = [&path](std::string message) {
    return Error{.file = path,
                 .line = 0,
                 .rule_id = "",
                 .key = "http.admin_token_file",
                 .message = std::move(message)};
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(std::string("cannot open the admin token file: ") + std::strerror(errno));
  std::string line;
  std::getline(in, line);
  const size_t begin = line.find_first_not_of(" \t\r");
  const size_t end = line.find_last_not_of(" \t\r");
  AdminToken token;
  if (begin != std::string::npos) token.token = line.substr(begin, end - begin + 1);
  if (token.token.size() < kMinAdminTokenBytes) {
    return error("the admin token must be at least " + std::to_string(kMinAdminTokenBytes) +
                 " characters on the file's first line (e.g. `openssl rand -hex 32 > FILE`)");
  }
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    token.warning = path + " may be read by other users; chmod 600 it";
  }
  return token;
}

}  // namespace faultline
