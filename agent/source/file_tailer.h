// FileTailer: follows the files matched by a file source's paths and globs, and hands each file's
// new bytes, in order, to a consumer of its own.
//
// Finding files (cheap when idle):
// - At Start every glob is walked once from its root (glob.h), and each folder that can hold
//   matches is watched with inotify (folder_watcher.h). After that, names are looked at only as
//   inotify reports them: a created or renamed-in name is matched against the globs, a new folder
//   is walked. A full walk happens only every rescan_interval (a safety net for missed events)
//   and after an inotify queue overflow.
// - A write wakes a read of that one file. The poll tick (poll_interval) stats only what inotify
//   cannot vouch for: files in folders whose watch failed or that are on network or FUSE file
//   systems (those folders are also listed each tick), and globs whose root folder does not exist
//   yet. Without inotify at all, every tick re-walks and stats everything.
// - `exclude` (rotated_names.h) drops names globs find, such as app.log.1 or app.log.2.gz; a
//   path named literally is always followed. At Start a glob that also matches rotated names is
//   reported once: a warning when exclude does not cover them, info when it does.
// - A path that is a symbolic link (the Kubernetes layout, /var/log/containers/x.log ->
//   /var/log/pods/<uid>/<c>/0.log) is opened through the link, and the folder of every link
//   target on the way is watched too, so the target's writes and its rotation wake the tailer.
//   Links are resolved again whenever they or their targets change name.
// - Only regular files are read: a path is opened with O_NONBLOCK (O_NOFOLLOW unless it is a
//   link) and checked with fstat after open, so a FIFO, socket or device swapped in is refused,
//   reported once, and never blocks the loop.
//
// What happens to a file (the one place this is defined):
// - Present at Start: read from its end (start_at: end) or its beginning (start_at: beginning).
//   Found later: read from the beginning, since everything in it is new, unless it is a copy of a
//   file already read (below).
// - With saved positions (options.resume, file_resume.h), at Start each saved file is looked for
//   before anything is read: at its path (same device and inode), else in its folder by inode (it
//   was renamed while the agent was down), else among its rotated names by content (logrotate
//   copytruncate ran while the agent was down: the copy holds the unread rest). Found and
//   unchanged (same first bytes, at least the bytes read, the same bytes where reading stopped),
//   its stream resumes where the checkpoint says, under whatever name it has now, followed if the
//   globs match that name and drained otherwise. A file found is held open from then on and read
//   through that descriptor, never looked up by name again: logrotate may be renaming while the
//   agent starts, and a name looked at twice can name two files. A saved file whose inode now
//   holds other bytes is read from 0; start_at applies only on the source's first start (files
//   present then, with no saved position, appeared while the agent was down and are read whole).
//   A rotated name with no saved position that changed after the checkpoint was written and
//   rotated while the agent was down and is read whole, unless it is empty or holds the start of
//   a file followed now (its first and last bytes are that file's at the same offsets): then it
//   is a copy logrotate copytruncate made (or is making) before a truncate still to come, whose
//   lines are read in the original, and it is left for the truncate (below) to go on in.
// - Appended: the new bytes go to its consumer.
// - Truncated or rewritten in place (copytruncate): noticed when the size drops below the read
//   offset, or when the file changed and the bytes just before the offset are no longer the ones
//   read there (a truncate followed by writes that regrow it past the old offset), or when its
//   first bytes changed while it was closed. When a rotated name of it in its folder that nothing
//   follows (app.log.1, excluded by default) holds what was read (logrotate copytruncate copied it
//   just before truncating), the stream goes on in that copy from where it stopped, so the lines
//   written between the last read and the copy are read once; otherwise the stream ends (OnEnd)
//   and the bytes seen in the file but never read are counted as lost (bytes_lost()). Either
//   way a new stream of the same path starts at offset 0.
// - Rotated by rename (the path now names another inode): the old file keeps being read until it
//   has been quiet for rotate_wait (a writer may not reopen at once), then its stream ends; the
//   new file at the path is read from the beginning as a new stream. A rotated file is followed
//   under its new name even if exclude or the globs do not match it, and so is a file that was
//   created, written and renamed away from a followed name (or link target) before the tailer
//   ever opened it: inotify's rename names where it went.
// - Files are identified by device and inode, not by path: a rotated file renamed to a name the
//   globs also match keeps its stream and offset, and is never read twice.
// - A copy of a file already read (logrotate copytruncate leaves app.log.1 with the bytes of
//   app.log): a new file named like a rotated copy of a followed file, or of one whose stream
//   ended in the last 10 minutes (rotated_names.h: app.log.1, app.log-20240131 for app.log), is
//   held back until it is not empty and has not changed for a whole poll interval (logrotate
//   creates the copy empty and then fills it, later on a loaded machine). If then its first bytes
//   (up to 1 KiB) hash like those of that file, and its bytes just before min(its size, that file's
//   offset) are the ones read there, it is followed from that point, so its lines are not counted
//   again; otherwise it is read from the beginning. A copy shorter than 1 KiB taken before the
//   original grew further is not recognised.
// - Deleted: read to its end, and on while a writer that still holds it appends, until it has been
//   quiet for rotate_wait (counted from its last write or its deletion, whichever is later; the
//   same for a file rotated away); then its stream ends and its descriptor is closed.
// - Unreadable (permissions, vanished between finding and opening), or not a regular file:
//   reported once, tried again when inotify reports it changed, and at the next rescan.
// A stream that has had no new bytes for quiet_after gets OnQuiet once (to settle pending
// context). A read never takes more than read_budget bytes from one file before others get a
// turn, so one huge file cannot starve the loop.
//
// Descriptors: the agent's tailers share one DescriptorBudget (descriptor_budget.h). A file keeps
// its descriptor while it is active; a file quiet for close_idle_after, or the least recently
// used one when the budget is spent, is closed and from then on followed by stat. When it changes
// it is reopened and its identity checked again (device, inode, and the hash of its first bytes)
// before reading on from its offset. A closed file that is renamed is found under its new name
// (the rename inotify saw, or its inode in a listing of its folder) and drained there, so no line
// written before the rotation is lost; one deleted while closed has nothing left to read.
//
// Runs on the caller's io_context (one thread, no locks); consumers are called on it and must not
// throw. The io_context must outlive the tailer. Nothing here throws after construction.
//
// The class is defined in one file per concern: file_tailer.cc (life, events, passes,
// descriptors, reporting), file_tailer_discovery.cc (finding files), file_tailer_copies.cc
// (copytruncate copies), file_tailer_resume.cc (saved positions), file_tailer_reading.cc (reading,
// rotation, truncation); the byte-level identity decisions are file_identity.h.
#ifndef FAULTLINE_SOURCE_FILE_TAILER_H_
#define FAULTLINE_SOURCE_FILE_TAILER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "agent/core/asio.h"
#include "agent/source/descriptor_budget.h"
#include "agent/source/file_identity.h"
#include "agent/source/file_resume.h"
#include "agent/source/folder_watcher.h"
#include "agent/source/glob.h"
#include "agent/source/rotated_names.h"
#include "agent/source/source_status.h"
#include "agent/source/stream_consumer.h"

