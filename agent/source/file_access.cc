// File access helpers for FileTailer (file_access.h).
#include "agent/source/file_access.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <filesystem>
#include <string_view>

#include "agent/source/glob.h"

namespace faultline {

std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool SameTime(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

int OpenForReading(const std::string& path, bool is_link) {
  return open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (is_link ? 0 : O_NOFOLLOW));
}

std::vector<std::string> ResolveLinkHops(const std::string& path) {
  std::vector<std::string> hops;
  std::string current = path;
  char target[PATH_MAX];
  for (int i = 0; i < kMaxLinkHops; ++i) {
    const ssize_t n = readlink(current.c_str(), target, sizeof(target));
    if (n <= 0 || static_cast<size_t>(n) >= sizeof(target)) break;
    std::string next(target, static_cast<size_t>(n));
    if (next.front() != '/') next = JoinPath(ParentOf(current), next);
    current = std::filesystem::path(next).lexically_normal().string();
    hops.push_back(current);
  }
  return hops;
}

bool IsCompressedName(const std::string& path) {
  for (const char* extension : {".gz", ".zst", ".xz", ".bz2", ".lz4"}) {
    const std::string_view ext(extension);
    if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace faultline
