// FileTailer, finding files (file_tailer.h, "Finding files"): walking the globs, the names inotify
// reports, symbolic links and the folders on their way, and taking a found file on (from its
// end, its beginning, its checkpoint, or held back as a possible copy).
#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent/source/file_access.h"
#include "agent/source/file_identity.h"
#include "agent/source/file_tailer.h"

namespace faultline {

void FileTailer::Rescan(bool initial) {
  ++rescans_;
  for (size_t i = 0; i < globs_.size(); ++i) {
    const Glob& glob = globs_[i];
    struct stat st {};
    rooted_[i] = stat(glob.root().c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    if (!rooted_[i]) continue;
    watcher_.WatchForGlob(glob.root());
    WalkFolder(glob, glob.root(), initial, /*full=*/true);
  }
  if (initial) return;
  // The safety net for missed events: every followed file is looked at again, and every name
  // known to duplicate one (its original may have gone since).
  for (const auto& [path, file] : files_) pending_[path] = true;
  for (const std::string& alias : std::exchange(aliases_, {})) candidates_.insert(alias);
  for (const auto& [link, hops] : links_) {
    if (!files_.contains(link)) candidates_.insert(link);
  }
}

void FileTailer::WalkFolder(const Glob& glob, const std::string& dir, bool initial, bool full) {
  WalkGlob(
      glob, dir,
      [&](const std::string& folder) {
        const bool added = watcher_.WatchForGlob(folder);
        return full || added;
      },
      [&](const std::string& path) {
        if (files_.contains(path)) return;
        if (!glob.literal() && exclude_.Excludes(path)) return;
        if (initial) {
          Discover(path, /*initial=*/true);
        } else {
          candidates_.insert(path);
        }
      });
}

void FileTailer::ScanNewFolder(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  struct stat lst {};
  const bool is_link = lstat(dir.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
  for (const Glob& glob : globs_) {
    const Glob::FolderMatch match = glob.MatchFolder(dir);
    if (match == Glob::FolderMatch::kNo) continue;
    if (is_link && match != Glob::FolderMatch::kExplicit) continue;
    watcher_.WatchForGlob(dir);
    // Everything below a folder that just appeared is new: walk all of it.
    WalkFolder(glob, dir, false, /*full=*/true);
  }
}

bool FileTailer::Wanted(const std::string& path) const {
  for (const Glob& glob : globs_) {
    if (glob.Matches(path) && (glob.literal() || !exclude_.Excludes(path))) return true;
  }
  return false;
}

bool FileTailer::MayBeFolderLink(const std::string& path) const {
  return std::any_of(globs_.begin(), globs_.end(), [&](const Glob& glob) {
    return glob.MatchFolder(path) == Glob::FolderMatch::kExplicit;
  });
}

void FileTailer::WarnAboutRotatedNames() const {
  for (const Glob& glob : globs_) {
    const std::vector<std::string> rotated = RotatedNamesMatchedBy(glob);
    if (rotated.empty()) continue;
    const auto kept = std::find_if(rotated.begin(), rotated.end(),
                                   [&](const std::string& p) { return !exclude_.Excludes(p); });
    if (kept != rotated.end()) {
      spdlog::warn(
          "glob {} also matches rotated copies such as {}: lines in them are counted again "
          "unless recognised as copies of a file already read; add the rotated names to the "
          "source's exclude, or narrow the glob",
          glob.pattern(), std::filesystem::path(*kept).filename().string());
    } else {
      spdlog::info("glob {} also matches rotated names such as {}; exclude skips them",
                   glob.pattern(), std::filesystem::path(rotated.front()).filename().string());
    }
  }
}

bool FileTailer::TrackLink(const std::string& path) {
  std::vector<std::string> hops = ResolveLinkHops(path);
  auto it = links_.find(path);
  if (it != links_.end() && it->second == hops) return !hops.empty();
  UntrackLink(path);
  if (hops.empty()) return false;
  for (const std::string& hop : hops) {
    link_owners_.emplace(hop, path);
    watcher_.WatchForLink(ParentOf(hop));
  }
  links_.emplace(path, std::move(hops));
  return true;
}

void FileTailer::UntrackLink(const std::string& path) {
  auto it = links_.find(path);
  if (it == links_.end()) return;
  for (const std::string& hop : it->second) {
    for (auto [owner, end] = link_owners_.equal_range(hop); owner != end; ++owner) {
      if (owner->second == path) {
        link_owners_.erase(owner);
        break;
      }
    }
    watcher_.ReleaseLink(ParentOf(hop));
  }
  links_.erase(it);
}

bool FileTailer::Reliable(const TailedFile& file) const {
  if (!watcher_.Reliable(ParentOf(file.path))) return false;
  auto hops = links_.find(file.path);
  if (hops == links_.end()) return true;
  return std::all_of(hops->second.begin(), hops->second.end(),
                     [&](const std::string& hop) { return watcher_.Reliable(ParentOf(hop)); });
}

void FileTailer::UpdateReliability(const TailedFile& file) {
  if (Reliable(file)) {
    unreliable_.erase(file.path);
  } else {
    unreliable_.insert(file.path);
  }
}

void FileTailer::Discover(const std::string& path, bool initial) {
  struct stat lst {};
  if (lstat(path.c_str(), &lst) != 0) {
    UntrackLink(path);
    return;
  }
  const bool is_link = TrackLink(path);
  if (!budget_->Acquire(this)) {
    waiting_for_fd_.insert(path);
    return;
  }
  const int fd = OpenForReading(path, is_link);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) {
    const int error = errno;
    if (fd >= 0) close(fd);
    budget_->Release();
    // ENOENT: gone again, or a link whose target does not exist yet (its folder is watched).
    if (error != ENOENT && reported_.emplace(path, std::strerror(error)).second) {
      spdlog::warn("cannot read {}: {}; trying again when it changes", path, std::strerror(error));
    }
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    budget_->Release();
    if (reported_.emplace(path, "not a regular file").second) {
      spdlog::warn("{} is not a regular file (a FIFO, socket, device or folder); not read", path);
    }
    return;
  }
  reported_.erase(path);
  const Identity id{st.st_dev, st.st_ino};
  if (auto known = by_identity_.find(id); known != by_identity_.end()) {
    close(fd);
    budget_->Release();
    TailedFile* other = known->second;
    if (!other->draining) {
      aliases_.insert(path);  // the same file under another name: read once, under that one
      return;
    }
    // A rotated file renamed to a name the globs match: it continues where it was.
    auto it = std::find_if(draining_.begin(), draining_.end(),
                           [&](const auto& f) { return f.get() == other; });
    std::unique_ptr<TailedFile> file = std::move(*it);
    draining_.erase(it);
    file->path = path;
    file->is_link = is_link;
    file->draining = false;
    TailedFile& ref = *file;
    files_.emplace(path, std::move(file));
    Touch(ref);
    UpdateReliability(ref);
    pending_.try_emplace(path, false);
    return;
  }
  ++held_;

  // A saved position for this file: the file Start found for it (by identity: under whatever
  // name it has now, renamed since or not).
  const FileMark* resumed = nullptr;
  if (auto located = located_.find(id); located != located_.end()) {
    resumed = &marks_[located->second.mark];
    close(located->second.fd);  // this open is the same file
    budget_->Release();
    located_.erase(located);
  }
  if (resumed != nullptr && !Holds(fd, *resumed)) {
    // Changed since Start looked: copied and truncated in between (logrotate runs when it
    // likes), so the copy holds the rest; else it is read from 0.
    if (!initial || !FindSaved(*resumed, static_cast<size_t>(resumed - marks_.data()),
                               /*by_inode=*/false)) {
      options_.resume->Forget(*resumed);
    }
    resumed = nullptr;
  }

  auto file = std::make_unique<TailedFile>();
  file->path = path;
  file->is_link = is_link;
  file->fd = fd;
  file->dev = st.st_dev;
  file->ino = st.st_ino;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  // A new file named like a rotated copy of one already read (app.log.1 beside app.log) is held
  // back until it stops growing: logrotate creates the copy empty and fills it, and only the
  // whole copy can be recognised.
  file->settling = resumed == nullptr && !initial && LooksLikeACopy(path);
  // start_at is for a source's first start; later, a file without a saved position is new.
  const uint64_t start = resumed != nullptr                              ? resumed->resume_offset
                         : initial && options_.start_at_end && !history_ ? size
                                                                         : 0;
  StartAt(*file, start);
  if (resumed != nullptr && file->mark.offset != start) {
    options_.resume->Forget(*resumed);  // shrank meanwhile: StartAt fell back to 0
    resumed = nullptr;
  }
  file->last_size = st.st_size;
  file->last_mtime = st.st_mtim;
  file->consumer = MakeConsumer(path, file->mark.offset, resumed);
  file->last_data = Clock::now();
  const uint64_t offset = file->mark.offset;
  const auto where = file->settling       ? std::string("the beginning, once it stops growing")
                     : resumed != nullptr ? "its checkpoint, byte " + std::to_string(offset)
                     : offset == 0        ? std::string("the beginning")
                     : offset == size     ? std::string("its end")
                                          : "byte " + std::to_string(offset);
  if (!initial || ++announced_ <= kAnnounced) {
    spdlog::info("following {} from {}", path, where);
  } else {
    spdlog::debug("following {} from {}", path, where);
  }
  TailedFile& ref = *file;
  files_.emplace(path, std::move(file));
  by_identity_[id] = &ref;
  Touch(ref);
  UpdateReliability(ref);
  if (ref.settling) {
    settling_.insert(path);
  } else if (offset < size) {
    pending_.try_emplace(path, false);
  }
}

void FileTailer::DrainUnseen(const std::string& path) {
  budget_->Acquire(this, /*force=*/true);
  const int fd = OpenForReading(path, /*is_link=*/false);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      by_identity_.contains({st.st_dev, st.st_ino})) {
    if (fd >= 0) close(fd);
    budget_->Release();
    return;
  }
  spdlog::info("{} was written and rotated away before it was read; reading it there", path);
  StartDraining(fd, st, path, 0, nullptr);
}

void FileTailer::StartDraining(int fd, const struct stat& st, const std::string& path,
                               uint64_t offset, const FileMark* resumed) {
  ++held_;
  auto file = std::make_unique<TailedFile>();
  file->path = path;
  file->fd = fd;
  file->dev = st.st_dev;
  file->ino = st.st_ino;
  file->draining = true;
  StartAt(*file, offset);
  if (resumed != nullptr && file->mark.offset != resumed->resume_offset) {
    options_.resume->Forget(*resumed);  // the file changed under its saved position
    resumed = nullptr;
  }
  file->last_size = st.st_size;
  file->last_mtime = st.st_mtim;
  file->consumer = MakeConsumer(path, file->mark.offset, resumed);
  file->last_data = Clock::now();
  by_identity_[{st.st_dev, st.st_ino}] = file.get();
  draining_.push_back(std::move(file));
  drain_wanted_ = true;
}

}  // namespace faultline