namespace faultline {

struct FileTailerOptions {
  std::vector<std::string> patterns;  // paths or globs
  std::vector<std::string> exclude;   // names (or paths, with '/') globs must not follow
  bool start_at_end = true;           // for files present at Start
  std::chrono::milliseconds poll_interval{1000};
  std::chrono::milliseconds rescan_interval{30000};
  std::chrono::milliseconds quiet_after{2000};
  // A stream with no new bytes this long gets OnPartialTimeout (its partial last line is taken);
  // 0: never, a partial line waits for its newline, a rotation or a deletion.
  std::chrono::milliseconds partial_flush_after{0};
  std::chrono::milliseconds rotate_wait{60000};
  std::chrono::milliseconds close_idle_after{std::chrono::minutes(5)};
  size_t read_budget = 4 << 20;
  // Shared by the agent's tailers; null gives this tailer an unlimited budget of its own.
  std::shared_ptr<DescriptorBudget> descriptors;
  // Saved positions to resume from; when set, it also makes every stream's consumer (the factory
  // is not used). Must outlive the tailer.
  FileResume* resume = nullptr;
};

class FileTailer : private DescriptorBudget::Holder {
 public:
  FileTailer(asio::io_context& io, FileTailerOptions options, StreamConsumerFactory factory);
  ~FileTailer() override;
  FileTailer(const FileTailer&) = delete;
  FileTailer& operator=(const FileTailer&) = delete;

