// FolderWatcher: one inotify instance and the folders it watches, for one file tailer. It turns
// inotify's raw events into (folder path, name, mask, cookie) and keeps track of which folders
// can be trusted to report changes: a folder whose watch failed (watch limit, permissions) or
// that lives on a network or FUSE file system (where inotify misses writes made elsewhere) is
// "polled" instead, and the tailer stats what lies in it on every poll tick.
//
// A folder is watched for the glob (while it exists) and/or for links whose targets lie in it
// (counted; unwatched when the last such link is gone). Regular files cannot be watched with
// epoll; inotify on their folders is how the loop learns about them.
//
// Runs on the caller's io_context (one thread); the handler is called on it and must not throw.
// Failures (no inotify, a watch refused) are logged once and never fatal: the poll covers them.
// They are reported by Problem() for as long as they last, since a polled folder is seen late
// (a poll tick) and a file rotated within a tick can be missed.
#ifndef FAULTLINE_SOURCE_FOLDER_WATCHER_H_
#define FAULTLINE_SOURCE_FOLDER_WATCHER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/core/asio.h"

namespace faultline {

class FolderWatcher {
 public:
  struct Event {
    std::string dir;   // the watched folder; empty for a queue overflow (IN_Q_OVERFLOW)
    std::string name;  // empty for events on the folder itself
    uint32_t mask = 0;
    uint32_t cookie = 0;
  };
  // Called once per batch read from inotify, with every event of the batch in order.
  using Handler = std::function<void(const std::vector<Event>&)>;
  // Called when a watched folder was deleted or moved away (its watch is gone).
  using LostHandler = std::function<void(const std::string& dir)>;

  FolderWatcher(asio::io_context& io, std::chrono::milliseconds poll_interval);
  ~FolderWatcher();
  FolderWatcher(const FolderWatcher&) = delete;
  FolderWatcher& operator=(const FolderWatcher&) = delete;

  // Creates the inotify instance and starts reading it; false (logged) when inotify is
  // unavailable, in which case every folder is polled.
  bool Start(Handler on_events, LostHandler on_lost);
  void Stop();

  // Watches `dir` for a glob; true when it was not watched for a glob before (the caller walks
  // it then).
  bool WatchForGlob(const std::string& dir);
  // Watches `dir` for one more link target in it, or one fewer.
  void WatchForLink(const std::string& dir);
  void ReleaseLink(const std::string& dir);

  // Whether events from `dir` can be trusted (watched, not polled).
  bool Reliable(const std::string& dir) const;
  // Folders watched for a glob whose events cannot be trusted: listed on every poll tick.
  std::vector<std::string> PolledGlobFolders() const;
  bool available() const { return inotify_ != nullptr; }
  // Why events cannot be trusted where they should be: no inotify instance, or folders whose
  // watch the kernel refused (other than for not existing); empty when there is no such problem.
  // Folders on network file systems are polled by design and are not a problem.
  std::string Problem() const;
  size_t watch_count() const { return by_wd_.size(); }

 private:
  struct Folder {
    int wd = -1;  // -1: polled
    int watch_errno = 0;  // why the last inotify_add_watch failed, other than ENOENT; 0 if none
    bool remote = false;  // on a file system whose events miss remote writes
    bool glob = false;
    int link_refs = 0;
  };

  Folder& Add(const std::string& dir);
  void Remove(std::map<std::string, Folder>::iterator it);
  void Forget(int wd, bool removed_by_kernel);
  void Read();

  asio::io_context& io_;
  const std::chrono::milliseconds poll_interval_;
  std::unique_ptr<asio::posix::stream_descriptor> inotify_;
  std::vector<char> buffer_;
  std::map<std::string, Folder> folders_;
  std::unordered_map<int, std::string> by_wd_;
  Handler on_events_;
  LostHandler on_lost_;
  bool failure_logged_ = false;
  int start_errno_ = 0;  // why inotify_init1 failed; 0 when it did not
  // Completions still queued when the watcher is destroyed check this instead of touching it.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_FOLDER_WATCHER_H_
