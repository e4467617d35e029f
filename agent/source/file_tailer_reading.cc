// FileTailer, reading (file_tailer.h, "What happens to a file"): servicing a followed file
// (rechecking its identity, reopening it), rotation and deletion, truncation, the read loop with
// its budget, draining rotated files, and the quiet and idle timeouts.
#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent/source/file_access.h"
#include "agent/source/file_identity.h"
#include "agent/source/file_tailer.h"

namespace faultline {

void FileTailer::Service(TailedFile& file, bool recheck) {
  if (recheck || file.fd < 0) {
    if (recheck) {
      file.is_link = TrackLink(file.path);
      UpdateReliability(file);
    }
    struct stat st {};
    const bool exists = stat(file.path.c_str(), &st) == 0;
    if (!exists || st.st_dev != file.dev || st.st_ino != file.ino) {
      Replace(file, exists);
      return;
    }
    if (file.fd < 0) {
      const bool unchanged = st.st_size == file.last_size && SameTime(st.st_mtim, file.last_mtime);
      if (unchanged && file.mark.offset >= static_cast<uint64_t>(st.st_size)) return;
      if (!Reopen(file)) return;
    }
  }
  if (file.settling) return;  // CheckSettled decides when it is read
  const auto before = file.last_data;
  if (ReadSome(file)) pending_.try_emplace(file.path, false);
  if (file.last_data != before) Touch(file);
}

bool FileTailer::Reopen(TailedFile& file) {
  if (!budget_->Acquire(this)) {
    waiting_for_fd_.insert(file.path);
    return false;
  }
  const int fd = OpenForReading(file.path, file.is_link);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != file.dev ||
      st.st_ino != file.ino) {
    // Swapped between the stat and the open: the name change that did it brings a recheck.
    if (fd >= 0) close(fd);
    budget_->Release();
    return false;
  }
  file.fd = fd;
  ++held_;
  ++reopens_;
  Touch(file);
  if (!SameHead(fd, file.mark)) RestartStream(file, "was rewritten while it was closed");
  return true;
}

void FileTailer::Replace(TailedFile& file, bool path_exists) {
  const std::string path = file.path;
  std::unique_ptr<TailedFile> old = Unfollow(path);
  if (!path_exists) path_events_.erase(path);
  if (path_exists) {
    CountPathEvent(path, /*rotation=*/true);
    ++rotations_;
    spdlog::info("{} was rotated; draining the old file and following the new one", path);
  }
  if (old->fd >= 0 || Locate(*old)) {
    old->draining = true;
    // A writer that still holds it gets rotate_wait from now, however long it had been idle.
    old->last_data = std::max(old->last_data, Clock::now());
    draining_.push_back(std::move(old));
  } else {
    spdlog::debug("{} was deleted while closed; its stream ends", path);
    End(std::move(old));
  }
  // The path may name a new file, or be a link whose target is not there yet (rotated away and
  // not yet recreated): Discover follows the one and keeps watching for the other.
  struct stat lst {};
  if (path_exists || lstat(path.c_str(), &lst) == 0) {
    Discover(path, /*initial=*/false);
  } else {
    UntrackLink(path);
  }
}

bool FileTailer::Locate(TailedFile& file) {
  // The file (or, behind a link, its target) may have been renamed: the rename inotify saw, else
  // its inode in a listing of its folder.
  std::string from = file.path;
  if (auto hops = links_.find(file.path); hops != links_.end()) from = hops->second.back();
  std::vector<std::string> names;
  for (int i = 0; i < kMaxLinkHops; ++i) {
    auto next = renamed_.find(from);
    if (next == renamed_.end()) break;
    from = next->second;
    names.insert(names.begin(), from);  // the latest name first
  }
  if (names.empty()) {
    const std::string dir = ParentOf(from);
    if (const std::unique_ptr<DIR, int (*)(DIR*)> listing(opendir(dir.c_str()), closedir);
        listing != nullptr) {
      while (const dirent* entry = readdir(listing.get())) {
        if (entry->d_ino == file.ino) names.push_back(JoinPath(dir, entry->d_name));
      }
    }
  }
  for (const std::string& name : names) {
    budget_->Acquire(this, /*force=*/true);
    const int fd = OpenForReading(name, /*is_link=*/false);
    struct stat st {};
    const bool same = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                      st.st_dev == file.dev && st.st_ino == file.ino && SameHead(fd, file.mark);
    if (same) {
      file.fd = fd;
      ++held_;
      ++reopens_;
      spdlog::info("{} was renamed to {} while closed; reading the rest of it there", file.path,
                   name);
      return true;
    }
    if (fd >= 0) close(fd);
    budget_->Release();
  }
  return false;
}

