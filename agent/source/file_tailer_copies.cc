// FileTailer, copies (file_tailer.h, "A copy of a file already read" and "Truncated or rewritten
// in place"): where a stream starts in a file, holding back and settling a file named like a
// rotated copy, recognising a copytruncate copy, and going on in it after the truncate. The
// byte comparisons themselves are in file_identity.h.
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

namespace {

// Copies (logrotate copytruncate) appear right after the original is truncated; a stream that
// ended longer ago than this is not matched against new files any more.
constexpr auto kCopyMemory = std::chrono::minutes(10);
constexpr size_t kMaxEndedStreams = 1024;

}  // namespace

void FileTailer::StartAt(TailedFile& file, uint64_t offset) { file.mark = MarkAt(file.fd, offset); }

bool FileTailer::LooksLikeACopy(const std::string& path) const {
  const auto named_after = [&](const std::string& original) {
    return IsRotatedNameOf(path, original);
  };
  // Followed files are looked up by the names the copy could be named after, in its folder (not
  // compared one by one: 10,000 new files beside 10,000 followed ones stay cheap). Rotated and
  // ended streams are few, and an ended one may have lived in another folder (olddir).
  const std::string dir = ParentOf(path);
  const std::string name = std::filesystem::path(path).filename().string();
  const size_t dot = name.rfind('.');
  const std::string extension = dot == std::string::npos ? "" : name.substr(dot);
  for (size_t k = 1; k < name.size(); ++k) {
    if (files_.contains(JoinPath(dir, name.substr(0, k))) &&
        named_after(JoinPath(dir, name.substr(0, k)))) {
      return true;
    }
    const char c = name[k];
    if ((c == '-' || c == '_' || c == '.') && !extension.empty()) {
      const std::string original = JoinPath(dir, name.substr(0, k) + extension);
      if (files_.contains(original) && named_after(original)) return true;
    }
  }
  return std::any_of(draining_.begin(), draining_.end(),
                     [&](const auto& file) { return named_after(file->path); }) ||
         std::any_of(ended_.begin(), ended_.end(),
                     [&](const EndedStream& e) { return named_after(e.path); });
}

void FileTailer::CheckSettled() {
  for (auto it = settling_.begin(); it != settling_.end();) {
    auto file = files_.find(*it);
    if (file == files_.end()) {
      it = settling_.erase(it);
      continue;
    }
    TailedFile& f = *file->second;
    struct stat st {};
    if (stat(f.path.c_str(), &st) != 0 || st.st_dev != f.dev || st.st_ino != f.ino) {
      pending_[f.path] = true;  // gone or replaced: the recheck handles it
      ++it;
      continue;
    }
    // Settled: not empty, and unchanged for a whole poll interval, not merely since the last
    // look (which may have been a moment ago: logrotate creates the copy, then fills it).
    const auto now = Clock::now();
    if (st.st_size != f.last_size || !SameTime(st.st_mtim, f.last_mtime)) {
      f.last_size = st.st_size;
      f.last_mtime = st.st_mtim;
      f.last_data = now;
    }
    const bool still = st.st_size > 0 && now - f.last_data >= options_.poll_interval;
    if (still && (f.fd >= 0 || Reopen(f))) {
      it = settling_.erase(it);
      Settle(f);
    } else {
      ++it;
    }
  }
}

void FileTailer::Settle(TailedFile& file) {
  file.settling = false;
  struct stat st {};
  if (fstat(file.fd, &st) != 0) return;
  StartAt(file, CopyOffset(file.fd, static_cast<uint64_t>(st.st_size), file.path));
  // Nothing was fed to the consumer made at Discover; the stream really begins here.
  if (options_.resume != nullptr) {
    file.consumer = MakeConsumer(file.path, file.mark.offset, nullptr);
  }
  pending_.try_emplace(file.path, false);
}

