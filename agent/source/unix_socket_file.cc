#include "agent/source/unix_socket_file.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace faultline {
namespace {

std::string Reason() { return std::strerror(errno); }

// Whether something accepts (or receives) on the socket at `path`: connect succeeds. A refused
// connect means the file outlived its socket. An error when something does, or when it cannot tell.
Result<void> NobodyListens(const std::string& path, int socket_type) {
  // Non-blocking: a live listener with a full backlog must not hang the agent's start.
  const int fd = socket(AF_UNIX, socket_type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Failure("cannot check the socket at " + path + ": " + Reason());
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  const bool connected =
      connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  const int connect_errno = errno;
  close(fd);
  if (connected || connect_errno == EAGAIN) {
    return Failure("cannot listen on " + path + ": another process is listening there");
  }
  if (connect_errno != ECONNREFUSED) {
    return Failure("cannot check the socket at " + path + ": " + std::strerror(connect_errno));
  }
  return {};
}

}  // namespace

Result<void> UnixSocketFile::Prepare(const std::string& path, int socket_type) {
  if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) {
    return Failure("cannot listen on '" + path + "': a socket path must have 1 to " +
                   std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes");
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return Failure("cannot listen on " + path + ": " + Reason());
  }
  if (!S_ISSOCK(st.st_mode)) {
    return Failure("cannot listen on " + path +
                   ": the path exists and is not a socket (not removed)");
  }
  if (Result<void> listening = NobodyListens(path, socket_type); !listening.ok()) return listening;
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Failure("cannot remove the stale socket " + path + ": " + Reason());
  }
  return {};
}

Result<void> UnixSocketFile::Adopt(const std::string& path, uint32_t mode) {
  Remove();
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    return Failure("cannot find the socket just bound at " + path + ": " + Reason());
  }
  path_ = path;
  device_ = st.st_dev;
  inode_ = st.st_ino;
  adopted_ = true;
  if (chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) {
    return Failure("cannot set the mode of " + path + ": " + Reason());
  }
  return {};
}

void UnixSocketFile::Remove() {
  if (!adopted_) return;
  adopted_ = false;
  struct stat st {};
  if (lstat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) {
    unlink(path_.c_str());
  }
}

}  // namespace faultline