  // Finds the files, sets up inotify and the timers. inotify failing is logged, not fatal.
  void Start();
  // Ends every stream (OnEnd), cancels the timers and inotify, and closes every file.
  void Stop();

  // Descriptors held now (followed files that are open, and rotated files being drained).
  size_t open_files() const { return held_; }
  size_t followed_files() const { return files_.size() + draining_.size(); }
  uint64_t rotations() const { return rotations_; }
  uint64_t truncations() const { return truncations_; }
  uint64_t copies_recognised() const { return copies_; }
  uint64_t reopens() const { return reopens_; }
  // Bytes a file was seen to hold that were never read because it was truncated first
  // (copytruncate with no copy holding them): an estimate from the sizes seen.
  uint64_t bytes_lost() const { return bytes_lost_; }

  // Every stream now, with what identifies its file and how far it was read (resume_offset left
  // 0: the consumer knows where its first open line starts). Files held back as possible copies
  // have read nothing and are left out.
  void ForEachStream(const std::function<void(const FileMark&, StreamConsumer&)>& visit) const;

  // Every followed file (not those being drained after a rotation) as /metrics shows it: its
  // size as last seen, how far it was read, and how often its path was rotated or its file
  // truncated while followed (counts kept for at most kMaxPathsCounted paths).
  struct FileView {
    const std::string& path;
    uint64_t size;
    uint64_t offset;
    uint64_t rotations;
    uint64_t truncations;
  };
  void ForEachFile(const std::function<void(const FileView&)>& visit) const;
  // Full walks of the globs since Start (the first one included).
  uint64_t rescans() const { return rescans_; }
  // Every followed file with its offset and lag, and the paths that could not be read now.
  SourceStatus Status() const;
  // Why changes may be seen late, a poll tick instead of at once (FolderWatcher::Problem).
  std::string Problem() const { return watcher_.Problem(); }

 private:
  using Clock = std::chrono::steady_clock;
  // Files followed at Start are announced one by one up to this many; the rest at debug level,
  // so that a glob over 10,000 files does not flood the agent's own log.
  static constexpr size_t kAnnounced = 20;

  struct TailedFile {
    std::string path;
    bool is_link = false;  // opened through a symbolic link
    int fd = -1;
    dev_t dev = 0;
    ino_t ino = 0;
    ReadMark mark;
    off_t last_size = -1;
    struct timespec last_mtime {};
    std::unique_ptr<StreamConsumer> consumer;
    std::chrono::steady_clock::time_point last_data;
    bool quiet_reported = false;
    bool draining = false;  // rotated away or deleted: read through its descriptor until it ends
    bool settling = false;  // may be a rotated copy still being written: not read until it stops
    bool in_lru = false;
    std::list<TailedFile*>::iterator lru;
  };
  // A stream that ended recently, remembered to recognise copies of it.
  struct EndedStream {
    std::string path;
    ReadMark mark;
    std::chrono::steady_clock::time_point when;
  };
  using Identity = std::pair<dev_t, ino_t>;
  struct IdentityHash {
    size_t operator()(const Identity& id) const {
      return std::hash<uint64_t>()(static_cast<uint64_t>(id.first) * 0x9E3779B97F4A7C15ULL ^
                                   static_cast<uint64_t>(id.second));
    }
  };