void FileTailer::RestartStream(TailedFile& file, const char* why) {
  spdlog::info("{} {}; reading it again from the start", file.path, why);
  CountPathEvent(file.path, /*rotation=*/false);
  ++truncations_;
  Remember(file);  // what it held before, to recognise a copy of it (copytruncate)
  file.consumer->OnEnd();
  file.consumer = MakeConsumer(file.path, 0, nullptr);
  file.mark = ReadMark{};
}

bool FileTailer::WasRewritten(TailedFile& file) {
  struct stat st {};
  if (fstat(file.fd, &st) != 0) return false;
  const bool changed = st.st_size != file.last_size || !SameTime(st.st_mtim, file.last_mtime);
  file.last_size = st.st_size;
  file.last_mtime = st.st_mtim;
  return Rewritten(file.fd, static_cast<uint64_t>(st.st_size), changed, file.mark);
}

bool FileTailer::ReadSome(TailedFile& file) {
  const off_t seen = file.last_size;  // before WasRewritten looks again
  if (WasRewritten(file) && !ContinueInCopy(file)) {
    if (seen > 0 && static_cast<uint64_t>(seen) > file.mark.offset) {
      bytes_lost_ += static_cast<uint64_t>(seen) - file.mark.offset;
    }
    RestartStream(file, "was truncated or rewritten");
  }
  size_t taken = 0;
  while (taken < options_.read_budget) {
    const ssize_t n = pread(file.fd, read_buffer_.data(), read_buffer_.size(),
                            static_cast<off_t>(file.mark.offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0) spdlog::warn("read error on {}: {}", file.path, std::strerror(errno));
      return false;
    }
    const std::string_view bytes(read_buffer_.data(), static_cast<size_t>(n));
    AddRead(file.mark, bytes);
    taken += bytes.size();
    file.last_data = Clock::now();
    file.quiet_reported = false;
    active_.insert(&file);
    if (options_.partial_flush_after.count() > 0) unflushed_.insert(&file);
    file.consumer->OnBytes(bytes);
  }
  return true;
}

void FileTailer::ReadDraining() {
  const auto now = Clock::now();
  for (auto it = draining_.begin(); it != draining_.end();) {
    TailedFile& file = **it;
    const bool more = ReadSome(file);
    drain_wanted_ = drain_wanted_ || more;
    // A renamed or deleted file may still be written by a writer that holds it and has not
    // reopened yet, so it is kept until it has been quiet for rotate_wait.
    if (!more && now - file.last_data >= options_.rotate_wait) {
      std::unique_ptr<TailedFile> done = std::move(*it);
      it = draining_.erase(it);
      End(std::move(done));
    } else {
      ++it;
    }
  }
}

void FileTailer::CheckQuiet(Clock::time_point now) {
  for (auto it = unflushed_.begin(); it != unflushed_.end();) {
    if (now - (*it)->last_data >= options_.partial_flush_after) {
      (*it)->consumer->OnPartialTimeout();
      it = unflushed_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = active_.begin(); it != active_.end();) {
    TailedFile& file = **it;
    if (now - file.last_data >= options_.quiet_after) {
      file.quiet_reported = true;
      file.consumer->OnQuiet();
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
}

void FileTailer::CloseIdle(Clock::time_point now) {
  while (!lru_.empty() && now - lru_.back()->last_data >= options_.close_idle_after) {
    CloseFd(*lru_.back());
  }
}

}  // namespace faultline
