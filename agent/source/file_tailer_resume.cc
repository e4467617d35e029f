// FileTailer, saved positions (file_tailer.h, "With saved positions"; file_resume.h): finding at
// Start where each saved file is now (its path, its folder by inode, its rotated names by
// content), holding it open from then on, and draining the files rotated while the agent was down.
#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "agent/source/file_access.h"
#include "agent/source/file_identity.h"
#include "agent/source/file_tailer.h"

namespace faultline {

std::unique_ptr<StreamConsumer> FileTailer::MakeConsumer(const std::string& path, uint64_t offset,
                                                         const FileMark* resumed) {
  if (options_.resume != nullptr) return options_.resume->Start(path, offset, resumed);
  return factory_(path);
}

void FileTailer::LocateSavedFiles() {
  if (options_.resume == nullptr) return;
  marks_ = options_.resume->Unclaimed();
  history_ = options_.resume->has_history();
  for (size_t i = 0; i < marks_.size(); ++i) {
    const FileMark& mark = marks_[i];
    struct stat st {};
    const bool at_path =
        stat(mark.path.c_str(), &st) == 0 && st.st_dev == mark.device && st.st_ino == mark.inode;
    if (at_path) {
      struct stat lst {};
      const bool is_link = lstat(mark.path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
      if (Claim(OpenForReading(mark.path, is_link), mark.path, i, /*by_inode=*/true)) continue;
    }
    // Renamed while the agent was down (by inode), or copied and truncated (by content).
    if ((!at_path && FindSaved(mark, i, /*by_inode=*/true)) ||
        FindSaved(mark, i, /*by_inode=*/false)) {
      continue;
    }
    spdlog::info("{} was {} while the agent was down; its saved position no longer applies",
                 mark.path, at_path ? "rewritten" : "deleted");
    options_.resume->Forget(mark);
  }
}

bool FileTailer::Claim(int fd, const std::string& name, size_t index, bool by_inode) {
  if (fd < 0) return false;
  const FileMark& mark = marks_[index];
  struct stat st {};
  // A file that is another saved file (by inode), or that another mark already found, is not a
  // copy of this one, whatever its bytes: copytruncate's copy is a new inode.
  const auto other_mark = [&](const FileMark& m) {
    return &m != &mark && m.device == static_cast<uint64_t>(st.st_dev) &&
           m.inode == static_cast<uint64_t>(st.st_ino);
  };
  const bool same = fstat(fd, &st) == 0 && !by_identity_.contains({st.st_dev, st.st_ino}) &&
                    !located_.contains({st.st_dev, st.st_ino}) &&
                    (by_inode ? st.st_dev == mark.device && st.st_ino == mark.inode
                              : std::none_of(marks_.begin(), marks_.end(), other_mark)) &&
                    Holds(fd, mark);
  if (!same) {
    close(fd);
    return false;
  }
  // Held from now on: whatever the name becomes (logrotate may be renaming while the agent
  // starts), this descriptor is the file that was checked.
  budget_->Acquire(this, /*force=*/true);
  located_.emplace(Identity{st.st_dev, st.st_ino}, Located{fd, name, index});
  if (name != mark.path) {
    spdlog::info("{} was rotated while the agent was down; reading the rest of it in {}", mark.path,
                 name);
  }
  return true;
}

bool FileTailer::FindSaved(const FileMark& mark, size_t index, bool by_inode) {
  // Content identifies a copy only when some was read: any file "holds" nothing read at all.
  if (!by_inode && (mark.read_offset == 0 || mark.head_len == 0)) return false;
  const std::string dir = ParentOf(mark.path);
  const std::unique_ptr<DIR, int (*)(DIR*)> listing(opendir(dir.c_str()), closedir);
  if (listing == nullptr) return false;
  std::vector<std::string> names;
  while (const dirent* entry = readdir(listing.get())) {
    const std::string name = JoinPath(dir, entry->d_name);
    if (name == mark.path || entry->d_name[0] == '.') continue;
    if (by_inode ? entry->d_ino == mark.inode
                 : IsRotatedNameOf(name, mark.path) && !IsCompressedName(name)) {
      names.push_back(name);
    }
  }
  return std::any_of(names.begin(), names.end(), [&](const std::string& name) {
    return Claim(OpenForReading(name, /*is_link=*/false), name, index, by_inode);
  });
}

void FileTailer::DrainLocated() {
  if (options_.resume == nullptr) return;
  // Files rotated (and, for a copy, truncated) before or while the agent was down, under names
  // the globs do not follow (a rotated file being drained at the checkpoint is saved under the
  // name it had then): read their rest, then let them go like any rotated file. Each is read
  // through the descriptor it was checked with, never opened again by name.
  const auto drain = [&](int fd, const std::string& path, const FileMark* resumed) {
    struct stat st {};
    if (fstat(fd, &st) != 0 || by_identity_.contains({st.st_dev, st.st_ino})) {
      close(fd);
      budget_->Release();
      if (resumed != nullptr) options_.resume->Forget(*resumed);
      return;
    }
    StartDraining(fd, st, path, resumed != nullptr ? resumed->resume_offset : 0, resumed);
  };
  for (auto& [id, located] : std::exchange(located_, {})) {
    drain(located.fd, located.name, &marks_[located.mark]);
  }
  // Rotated names of saved files that changed after the checkpoint and hold no saved position:
  // written and rotated while the agent was down (a file rotated twice), read whole.
  const int64_t since = options_.resume->checkpoint_time_ns();
  if (since > 0) {
    // Each folder is listed once for all the saved files in it: 10,000 saved files in 100
    // folders are 100 listings, not 10,000 (that walk was most of a restart's time).
    std::map<std::string, std::set<std::string>> saved_by_folder;
    for (const FileMark& mark : marks_) saved_by_folder[ParentOf(mark.path)].insert(mark.path);
    for (const auto& [dir, saved] : saved_by_folder) {
      const std::unique_ptr<DIR, int (*)(DIR*)> listing(opendir(dir.c_str()), closedir);
      if (listing == nullptr) continue;
      std::vector<std::string> names;
      while (const dirent* entry = readdir(listing.get())) {
        if (entry->d_name[0] == '.') continue;
        const std::string_view entry_name = entry->d_name;
        const bool rotated = std::any_of(saved.begin(), saved.end(), [&](const std::string& path) {
          return IsRotatedNameOf(entry_name, path);
        });
        if (!rotated) continue;
        std::string name = JoinPath(dir, entry->d_name);
        if (!IsCompressedName(name) && !files_.contains(name) && !Wanted(name)) {
          names.push_back(std::move(name));
        }
      }
      for (const std::string& name : names) {
        // Decided on the descriptor: the name may be given to another file meanwhile.
        budget_->Acquire(this, /*force=*/true);
        const int fd = OpenForReading(name, /*is_link=*/false);
        struct stat st {};
        if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
            by_identity_.contains({st.st_dev, st.st_ino}) ||
            int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec < since) {
          if (fd >= 0) close(fd);
          budget_->Release();
          continue;
        }
        if (CopiesAFollowedFile(fd, static_cast<uint64_t>(st.st_size))) {
          // logrotate copytruncate between its copy and its truncate: the lines are the
          // original's, read there; once it is truncated its stream goes on in this copy.
          spdlog::info("{} is empty or holds a copy of a file followed now; not read", name);
          close(fd);
          budget_->Release();
          continue;
        }
        spdlog::info("{} was written and rotated while the agent was down; reading it whole", name);
        drain(fd, name, nullptr);
      }
    }
  }
  marks_.clear();
}

}  // namespace faultline
