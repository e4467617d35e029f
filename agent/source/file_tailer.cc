#include "agent/source/file_tailer.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

#include "agent/source/glob.h"

namespace faultline {
namespace {

constexpr size_t kReadChunk = 1 << 20;
// Enough bytes to tell one log's content from another's with overwhelming likelihood, few enough
// to re-read on every change.
constexpr size_t kTailBytes = 64;
constexpr uint32_t kWatchMask = IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                IN_CLOSE_WRITE | IN_ATTRIB;

}  // namespace

FileTailer::FileTailer(asio::io_context& io, FileTailerOptions options,
                       FileConsumerFactory factory)
    : io_(io),
      options_(std::move(options)),
      factory_(std::move(factory)),
      timer_(io),
      inotify_buffer_(64 * 1024),
      read_buffer_(kReadChunk, '\0') {}

FileTailer::~FileTailer() {
  *alive_ = false;
  Stop();
}

void FileTailer::Start() {
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    spdlog::warn("inotify unavailable ({}); files are polled every {} ms", std::strerror(errno),
                 options_.poll_interval.count());
  } else {
    inotify_ = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
    UpdateWatches();
    ArmInotify();
  }
  Poll(/*initial=*/true);
  ArmTimer();
}

void FileTailer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  timer_.cancel();
  // Settle what each stream holds (a last partial line, hits waiting for context) so that stopping
  // loses no count.
  for (auto& [path, file] : files_) file->consumer->OnEnd();
  for (auto& file : draining_) file->consumer->OnEnd();
  if (inotify_ != nullptr) {
    boost::system::error_code ignored;
    inotify_->close(ignored);
  }
  for (auto& [path, file] : files_) close(file->fd);
  for (auto& file : draining_) close(file->fd);
  files_.clear();
  draining_.clear();
}

void FileTailer::ArmTimer() {
  if (stopped_) return;
  timer_.expires_after(options_.poll_interval);
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive || stopped_) return;
    UpdateWatches();
    Poll(/*initial=*/false);
    ArmTimer();
  });
}

void FileTailer::ArmInotify() {
  if (stopped_ || inotify_ == nullptr) return;
  inotify_->async_read_some(
      asio::buffer(inotify_buffer_),
      [this, alive = alive_](const boost::system::error_code& ec, size_t n) {
        if (ec || !*alive || stopped_) return;
        // Which file changed does not matter: a poll reads every file that grew. Only when names
        // changed (a file or folder created, renamed or deleted) must the globs be expanded again;
        // a plain write just reads the files already followed, which stays cheap for `**` globs
        // over large trees.
        bool names_changed = false;
        bool dir_created = false;
        for (size_t at = 0; at + sizeof(inotify_event) <= n;) {
          const auto* event = reinterpret_cast<const inotify_event*>(&inotify_buffer_[at]);
          if (event->mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE)) {
            names_changed = true;
          }
          if ((event->mask & IN_CREATE) && (event->mask & IN_ISDIR)) dir_created = true;
          if (event->mask & IN_IGNORED) ForgetWatch(event->wd);
          at += sizeof(inotify_event) + event->len;
        }
        if (dir_created) UpdateWatches();
        SchedulePoll(names_changed);
        ArmInotify();
      });
}

void FileTailer::UpdateWatches() {
  if (inotify_ == nullptr) return;
  for (const std::string& pattern : options_.patterns) {
    for (const std::string& dir : GlobWatchDirs(pattern)) {
      if (watches_.contains(dir)) continue;
      const int wd = inotify_add_watch(inotify_->native_handle(), dir.c_str(), kWatchMask);
      if (wd < 0) {
        spdlog::warn("cannot watch {} ({}); relying on the {} ms poll", dir,
                     std::strerror(errno), options_.poll_interval.count());
        watches_[dir] = -1;  // do not retry every tick; the poll covers it
        continue;
      }
      watches_[dir] = wd;
    }
  }
}

void FileTailer::ForgetWatch(int wd) {
  // The folder was deleted (or unmounted); if it comes back, UpdateWatches watches it again.
  for (auto it = watches_.begin(); it != watches_.end(); ++it) {
    if (it->second == wd) {
      watches_.erase(it);
      return;
    }
  }
}

void FileTailer::SchedulePoll(bool rescan) {
  rescan_scheduled_ |= rescan;
  if (poll_scheduled_ || stopped_) return;
  poll_scheduled_ = true;
  asio::post(io_, [this, alive = alive_] {
    if (!*alive || stopped_) return;
    poll_scheduled_ = false;
    const bool rescan_now = rescan_scheduled_;
    rescan_scheduled_ = false;
    Poll(/*initial=*/false, rescan_now);
  });
}

std::unique_ptr<FileTailer::TailedFile> FileTailer::Open(const std::string& path,
                                                        bool from_end) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (unreadable_.insert(path).second) {
      spdlog::warn("cannot read {}: {}; retrying every poll", path, std::strerror(errno));
    }
    if (fd >= 0) close(fd);
    return nullptr;
  }
  unreadable_.erase(path);
  auto file = std::make_unique<TailedFile>();
  file->path = path;
  file->fd = fd;
  file->dev = st.st_dev;
  file->ino = st.st_ino;
  file->offset = from_end ? static_cast<uint64_t>(st.st_size) : 0;
  if (file->offset > 0) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(kTailBytes, file->offset));
    file->tail.resize(len);
    if (pread(fd, file->tail.data(), len, static_cast<off_t>(file->offset - len)) !=
        static_cast<ssize_t>(len)) {
      file->tail.clear();
    }
  }
  file->last_size = st.st_size;
  file->last_mtime = st.st_mtim;
  file->consumer = factory_(path);
  file->last_data = std::chrono::steady_clock::now();
  spdlog::info("following {} from {}", path, from_end ? "its end" : "the beginning");
  return file;
}

