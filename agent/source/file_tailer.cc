// FileTailer (file_tailer.h): its life (Start, Stop), the timers and inotify events that fill the
// work of a pass, the pass itself, the descriptors held, and what it reports (streams, files,
// status). Finding files is in file_tailer_discovery.cc, copies in file_tailer_copies.cc, saved
// positions in file_tailer_resume.cc, reading in file_tailer_reading.cc.
#include "agent/source/file_tailer.h"

#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <limits>

#include "agent/source/file_access.h"
#include "agent/source/file_identity.h"

namespace faultline {

namespace {

constexpr size_t kReadChunk = 1 << 20;
// Files serviced (or looked at for the first time) per pass: a few milliseconds of work.
constexpr size_t kFilesPerPass = 256;

std::vector<Glob> MakeGlobs(const std::vector<std::string>& patterns) {
  return {patterns.begin(), patterns.end()};
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

void FileTailer::ForEachStream(
    const std::function<void(const FileMark&, StreamConsumer&)>& visit) const {
  const auto one = [&](const TailedFile& file) {
    if (file.settling || file.consumer == nullptr) return;
    visit(ToFileMark(file.path, static_cast<uint64_t>(file.dev), static_cast<uint64_t>(file.ino),
                     file.mark, 0),
          *file.consumer);
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