  // Timers and inotify.
  void ArmPollTimer();
  void ArmRescanTimer();
  void OnEvents(const std::vector<FolderWatcher::Event>& events);
  void OnFolderLost(const std::string& dir);
  // Rechecks every followed file at or below `dir` (a folder that went away or was renamed).
  void RecheckUnder(const std::string& dir);
  void OnPollTick();
  void SchedulePass();

  // Finding files.
  void Rescan(bool initial);
  // Walks `dir` for `glob`: all of it with `full`, else only folders not watched before.
  void WalkFolder(const Glob& glob, const std::string& dir, bool initial, bool full);
  void ScanNewFolder(const std::string& dir);
  bool Wanted(const std::string& path) const;
  bool MayBeFolderLink(const std::string& path) const;
  void WarnAboutRotatedNames() const;
  void Discover(const std::string& path, bool initial);
  // Reads the file's first bytes and those before `offset`, to start reading there.
  void StartAt(TailedFile& file, uint64_t offset);
  bool LooksLikeACopy(const std::string& path) const;
  void CheckSettled();
  void Settle(TailedFile& file);
  // Drains a file renamed away from a followed name before it was ever opened.
  void DrainUnseen(const std::string& path);
  // Follows `fd` (already open, `st` its fstat, counted in the descriptor budget) as a rotated
  // file read to its end from `offset`, resuming `resumed`'s saved stream when the file still
  // holds what it says was read there.
  void StartDraining(int fd, const struct stat& st, const std::string& path, uint64_t offset,
                     const FileMark* resumed);
  // Resolves `path` if it is a link and watches the folders on the way; false if not a link.
  bool TrackLink(const std::string& path);
  void UntrackLink(const std::string& path);
  bool Reliable(const TailedFile& file) const;
  void UpdateReliability(const TailedFile& file);

  // Saved positions (options.resume).
  std::unique_ptr<StreamConsumer> MakeConsumer(const std::string& path, uint64_t offset,
                                               const FileMark* resumed);
  void LocateSavedFiles();
  // Finds where saved file marks_[index] is now when not at its path: its folder's entry with
  // its inode, else a rotated name of it holding its bytes; Claims it. False when nowhere.
  bool FindSaved(const FileMark& mark, size_t index, bool by_inode);
  // Takes `fd` (opened from `name`) as the file of marks_[index] if it is that file (by inode,
  // or by content with `by_inode` false) and holds what was read: kept open in located_.
  // Otherwise closes it and returns false.
  bool Claim(int fd, const std::string& name, size_t index, bool by_inode);
  void DrainLocated();
  // Whether the file open at `fd` (`size` bytes) is empty, or its bytes are the start of a file
  // followed now (its first and last bytes are that file's at the same offsets), or it holds what
  // was read of a followed file: a copy logrotate copytruncate made, or is making, of a file whose
  // truncate has not come yet, or came after the agent opened the file at start.
  bool CopiesAFollowedFile(int fd, uint64_t size) const;
  // Continues `file`'s stream in a copy of it nobody follows, after a copytruncate.
  bool ContinueInCopy(TailedFile& file);

  // Following them.
  void Pass();
  void Service(TailedFile& file, bool recheck);
  bool Reopen(TailedFile& file);
  void Replace(TailedFile& file, bool path_exists);
  bool Locate(TailedFile& file);
  // Reads up to the budget; returns true when bytes remain beyond it.
  bool ReadSome(TailedFile& file);
  // True when the file is no longer the one read so far: shrunk below the offset, or rewritten.
  bool WasRewritten(TailedFile& file);
  void RestartStream(TailedFile& file, const char* why);
  uint64_t CopyOffset(int fd, uint64_t size, const std::string& path);
  void ReadDraining();
  void CheckQuiet(std::chrono::steady_clock::time_point now);
  void CloseIdle(std::chrono::steady_clock::time_point now);
  void Remember(const TailedFile& file);

