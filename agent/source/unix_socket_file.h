// UnixSocketFile: the file a listening Unix socket (stream or datagram) is bound to, from before
// bind until the listener stops.
//
// - Before bind, Prepare makes the path free: nothing there is fine; a socket file nobody
//   listens on (connect is refused: left by an agent that was killed) is removed; a socket
//   something still listens on (another agent) and a file that is not a socket are errors and
//   are never removed.
// - After bind, Adopt sets the permission bits (chmod: the socket's mode decides who may
//   connect or send) and remembers the file's device and inode.
// - Remove, at stop, deletes the file only if the path still names that inode, so an agent that
//   stops never deletes the socket of one that started after it.
// The folder must exist (systemd's RuntimeDirectory= makes /run/faultline); it is not created.
// Errors come back as a Result<void> whose message names the path and the OS reason. Not
// thread-safe; the event loop.
#ifndef FAULTLINE_SOURCE_UNIX_SOCKET_FILE_H_
#define FAULTLINE_SOURCE_UNIX_SOCKET_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "agent/core/result.h"

namespace faultline {

class UnixSocketFile {
 public:
  UnixSocketFile() = default;
  ~UnixSocketFile() { Remove(); }
  UnixSocketFile(const UnixSocketFile&) = delete;
  UnixSocketFile& operator=(const UnixSocketFile&) = delete;

  // `socket_type`: SOCK_STREAM or SOCK_DGRAM, the kind of socket about to be bound there.
  static Result<void> Prepare(const std::string& path, int socket_type);
  Result<void> Adopt(const std::string& path, uint32_t mode);
  void Remove();

 private:
  std::string path_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  bool adopted_ = false;
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_UNIX_SOCKET_FILE_H_
