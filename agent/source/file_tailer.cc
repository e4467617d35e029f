#include "agent/source/file_tailer.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

namespace faultline {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadChunk = 1 << 20;
// Enough bytes to tell one log's content from another's with overwhelming likelihood, few enough
// to re-read on every change.
constexpr size_t kTailBytes = 64;
// The first bytes that identify a file across a close and reopen, and a copy of it: 1 KiB holds
// the first lines of a log, which usually carry a timestamp or a run id.
constexpr size_t kHeadBytes = 1024;
constexpr uint64_t kFnvPrime = 0x100000001b3ULL;
// Copies (logrotate copytruncate) appear right after the original is truncated; a stream that
// ended longer ago than this is not matched against new files any more.
constexpr auto kCopyMemory = std::chrono::minutes(10);
constexpr size_t kMaxEndedStreams = 1024;
constexpr int kMaxLinkHops = 8;
// Files serviced (or looked at for the first time) per pass: a few milliseconds of work.
constexpr size_t kFilesPerPass = 256;
// Files followed at Start are announced one by one up to this many; the rest at debug level,
// so that a glob over 10,000 files does not flood the agent's own log.
constexpr size_t kAnnounced = 20;

uint64_t Fnv(uint64_t hash, std::string_view bytes) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool SameTime(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

// Reads exactly `len` bytes at `offset`; false on a short read (the file shrank) or an error.
bool ReadAt(int fd, uint64_t offset, size_t len, std::string* out) {
  out->resize(len);
  size_t got = 0;
  while (got < len) {
    const ssize_t n = pread(fd, out->data() + got, len - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// O_NONBLOCK: opening a FIFO swapped in for a log must not wait for a writer. O_NOFOLLOW unless
// the path is meant to be a link: a regular file swapped for a link between finding and opening
// is looked at again instead of being followed blindly.
int OpenForReading(const std::string& path, bool is_link) {
  return open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (is_link ? 0 : O_NOFOLLOW));
}

// The paths a symbolic link resolves through, in order, the last one being the file (or what
// should be). Empty when `path` is not a link.
std::vector<std::string> ResolveLinkHops(const std::string& path) {
  std::vector<std::string> hops;
  std::string current = path;
  char target[PATH_MAX];
  for (int i = 0; i < kMaxLinkHops; ++i) {
    const ssize_t n = readlink(current.c_str(), target, sizeof(target));
    if (n <= 0 || static_cast<size_t>(n) >= sizeof(target)) break;
    std::string next(target, static_cast<size_t>(n));
    if (next.front() != '/') next = JoinPath(ParentOf(current), next);
    current = std::filesystem::path(next).lexically_normal().string();
    hops.push_back(current);
  }
  return hops;
}

std::vector<Glob> MakeGlobs(const std::vector<std::string>& patterns) {
  return {patterns.begin(), patterns.end()};
}

constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL;

// Whether the file open at `fd` still holds what `mark` says was read of it: at least the bytes
// read, the same first bytes, and the same bytes just before where reading stopped.
bool Holds(int fd, const FileMark& mark) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) < mark.read_offset || mark.tail.size() > mark.read_offset ||
      mark.resume_offset > mark.read_offset) {
    return false;
  }
  std::string bytes;
  if (mark.head_len > 0 && (!ReadAt(fd, 0, static_cast<size_t>(mark.head_len), &bytes) ||
                            Fnv(kFnvBasis, bytes) != mark.head_hash)) {
    return false;
  }
  return mark.tail.empty() ||
         (ReadAt(fd, mark.read_offset - mark.tail.size(), mark.tail.size(), &bytes) &&
          bytes == mark.tail);
}

// Compressed rotated copies hold other bytes than the log: never read as lines.
bool IsCompressedName(const std::string& path) {
  for (const char* extension : {".gz", ".zst", ".xz", ".bz2", ".lz4"}) {
    const std::string_view ext(extension);
    if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0) {
      return true;
    }
  }
  return false;
}

void RememberTail(std::string& tail, std::string_view bytes) {
  if (bytes.size() >= kTailBytes) {
    tail.assign(bytes.substr(bytes.size() - kTailBytes));
    return;
  }
  tail.append(bytes);
  if (tail.size() > kTailBytes) tail.erase(0, tail.size() - kTailBytes);
}

}  // namespace