  // Descriptors and bookkeeping.
  bool ReleaseOne() override;
  void Touch(TailedFile& file);
  void CloseFd(TailedFile& file);
  std::unique_ptr<TailedFile> Unfollow(const std::string& path);
  void End(std::unique_ptr<TailedFile> file);

  asio::io_context& io_;
  const FileTailerOptions options_;
  const StreamConsumerFactory factory_;
  const std::vector<Glob> globs_;
  const ExcludeList exclude_;
  const std::shared_ptr<DescriptorBudget> budget_;

  asio::steady_timer poll_timer_;
  asio::steady_timer rescan_timer_;
  FolderWatcher watcher_;

  std::map<std::string, std::unique_ptr<TailedFile>> files_;  // followed, by path
  std::vector<std::unique_ptr<TailedFile>> draining_;         // rotated away or deleted
  std::unordered_map<Identity, TailedFile*, IdentityHash> by_identity_;
  std::list<TailedFile*> lru_;  // followed files holding a descriptor, most recently used first
  std::unordered_set<TailedFile*> active_;     // had bytes, not yet told OnQuiet
  std::unordered_set<TailedFile*> unflushed_;  // had bytes, not yet told OnPartialTimeout
  std::set<std::string> unreliable_;           // followed paths inotify cannot vouch for
  std::deque<EndedStream> ended_;              // for recognising copies
  // Links followed (or waiting for their target): link path -> the paths it resolves through.
  std::map<std::string, std::vector<std::string>> links_;
  std::multimap<std::string, std::string> link_owners_;  // a path on the way -> link path

  // Work for the next pass, filled by events and ticks.
  std::map<std::string, bool> pending_;         // followed path -> recheck its identity first
  std::set<std::string> candidates_;            // paths that may be new files to follow
  std::set<std::string> new_folders_;           // folders to watch and walk
  std::set<std::string> waiting_for_fd_;        // needed a descriptor the budget could not give
  std::set<std::string> settling_;              // followed paths held back as possible copies
  std::set<std::string> rotated_to_;            // where followed names were renamed to
  std::map<std::string, std::string> renamed_;  // from -> to, seen in this pass's events
  std::unordered_map<uint32_t, std::string> moving_;  // cookie -> from, awaiting its IN_MOVED_TO
  std::vector<bool> rooted_;  // per glob: its root folder is watched and walked
  // Paths reported unreadable or refused, with the reason, until they are read.
  std::map<std::string, std::string> reported_;
  std::set<std::string> aliases_;  // names of files already followed under another
  bool rescan_wanted_ = false;
  bool drain_wanted_ = false;
  bool reliability_stale_ = false;

  std::string read_buffer_;
  size_t held_ = 0;
  size_t announced_ = 0;
  bool pass_scheduled_ = false;
  bool started_ = false;
  bool stopped_ = false;
  uint64_t rotations_ = 0;
  uint64_t truncations_ = 0;
  uint64_t copies_ = 0;
  uint64_t reopens_ = 0;
  uint64_t rescans_ = 0;
  uint64_t bytes_lost_ = 0;
  // Rotations and truncations by followed path; a path that goes away (deleted) is forgotten.
  static constexpr size_t kMaxPathsCounted = 4096;
  struct PathEvents {
    uint64_t rotations = 0;
    uint64_t truncations = 0;
  };
  std::unordered_map<std::string, PathEvents> path_events_;
  void CountPathEvent(const std::string& path, bool rotation);
  // Saved positions: the marks, and the files found for them at Start.
  std::vector<FileMark> marks_;
  // Saved files found at Start, by identity: the descriptor they were checked with (counted in
  // the budget), the name they had then, and their mark.
  struct Located {
    int fd;
    std::string name;
    size_t mark;
  };
  std::unordered_map<Identity, Located, IdentityHash> located_;
  bool history_ = false;
  // Completions still queued when the tailer is destroyed check this instead of touching it.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_FILE_TAILER_H_
