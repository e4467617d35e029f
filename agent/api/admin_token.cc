#include "agent/api/admin_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace faultline {
namespace {

Error TokenError(const std::string& path, std::string message) {
  return Error{.file = path,
               .line = 0,
               .rule_id = "",
               .key = "http.admin_token_file",
               .message = std::move(message)};
}

// The agent's state folder: state/ beside the config file.
std::filesystem::path StateDir(const Config& config) {
  std::error_code ec;
  return std::filesystem::absolute(config.file, ec).parent_path() / "state";
}

}  // namespace

Result<AdminToken> ReadAdminToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return TokenError(path,
                      std::string("cannot open the admin token file: ") + std::strerror(errno));
  }
  std::string line;
  std::getline(in, line);
  const size_t begin = line.find_first_not_of(" \t\r");
  const size_t end = line.find_last_not_of(" \t\r");
  AdminToken token;
  if (begin != std::string::npos) token.token = line.substr(begin, end - begin + 1);
  if (token.token.size() < kMinAdminTokenBytes) {
    return TokenError(
        path, "the admin token must be at least " + std::to_string(kMinAdminTokenBytes) +
                  " characters on the file's first line (e.g. `openssl rand -hex 32 > FILE`)");
  }
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    token.warning = path + " may be read by other users; chmod 600 it";
  }
  return token;
}

std::string GeneratedAdminTokenPath(const Config& config) {
  return (StateDir(config) / "admin_token").string();
}

Result<AdminToken> LoadAdminToken(const Config& config, bool create) {
  if (!config.http_admin_token_file.empty()) return ReadAdminToken(config.http_admin_token_file);
  const std::string path = GeneratedAdminTokenPath(config);
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return ReadAdminToken(path);
  if (!create) return AdminToken{};
  std::filesystem::create_directories(StateDir(config), ec);
  std::random_device random;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 32; ++i) {
    const unsigned byte = random() & 0xff;
    token += kHex[byte >> 4];
    token += kHex[byte & 0xf];
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return ReadAdminToken(path);
    return TokenError(path, std::string("cannot create the admin token: ") + std::strerror(errno));
  }
  const std::string line = token + "\n";
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  if (!ok) return TokenError(path, "cannot write the admin token");
  return AdminToken{.token = token, .warning = ""};
}

}  // namespace faultline