FileTailer::FileTailer(asio::io_context& io, FileTailerOptions options,
                       StreamConsumerFactory factory)
    : io_(io),
      options_(std::move(options)),
      factory_(std::move(factory)),
      globs_(MakeGlobs(options_.patterns)),
      exclude_(options_.exclude),
      budget_(options_.descriptors != nullptr
                  ? options_.descriptors
                  : std::make_shared<DescriptorBudget>(std::numeric_limits<size_t>::max())),
      poll_timer_(io),
      rescan_timer_(io),
      watcher_(io, options_.poll_interval),
      rooted_(globs_.size(), false),
      read_buffer_(kReadChunk, '\0') {
  budget_->Register(this);
}

FileTailer::~FileTailer() {
  *alive_ = false;
  Stop();
}

void FileTailer::Start() {
  watcher_.Start([this](const std::vector<FolderWatcher::Event>& events) { OnEvents(events); },
                 [this](const std::string& dir) { OnFolderLost(dir); });
  WarnAboutRotatedNames();
  LocateSavedFiles();
  Rescan(/*initial=*/true);
  DrainLocated();
  if (announced_ > kAnnounced) {
    spdlog::info("following {} files in all for {}", files_.size(), options_.patterns.front());
  }
  ArmPollTimer();
  ArmRescanTimer();
  SchedulePass();
}

void FileTailer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  poll_timer_.cancel();
  rescan_timer_.cancel();
  // Settle what each stream holds (a last partial line, hits waiting for context) so that stopping
  // loses no count.
  for (auto& [path, file] : files_) file->consumer->OnEnd();
  for (auto& file : draining_) file->consumer->OnEnd();
  watcher_.Stop();
  for (auto& [path, file] : files_) CloseFd(*file);
  for (auto& file : draining_) CloseFd(*file);
  files_.clear();
  draining_.clear();
  by_identity_.clear();
  active_.clear();
  unflushed_.clear();
  budget_->Unregister(this);
}

void FileTailer::ArmPollTimer() {
  if (stopped_) return;
  poll_timer_.expires_after(options_.poll_interval);
  poll_timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive || stopped_) return;
    OnPollTick();
    ArmPollTimer();
  });
}

void FileTailer::ArmRescanTimer() {
  if (stopped_) return;
  rescan_timer_.expires_after(options_.rescan_interval);
  rescan_timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive || stopped_) return;
    rescan_wanted_ = true;
    SchedulePass();
    ArmRescanTimer();
  });
}

void FileTailer::SchedulePass() {
  if (pass_scheduled_ || stopped_) return;
  pass_scheduled_ = true;
  asio::post(io_, [this, alive = alive_] {
    if (!*alive || stopped_) return;
    pass_scheduled_ = false;
    Pass();
  });
}

void FileTailer::OnEvents(const std::vector<FolderWatcher::Event>& events) {
  if (stopped_) return;
  drain_wanted_ = true;  // a rotated file may have been written under any name
  for (const FolderWatcher::Event& event : events) {
    if (event.dir.empty()) {
      // The kernel dropped events: anything may have changed.
      spdlog::info("inotify queue overflowed; walking the globs again");
      rescan_wanted_ = true;
      continue;
    }
    if (event.name.empty()) continue;  // the folder itself: FolderWatcher reports it lost
    std::string path = JoinPath(event.dir, event.name);
    const uint32_t mask = event.mask;
    const bool appeared = mask & (IN_CREATE | IN_MOVED_TO);
    const bool name_changed = mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO);
    if (mask & IN_MOVED_FROM) moving_[event.cookie] = path;
    if (mask & IN_MOVED_TO) {
      if (auto from = moving_.find(event.cookie); from != moving_.end()) {
        if (files_.contains(from->second) || link_owners_.contains(from->second)) {
          rotated_to_.insert(path);
        }
        renamed_[from->second] = path;
        moving_.erase(from);
      }
    }
    if (mask & IN_ISDIR) {
      if (appeared) {
        new_folders_.insert(path);
      } else if (name_changed) {
        RecheckUnder(path);
      }
      continue;
    }
    const bool recheck = name_changed || (mask & IN_ATTRIB);
    if (files_.contains(path)) {
      bool& flag = pending_[path];
      flag = flag || recheck;
    } else if (aliases_.contains(path)) {
      // The same file is followed under another name, which has its own events.
      if (recheck) {
        aliases_.erase(path);
        candidates_.insert(path);
      }
    } else if (Wanted(path)) {
      candidates_.insert(path);
    } else if (appeared && MayBeFolderLink(path)) {
      new_folders_.insert(path);
    }
    for (auto [it, end] = link_owners_.equal_range(path); it != end; ++it) {
      if (files_.contains(it->second)) {
        bool& flag = pending_[it->second];
        flag = flag || recheck;
      } else if (recheck) {
        candidates_.insert(it->second);
      }
    }
  }
  SchedulePass();
}

