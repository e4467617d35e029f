// FileTailer: follows the files matched by a file source's paths and globs, and hands each file's
// new bytes, in order, to a consumer of its own.
//
// Waking: inotify on the folders the globs can match wakes a read as soon as a file changes; a
// poll timer (poll_interval) is the fallback for file systems where inotify says nothing (NFS,
// some overlays, exhausted watch limits) and re-expands the globs.
//
// What happens to a file (the one place this is defined):
// - Present at Start: read from its end (start_at: end) or its beginning (start_at: beginning).
//   Found later: read from the beginning, since everything in it is new.
// - Appended: the new bytes go to its consumer.
// - Truncated or rewritten in place (copytruncate): noticed when the size drops below the read
//   offset, or when the file changed and the bytes just before the offset are no longer the ones
//   read there (a truncate followed by writes that regrow it past the old offset). The consumer's
//   stream ends (OnEnd) and a new stream of the same path starts at offset 0.
// - Rotated by rename (the path now names another inode): the old file keeps being read through
//   its open descriptor until it has been quiet for rotate_wait (a writer may not reopen at once),
//   then its stream ends; the new file at the path is read from the beginning as a new stream.
// - Files are identified by device and inode, not by path: a rotated file renamed to a name the
//   globs also match keeps its stream and offset, and is never read twice.
// - Deleted: read to its end through the open descriptor, then its stream ends.
// - Unreadable (permissions, vanished between glob and open): reported once, retried each poll.
// A stream that has had no new bytes for quiet_after gets OnQuiet once (to settle pending
// context). A read never takes more than read_budget bytes from one file before others get a
// turn, so one huge file cannot starve the loop.
//
// Runs on the caller's io_context (one thread, no locks); consumers are called on it and must not
// throw. The io_context must outlive the tailer. Nothing here throws after construction.
#ifndef FAULTLINE_SOURCE_FILE_TAILER_H_
#define FAULTLINE_SOURCE_FILE_TAILER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/asio.h"

namespace faultline {

// One file's bytes, as the tailer delivers them.
class FileStreamConsumer {
 public:
  virtual ~FileStreamConsumer() = default;
  virtual void OnBytes(std::string_view bytes) = 0;
  virtual void OnQuiet() = 0;  // nothing new for quiet_after
  virtual void OnEnd() = 0;    // no more bytes will come to this stream
};

using FileConsumerFactory =
    std::function<std::unique_ptr<FileStreamConsumer>(const std::string& path)>;

struct FileTailerOptions {
  std::vector<std::string> patterns;  // paths or globs
  bool start_at_end = true;           // for files present at Start
  std::chrono::milliseconds poll_interval{1000};
  std::chrono::milliseconds quiet_after{2000};
  std::chrono::milliseconds rotate_wait{60000};
  size_t read_budget = 4 << 20;
};

class FileTailer {
 public:
  FileTailer(asio::io_context& io, FileTailerOptions options, FileConsumerFactory factory);
  ~FileTailer();
  FileTailer(const FileTailer&) = delete;
  FileTailer& operator=(const FileTailer&) = delete;

  // Finds the files, sets up inotify and the poll timer. inotify failing is logged, not fatal.
  void Start();
  // Ends every stream (OnEnd), cancels the timer and inotify, and closes every file.
  void Stop();

  size_t open_files() const { return files_.size() + draining_.size(); }
  uint64_t rotations() const { return rotations_; }
  uint64_t truncations() const { return truncations_; }

 private:
  struct TailedFile {
    std::string path;
    int fd = -1;
    dev_t dev = 0;
    ino_t ino = 0;
    uint64_t offset = 0;
    std::string tail;  // the last bytes before `offset`, to recognise a rewritten file
    off_t last_size = -1;
    struct timespec last_mtime {};
    std::unique_ptr<FileStreamConsumer> consumer;
    std::chrono::steady_clock::time_point last_data;
    bool quiet_reported = false;
  };

  // Reads every followed file; with `rescan`, first expands the globs again for new files.
  void Poll(bool initial, bool rescan = true);
  void SchedulePoll(bool rescan);
  void ForgetWatch(int wd);
  void ArmTimer();
  void ArmInotify();
  void UpdateWatches();
  std::unique_ptr<TailedFile> Open(const std::string& path, bool from_end);
  // Reads up to the budget; returns true when bytes remain beyond it.
  bool ReadSome(TailedFile& file);
  // True when the file is no longer the one read so far: shrunk below the offset, or rewritten.
  bool WasRewritten(TailedFile& file);
  static void RememberTail(TailedFile& file, std::string_view bytes);
  void CheckQuiet(TailedFile& file, std::chrono::steady_clock::time_point now);
  void End(TailedFile& file);

  asio::io_context& io_;
  const FileTailerOptions options_;
  const FileConsumerFactory factory_;

  asio::steady_timer timer_;
  std::unique_ptr<asio::posix::stream_descriptor> inotify_;
  std::vector<char> inotify_buffer_;
  std::map<std::string, int> watches_;  // folder -> inotify watch descriptor
  std::map<std::string, std::unique_ptr<TailedFile>> files_;  // by path
  std::vector<std::unique_ptr<TailedFile>> draining_;         // rotated away or deleted
  std::set<std::string> unreadable_;  // paths already reported as unreadable
  std::string read_buffer_;
  bool poll_scheduled_ = false;
  bool rescan_scheduled_ = false;
  bool stopped_ = false;
  uint64_t rotations_ = 0;
  uint64_t truncations_ = 0;
  // Completions still queued when the tailer is destroyed check this instead of touching it.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_FILE_TAILER_H_
