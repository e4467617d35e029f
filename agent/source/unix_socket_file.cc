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
// connect means the file outlived its socket.
bool SomeoneListens(const std::string& path, int socket_type, std::string* error) {
  // Non-blocking: a live listener with a full backlog must not hang the agent's start.
  const int fd = socket(AF_UNIX, socket_type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = "cannot check the socket at " + path + ": " + Reason();
    return true;
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  const bool connected =
      connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  const int connect_errno = errno;
  close(fd);
  if (connected || connect_errno == EAGAIN) {
    *error = "cannot listen on " + path + ": another process is listening there";
    return true;
  }
  if (connect_errno != ECONNREFUSED) {
    *error = "cannot check the socket at " + path + ": " + std::strerror(connect_errno);
    return true;
  }
  return false;
}

}  // namespace

bool UnixSocketFile::Prepare(const std::string& path, int socket_type, std::string* error) {
  if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) {
    *error = "cannot listen on '" + path + "': a socket path must have 1 to " +
             std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes";
    return false;
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    *error = "cannot listen on " + path + ": " + Reason();
    return false;
  }
  if (!S_ISSOCK(st.st_mode)) {
    *error = "cannot listen on " + path + ": the path exists and is not a socket (not removed)";
    return false;
  }
  if (SomeoneListens(path, socket_type, error)) return false;
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    *error = "cannot remove the stale socket " + path + ": " + Reason();
    return false;
  }
  return true;
}

bool UnixSocketFile::Adopt(const std::string& path, uint32_t mode, std::string* error) {
  Remove();
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    *error = "cannot find the socket just bound at " + path + ": " + Reason();
    return false;
  }
  path_ = path;
  device_ = st.st_dev;
  inode_ = st.st_ino;
  adopted_ = true;
  if (chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) {
    *error = "cannot set the mode of " + path + ": " + Reason();
    return false;
  }
  return true;
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