uint64_t FileTailer::CopyOffset(int fd, uint64_t size, const std::string& path) {
  const CopyCandidate candidate(fd, size);
  // Whether this file holds what `mark` says was read of another (`live` when it is still
  // followed): the same first bytes, and the same bytes just before where the two part.
  uint64_t start = 0;
  const auto is_copy = [&](const ReadMark& mark, const TailedFile* live) {
    const std::optional<uint64_t> at = candidate.CopiedUpTo(mark, live != nullptr ? live->fd : -1);
    if (at.has_value()) start = *at;
    return at.has_value();
  };
  const auto found = [&](const std::string& of) {
    ++copies_;
    spdlog::info(
        "{} holds a copy of {} bytes already read from {} (a rotated copy); following it from "
        "there",
        path, start, of);
    return start;
  };
  for (const auto& [other_path, other] : files_) {
    if (IsRotatedNameOf(path, other_path) && is_copy(other->mark, other.get())) {
      return found(other_path);
    }
  }
  for (const auto& other : draining_) {
    if (IsRotatedNameOf(path, other->path) && is_copy(other->mark, other.get())) {
      return found(other->path);
    }
  }
  for (auto it = ended_.rbegin(); it != ended_.rend(); ++it) {
    if (IsRotatedNameOf(path, it->path) && is_copy(it->mark, nullptr)) return found(it->path);
  }
  return 0;
}

bool FileTailer::CopiesAFollowedFile(int fd, uint64_t size) const {
  if (size == 0) return true;  // created, not filled yet: nothing in it can be told from a copy
  FileEnds ends;
  if (!ReadEnds(fd, size, &ends)) return false;
  // Either the original still starts with the copy's bytes (not truncated yet), or the copy holds
  // what was read of the original (truncated since it was opened at start: its truncation is
  // handled where it is followed, which goes on in this copy from where reading stopped).
  const auto holds_it = [&](const TailedFile& other) {
    return StartsWith(other.fd, ends) ||
           (other.mark.offset > 0 &&
            Holds(fd, ToFileMark(other.path, static_cast<uint64_t>(other.dev),
                                 static_cast<uint64_t>(other.ino), other.mark, other.mark.offset)));
  };
  return std::any_of(files_.begin(), files_.end(),
                     [&](const auto& entry) { return holds_it(*entry.second); }) ||
         std::any_of(draining_.begin(), draining_.end(),
                     [&](const auto& other) { return holds_it(*other); });
}

bool FileTailer::ContinueInCopy(TailedFile& file) {
  if (file.mark.offset == 0) return false;
  const FileMark read = ToFileMark(file.path, static_cast<uint64_t>(file.dev),
                                   static_cast<uint64_t>(file.ino), file.mark, file.mark.offset);
  const std::string dir = ParentOf(file.path);
  std::vector<std::string> names;
  if (const std::unique_ptr<DIR, int (*)(DIR*)> listing(opendir(dir.c_str()), closedir);
      listing != nullptr) {
    while (const dirent* entry = readdir(listing.get())) {
      const std::string name = JoinPath(dir, entry->d_name);
      // A copy the globs follow is recognised as one when found (CopyOffset); this is for the
      // copies nothing follows.
      if (entry->d_name[0] != '.' && IsRotatedNameOf(name, file.path) && !IsCompressedName(name) &&
          !Wanted(name) && !files_.contains(name)) {
        names.push_back(name);
      }
    }
  }
  for (const std::string& name : names) {
    budget_->Acquire(this, /*force=*/true);
    const int fd = OpenForReading(name, /*is_link=*/false);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0 || by_identity_.contains({st.st_dev, st.st_ino}) ||
        !Holds(fd, read)) {
      if (fd >= 0) close(fd);
      budget_->Release();
      continue;
    }
    ++held_;
    ++truncations_;
    CountPathEvent(file.path, /*rotation=*/false);
    spdlog::info("{} was copied to {} and truncated; reading the rest of its lines there",
                 file.path, name);
    auto copy = std::make_unique<TailedFile>();
    copy->path = name;
    copy->fd = fd;
    copy->dev = st.st_dev;
    copy->ino = st.st_ino;
    copy->mark = file.mark;
    copy->last_size = st.st_size;
    copy->last_mtime = st.st_mtim;
    copy->consumer = std::move(file.consumer);
    copy->draining = true;
    copy->last_data = Clock::now();
    by_identity_[{st.st_dev, st.st_ino}] = copy.get();
    draining_.push_back(std::move(copy));
    drain_wanted_ = true;
    file.consumer = MakeConsumer(file.path, 0, nullptr);
    file.mark = ReadMark{};
    return true;
  }
  return false;
}

void FileTailer::Remember(const TailedFile& file) {
  if (file.mark.head_len == 0) return;
  const auto now = Clock::now();
  ended_.push_back(EndedStream{file.path, file.mark, now});
  while (ended_.size() > kMaxEndedStreams || now - ended_.front().when > kCopyMemory) {
    ended_.pop_front();
  }
}

}  // namespace faultline