void FileTailer::RememberTail(TailedFile& file, std::string_view bytes) {
  if (bytes.size() >= kTailBytes) {
    file.tail.assign(bytes.substr(bytes.size() - kTailBytes));
    return;
  }
  file.tail.append(bytes);
  if (file.tail.size() > kTailBytes) file.tail.erase(0, file.tail.size() - kTailBytes);
}

bool FileTailer::WasRewritten(TailedFile& file) {
  struct stat st {};
  if (fstat(file.fd, &st) != 0) return false;
  const bool changed = st.st_size != file.last_size ||
                       st.st_mtim.tv_sec != file.last_mtime.tv_sec ||
                       st.st_mtim.tv_nsec != file.last_mtime.tv_nsec;
  file.last_size = st.st_size;
  file.last_mtime = st.st_mtim;
  if (static_cast<uint64_t>(st.st_size) < file.offset) return true;
  if (!changed || file.tail.empty()) return false;
  std::string now(file.tail.size(), '\0');
  const ssize_t n = pread(file.fd, now.data(), now.size(),
                          static_cast<off_t>(file.offset - file.tail.size()));
  return n == static_cast<ssize_t>(now.size()) && now != file.tail;
}

bool FileTailer::ReadSome(TailedFile& file) {
  if (WasRewritten(file)) {
    spdlog::info("{} was truncated or rewritten; reading it again from the start", file.path);
    ++truncations_;
    file.tail.clear();
    file.consumer->OnEnd();
    file.consumer = factory_(file.path);
    file.offset = 0;
  }
  size_t taken = 0;
  while (taken < options_.read_budget) {
    const ssize_t n = pread(file.fd, read_buffer_.data(), read_buffer_.size(),
                            static_cast<off_t>(file.offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0) spdlog::warn("read error on {}: {}", file.path, std::strerror(errno));
      return false;
    }
    file.offset += static_cast<uint64_t>(n);
    taken += static_cast<size_t>(n);
    file.last_data = std::chrono::steady_clock::now();
    file.quiet_reported = false;
    const std::string_view bytes(read_buffer_.data(), static_cast<size_t>(n));
    RememberTail(file, bytes);
    file.consumer->OnBytes(bytes);
  }
  return true;
}

void FileTailer::CheckQuiet(TailedFile& file, std::chrono::steady_clock::time_point now) {
  if (!file.quiet_reported && now - file.last_data >= options_.quiet_after) {
    file.quiet_reported = true;
    file.consumer->OnQuiet();
  }
}

void FileTailer::End(TailedFile& file) {
  file.consumer->OnEnd();
  close(file.fd);
  file.fd = -1;
}

void FileTailer::Poll(bool initial, bool rescan) {
  if (stopped_) return;
  std::set<std::string> present;  // stays empty without a rescan: only followed files are read
  if (rescan) {
    for (const std::string& pattern : options_.patterns) {
      if (HasGlobChars(pattern)) {
        for (std::string& path : ExpandGlob(pattern)) present.insert(std::move(path));
      } else {
        struct stat st {};
        if (stat(pattern.c_str(), &st) == 0 && S_ISREG(st.st_mode)) present.insert(pattern);
      }
    }
  }

  // Paths that vanished, or that now name another file (rotation): the old file drains. This is
  // decided by the path itself, not by the glob result, so a file a glob walk missed once (a
  // folder that vanished mid-walk) is not mistaken for a new one.
  for (auto it = files_.begin(); it != files_.end();) {
    struct stat st {};
    const bool exists = stat(it->first.c_str(), &st) == 0;
    if (exists && st.st_dev == it->second->dev && st.st_ino == it->second->ino) {
      ++it;
      continue;
    }
    if (exists) {
      ++rotations_;
      spdlog::info("{} was rotated; draining the old file and following the new one",
                   it->first);
    }
    draining_.push_back(std::move(it->second));
    it = files_.erase(it);
  }

  // Files are identified by device and inode: a path naming a file already followed (a rotated
  // file renamed to a name the glob also matches, a hard link) continues where it was.
  for (const std::string& path : present) {
    if (files_.contains(path)) continue;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;
    const auto same_file = [&](const std::unique_ptr<TailedFile>& f) {
      return f->dev == st.st_dev && f->ino == st.st_ino;
    };
    if (std::any_of(files_.begin(), files_.end(),
                    [&](const auto& entry) { return same_file(entry.second); })) {
      continue;
    }
    if (auto it = std::find_if(draining_.begin(), draining_.end(), same_file);
        it != draining_.end()) {
      (*it)->path = path;
      files_.emplace(path, std::move(*it));
      draining_.erase(it);
      continue;
    }
    if (auto file = Open(path, initial && options_.start_at_end)) {
      files_.emplace(path, std::move(file));
    }
  }

  const auto now = std::chrono::steady_clock::now();
  bool more = false;
  for (auto& [path, file] : files_) {
    more |= ReadSome(*file);
    CheckQuiet(*file, now);
  }
  for (auto it = draining_.begin(); it != draining_.end();) {
    TailedFile& file = **it;
    const bool file_more = ReadSome(file);
    more |= file_more;
    CheckQuiet(file, now);
    struct stat st {};
    const bool deleted = fstat(file.fd, &st) == 0 && st.st_nlink == 0;
    // A deleted file gets no more writes once drained; a renamed one may, from a writer that has
    // not reopened yet, so it is kept until it has been quiet for rotate_wait.
    if ((deleted && !file_more) || now - file.last_data >= options_.rotate_wait) {
      End(file);
      it = draining_.erase(it);
    } else {
      ++it;
    }
  }
  if (more) SchedulePoll(/*rescan=*/false);
}

}  // namespace faultline
