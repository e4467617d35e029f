#include "agent/source/folder_watcher.h"

#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstring>

namespace faultline {
namespace {

// Names created, renamed or deleted, files written or changed (chmod, link count), and the folder
// itself going away. IN_ONLYDIR: a path that became a file is not watched by mistake.
constexpr uint32_t kWatchMask = IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                                IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

// File systems where inotify only sees writes made through this kernel: a file written on
// another host (NFS, SMB, CephFS, 9p, FUSE mounts such as sshfs or virtiofs) would look idle.
bool EventsMissRemoteWrites(const std::string& dir) {
  struct statfs fs {};
  if (statfs(dir.c_str(), &fs) != 0) return false;
  switch (static_cast<uint64_t>(fs.f_type)) {
    case 0x6969:      // NFS
    case 0x517B:      // SMB
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x65735546:  // FUSE
    case 0x00C36400:  // Ceph
    case 0x01021997:  // 9p
    case 0x5346414F:  // AFS
    case 0x0BD00BD0:  // Lustre
      return true;
    default:
      return false;
  }
}

}  // namespace

FolderWatcher::FolderWatcher(asio::io_context& io, std::chrono::milliseconds poll_interval)
    : io_(io), poll_interval_(poll_interval), buffer_(64 * 1024) {}

FolderWatcher::~FolderWatcher() {
  *alive_ = false;
  Stop();
}

bool FolderWatcher::Start(Handler on_events, LostHandler on_lost) {
  on_events_ = std::move(on_events);
  on_lost_ = std::move(on_lost);
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    start_errno_ = errno;
    spdlog::warn("inotify unavailable ({}); files are polled every {} ms", std::strerror(errno),
                 poll_interval_.count());
    return false;
  }
  inotify_ = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
  Read();
  return true;
}

void FolderWatcher::Stop() {
  if (inotify_ != nullptr) {
    boost::system::error_code ignored;
    inotify_->close(ignored);
    inotify_.reset();
  }
  folders_.clear();
  by_wd_.clear();
}

FolderWatcher::Folder& FolderWatcher::Add(const std::string& dir) {
  auto [it, inserted] = folders_.try_emplace(dir);
  Folder& folder = it->second;
  // A folder whose watch failed is tried again each time it is asked for (a walk, a link to it):
  // it may exist by now, or watches may have been freed.
  if (folder.wd >= 0 || inotify_ == nullptr || (!inserted && folder.remote)) return folder;
  if (inserted && EventsMissRemoteWrites(dir)) {
    folder.remote = true;
    spdlog::info("{} is on a network or FUSE file system; polling it every {} ms", dir,
                 poll_interval_.count());
    return folder;
  }
  const int wd = inotify_add_watch(inotify_->native_handle(), dir.c_str(), kWatchMask);
  folder.watch_errno = 0;
  if (wd < 0) {
    if (errno != ENOENT) folder.watch_errno = errno;
    // One line, not one per folder: a watch limit refuses thousands at once. A folder that does
    // not exist (yet) is not worth a line at all.
    if (errno != ENOENT && !failure_logged_) {
      failure_logged_ = true;
      spdlog::warn("cannot watch {} ({}{}); such folders are polled every {} ms", dir,
                   std::strerror(errno),
                   errno == ENOSPC ? ", raise fs.inotify.max_user_watches" : "",
                   poll_interval_.count());
    }
    return folder;
  }
  // Two paths can name one folder (a link to it); inotify gives both the same descriptor and
  // reports events under the first path only, so the second is polled.
  if (by_wd_.contains(wd)) return folder;
  folder.wd = wd;
  by_wd_[wd] = dir;
  return folder;
}

std::string FolderWatcher::Problem() const {
  if (inotify_ == nullptr && start_errno_ != 0) {
    return std::string("inotify unavailable (") + std::strerror(start_errno_) +
           (start_errno_ == EMFILE ? ", raise fs.inotify.max_user_instances" : "") +
           "): files are polled every " + std::to_string(poll_interval_.count()) + " ms";
  }
  size_t refused = 0;
  int reason = 0;
  const std::string* example = nullptr;
  for (const auto& [dir, folder] : folders_) {
    if (folder.wd >= 0 || folder.watch_errno == 0) continue;
    if (refused++ == 0) {
      reason = folder.watch_errno;
      example = &dir;
    }
  }
  if (refused == 0) return "";
  return std::to_string(refused) + " folder(s) not watched, e.g. " + *example + " (" +
         std::strerror(reason) +
         (reason == ENOSPC ? ", raise fs.inotify.max_user_watches" : "") +
         "): polled every " + std::to_string(poll_interval_.count()) + " ms";
}

void FolderWatcher::Remove(std::map<std::string, Folder>::iterator it) {
  if (it->second.wd >= 0) {
    if (inotify_ != nullptr) inotify_rm_watch(inotify_->native_handle(), it->second.wd);
    by_wd_.erase(it->second.wd);
  }
  folders_.erase(it);
}

bool FolderWatcher::WatchForGlob(const std::string& dir) {
  Folder& folder = Add(dir);
  const bool added = !folder.glob;
  folder.glob = true;
  return added;
}

void FolderWatcher::WatchForLink(const std::string& dir) { ++Add(dir).link_refs; }

void FolderWatcher::ReleaseLink(const std::string& dir) {
  auto it = folders_.find(dir);
  if (it == folders_.end()) return;
  if (--it->second.link_refs <= 0 && !it->second.glob) Remove(it);
}

bool FolderWatcher::Reliable(const std::string& dir) const {
  auto it = folders_.find(dir);
  return it != folders_.end() && it->second.wd >= 0;
}

std::vector<std::string> FolderWatcher::PolledGlobFolders() const {
  std::vector<std::string> out;
  for (const auto& [dir, folder] : folders_) {
    if (folder.glob && folder.wd < 0) out.push_back(dir);
  }
  return out;
}

void FolderWatcher::Forget(int wd, bool removed_by_kernel) {
  auto it = by_wd_.find(wd);
  if (it == by_wd_.end()) return;
  const std::string dir = it->second;
  if (!removed_by_kernel && inotify_ != nullptr) inotify_rm_watch(inotify_->native_handle(), wd);
  by_wd_.erase(it);
  folders_.erase(dir);
  on_lost_(dir);
}

void FolderWatcher::Read() {
  if (inotify_ == nullptr) return;
  inotify_->async_read_some(
      asio::buffer(buffer_), [this, alive = alive_](const boost::system::error_code& ec, size_t n) {
        if (ec || !*alive || inotify_ == nullptr) return;
        std::vector<Event> events;
        std::vector<std::pair<int, bool>> gone;  // (wd, removed by the kernel)
        for (size_t at = 0; at + sizeof(inotify_event) <= n;) {
          const auto* raw = reinterpret_cast<const inotify_event*>(&buffer_[at]);
          at += sizeof(inotify_event) + raw->len;
          if (raw->mask & IN_Q_OVERFLOW) {
            events.push_back(Event{"", "", raw->mask, 0});
            continue;
          }
          if (raw->mask & IN_IGNORED) {
            gone.emplace_back(raw->wd, true);
            continue;
          }
          if (raw->mask & IN_MOVE_SELF) gone.emplace_back(raw->wd, false);
          auto dir = by_wd_.find(raw->wd);
          if (dir == by_wd_.end()) continue;
          events.push_back(Event{dir->second, raw->len > 0 ? std::string(raw->name) : "",
                                 raw->mask, raw->cookie});
        }
        on_events_(events);
        for (const auto& [wd, by_kernel] : gone) Forget(wd, by_kernel);
        Read();
      });
}

}  // namespace faultline