void FileTailer::RecheckUnder(const std::string& dir) {
  const std::string prefix = dir == "." ? "" : dir == "/" ? "/" : dir + "/";
  for (auto it = files_.lower_bound(prefix);
       it != files_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    pending_[it->first] = true;
  }
  for (auto it = link_owners_.lower_bound(prefix);
       it != link_owners_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (files_.contains(it->second)) pending_[it->second] = true;
  }
}

void FileTailer::OnFolderLost(const std::string& dir) {
  if (stopped_) return;
  for (size_t i = 0; i < globs_.size(); ++i) {
    if (globs_[i].root() == dir) rooted_[i] = false;
  }
  RecheckUnder(dir);
  reliability_stale_ = true;
  SchedulePass();
}

void FileTailer::OnPollTick() {
  const auto now = Clock::now();
  if (!watcher_.available()) {
    rescan_wanted_ = true;  // nothing reports changes: walk and stat everything, every tick
  } else {
    for (const std::string& path : unreliable_) pending_[path] = true;
    for (const std::string& dir : watcher_.PolledGlobFolders()) {
      for (const Glob& glob : globs_) {
        if (glob.MatchFolder(dir) != Glob::FolderMatch::kNo) WalkFolder(glob, dir, false, false);
      }
    }
    for (size_t i = 0; i < globs_.size(); ++i) {
      if (rooted_[i]) continue;
      struct stat st {};
      if (stat(globs_[i].root().c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
      rooted_[i] = true;
      watcher_.WatchForGlob(globs_[i].root());
      WalkFolder(globs_[i], globs_[i].root(), false, true);
    }
  }
  for (const std::string& path : std::exchange(waiting_for_fd_, {})) {
    if (files_.contains(path)) {
      pending_.try_emplace(path, false);
    } else {
      candidates_.insert(path);
    }
  }
  // A rename whose IN_MOVED_TO never came moved the file out of the watched folders.
  moving_.clear();
  drain_wanted_ = true;
  CheckSettled();
  CheckQuiet(now);
  CloseIdle(now);
  Pass();
}

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

void FileTailer::StartAt(TailedFile& file, uint64_t offset) {
  file.mark = ReadMark{};
  const size_t head_len = static_cast<size_t>(std::min<uint64_t>(kHeadBytes, offset));
  std::string head;
  const size_t tail_len = static_cast<size_t>(std::min<uint64_t>(kTailBytes, offset));
  if (offset == 0 || !ReadAt(file.fd, 0, head_len, &head) ||
      !ReadAt(file.fd, offset - tail_len, tail_len, &file.mark.tail)) {
    file.mark.tail.clear();
    return;  // empty, or shrank meanwhile: from the beginning
  }
  file.mark.offset = offset;
  file.mark.head_len = head_len;
  file.mark.head_hash = Fnv(file.mark.head_hash, head);
}

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

uint64_t FileTailer::CopyOffset(int fd, uint64_t size, const std::string& path) {
  if (size == 0) return 0;
  std::string head;
  const size_t head_len = static_cast<size_t>(std::min<uint64_t>(kHeadBytes, size));
  if (!ReadAt(fd, 0, head_len, &head)) return 0;
  std::vector<uint64_t> prefix(head_len + 1);
  prefix[0] = ReadMark{}.head_hash;
  for (size_t i = 0; i < head_len; ++i) prefix[i + 1] = Fnv(prefix[i], head.substr(i, 1));

  // Whether this file holds what `mark` says was read of another (`live` when it is still
  // followed): the same first bytes, and the same bytes just before where the two part.
  uint64_t start = 0;
  const auto is_copy = [&](const ReadMark& mark, const TailedFile* live) {
    if (mark.head_len == 0 || mark.head_len > head_len ||
        prefix[mark.head_len] != mark.head_hash) {
      return false;
    }
    const uint64_t at = std::min(size, mark.offset);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kTailBytes, at));
    std::string mine;
    std::string theirs;
    if (!ReadAt(fd, at - n, n, &mine)) return false;
    if (at == mark.offset) {
      theirs = mark.tail;
    } else if (live == nullptr || live->fd < 0 || !ReadAt(live->fd, at - n, n, &theirs)) {
      return false;
    }
    if (mine != theirs) return false;
    start = at;
    return true;
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
  const bool same =
      fstat(fd, &st) == 0 && !by_identity_.contains({st.st_dev, st.st_ino}) &&
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
    spdlog::info("{} was rotated while the agent was down; reading the rest of it in {}",
                 mark.path, name);
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

bool FileTailer::CopiesAFollowedFile(int fd, uint64_t size) const {
  if (size == 0) return true;  // created, not filled yet: nothing in it can be told from a copy
  const size_t head_len = static_cast<size_t>(std::min<uint64_t>(kHeadBytes, size));
  const size_t end_len = static_cast<size_t>(std::min<uint64_t>(kTailBytes, size));
  std::string head;
  std::string end;
  if (!ReadAt(fd, 0, head_len, &head) || !ReadAt(fd, size - end_len, end_len, &end)) return false;
  const auto holds_it = [&](const TailedFile& other) {
    struct stat other_st {};
    std::string bytes;
    return other.fd >= 0 && fstat(other.fd, &other_st) == 0 &&
           static_cast<uint64_t>(other_st.st_size) >= size && ReadAt(other.fd, 0, head_len, &bytes) &&
           bytes == head && ReadAt(other.fd, size - end_len, end_len, &bytes) && bytes == end;
  };
  return std::any_of(files_.begin(), files_.end(),
                     [&](const auto& entry) { return holds_it(*entry.second); }) ||
         std::any_of(draining_.begin(), draining_.end(),
                     [&](const auto& other) { return holds_it(*other); });
}

bool FileTailer::ContinueInCopy(TailedFile& file) {
  if (file.mark.offset == 0) return false;
  const FileMark read{file.path,
                      static_cast<uint64_t>(file.dev),
                      static_cast<uint64_t>(file.ino),
                      file.mark.head_hash,
                      file.mark.head_len,
                      file.mark.offset,
                      file.mark.tail,
                      file.mark.offset};
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

void FileTailer::ForEachStream(
    const std::function<void(const FileMark&, StreamConsumer&)>& visit) const {
  const auto one = [&](const TailedFile& file) {
    if (file.settling || file.consumer == nullptr) return;
    const FileMark mark{file.path,
                        static_cast<uint64_t>(file.dev),
                        static_cast<uint64_t>(file.ino),
                        file.mark.head_hash,
                        file.mark.head_len,
                        file.mark.offset,
                        file.mark.tail,
                        0};
    visit(mark, *file.consumer);
  };
  for (const auto& [path, file] : files_) one(*file);
  for (const auto& file : draining_) one(*file);
}

void FileTailer::ForEachFile(const std::function<void(const FileView&)>& visit) const {
  for (const auto& [path, file] : files_) {
    if (file->settling) continue;
    const uint64_t seen = file->last_size > 0 ? static_cast<uint64_t>(file->last_size) : 0;
    const uint64_t size = std::max(file->mark.offset, seen);
    auto events = path_events_.find(path);
    const PathEvents counts = events == path_events_.end() ? PathEvents{} : events->second;
    visit(FileView{path, size, file->mark.offset, counts.rotations, counts.truncations});
  }
}

void FileTailer::CountPathEvent(const std::string& path, bool rotation) {
  auto it = path_events_.find(path);
  if (it == path_events_.end()) {
    if (path_events_.size() >= kMaxPathsCounted) return;
    it = path_events_.emplace(path, PathEvents{}).first;
  }
  ++(rotation ? it->second.rotations : it->second.truncations);
}

void FileTailer::Pass() {
  if (stopped_) return;
  if (reliability_stale_) {
    reliability_stale_ = false;
    for (const auto& [path, file] : files_) UpdateReliability(*file);
  }
  if (rescan_wanted_) {
    rescan_wanted_ = false;
    Rescan(/*initial=*/false);
  }
  for (const std::string& dir : std::exchange(new_folders_, {})) ScanNewFolder(dir);
  // Followed files first, so that a rotated file is draining before its new name is looked at.
  // A pass takes a bounded share of the work, so that after 10,000 files changed at once the
  // loop still answers /metrics between passes.
  std::vector<std::pair<std::string, bool>> batch;
  while (!pending_.empty() && batch.size() < kFilesPerPass) {
    auto node = pending_.extract(pending_.begin());
    batch.emplace_back(std::move(node.key()), node.mapped());
  }
  for (const auto& [path, recheck] : batch) {
    auto it = files_.find(path);
    if (it != files_.end()) Service(*it->second, recheck);
  }
  for (const std::string& path : std::exchange(rotated_to_, {})) DrainUnseen(path);
  std::vector<std::string> found;
  while (!candidates_.empty() && found.size() < kFilesPerPass) {
    found.push_back(std::move(candidates_.extract(candidates_.begin()).value()));
  }
  for (const std::string& path : found) {
    if (!files_.contains(path)) Discover(path, /*initial=*/false);
  }
  if (std::exchange(drain_wanted_, false)) ReadDraining();
  renamed_.clear();
  if (!pending_.empty() || !candidates_.empty() || !new_folders_.empty() || drain_wanted_ ||
      rescan_wanted_) {
    SchedulePass();
  }
}

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
  if (file.mark.head_len > 0) {
    std::string head;
    if (!ReadAt(fd, 0, file.mark.head_len, &head) ||
        Fnv(ReadMark{}.head_hash, head) != file.mark.head_hash) {
      RestartStream(file, "was rewritten while it was closed");
    }
  }
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
    std::string head;
    const bool same = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                      st.st_dev == file.dev && st.st_ino == file.ino &&
                      (file.mark.head_len == 0 ||
                       (ReadAt(fd, 0, file.mark.head_len, &head) &&
                        Fnv(ReadMark{}.head_hash, head) == file.mark.head_hash));
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
  const ReadMark& mark = file.mark;
  if (static_cast<uint64_t>(st.st_size) < mark.offset) return true;
  if (!changed || mark.tail.empty()) return false;
  std::string now;
  return ReadAt(file.fd, mark.offset - mark.tail.size(), mark.tail.size(), &now) &&
         now != mark.tail;
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
    ReadMark& mark = file.mark;
    if (mark.head_len < kHeadBytes) {  // still inside the first bytes: head_len == offset
      const size_t add = std::min(bytes.size(), kHeadBytes - mark.head_len);
      mark.head_hash = Fnv(mark.head_hash, bytes.substr(0, add));
      mark.head_len += add;
    }
    mark.offset += bytes.size();
    RememberTail(mark.tail, bytes);
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

void FileTailer::Remember(const TailedFile& file) {
  if (file.mark.head_len == 0) return;
  const auto now = Clock::now();
  ended_.push_back(EndedStream{file.path, file.mark, now});
  while (ended_.size() > kMaxEndedStreams || now - ended_.front().when > kCopyMemory) {
    ended_.pop_front();
  }
}

bool FileTailer::ReleaseOne() {
  if (lru_.empty()) return false;
  CloseFd(*lru_.back());
  return true;
}

void FileTailer::Touch(TailedFile& file) {
  if (file.fd < 0 || file.draining) return;
  if (file.in_lru) {
    lru_.splice(lru_.begin(), lru_, file.lru);
  } else {
    lru_.push_front(&file);
    file.lru = lru_.begin();
    file.in_lru = true;
  }
}

void FileTailer::CloseFd(TailedFile& file) {
  if (file.in_lru) {
    lru_.erase(file.lru);
    file.in_lru = false;
  }
  if (file.fd < 0) return;
  close(file.fd);
  file.fd = -1;
  --held_;
  budget_->Release();
}

std::unique_ptr<FileTailer::TailedFile> FileTailer::Unfollow(const std::string& path) {
  auto it = files_.find(path);
  std::unique_ptr<TailedFile> file = std::move(it->second);
  files_.erase(it);
  unreliable_.erase(path);
  if (file->in_lru) {
    lru_.erase(file->lru);
    file->in_lru = false;
  }
  return file;
}

void FileTailer::End(std::unique_ptr<TailedFile> file) {
  Remember(*file);
  file->consumer->OnEnd();
  CloseFd(*file);
  active_.erase(file.get());
  unflushed_.erase(file.get());
  if (auto it = by_identity_.find({file->dev, file->ino});
      it != by_identity_.end() && it->second == file.get()) {
    by_identity_.erase(it);
  }
}

SourceStatus FileTailer::Status() const {
  SourceStatus status;
  status.type = "file";
  const auto add = [&status](const TailedFile& file) {
    const uint64_t size = file.last_size > 0 ? static_cast<uint64_t>(file.last_size) : 0;
    status.streams.push_back(SourceStreamStatus{
        .name = file.path,
        .read_bytes = file.mark.offset,
        .lag_bytes = size > file.mark.offset ? size - file.mark.offset : 0,
        .open = file.fd >= 0,
        .draining = file.draining,
    });
  };
  for (const auto& [path, file] : files_) add(*file);
  for (const auto& file : draining_) add(*file);
  for (const auto& [path, message] : reported_) status.problems.push_back({path, message});
  return status;
}

}  // namespace faultline
