// FileResume: how a FileTailer continues files from saved positions (a checkpoint of the state
// store), without knowing anything of the store or of matching.
//
// FileMark is what the tailer needs to recognise a file again and to know where to go on: its
// device and inode, a hash of its first bytes, how far it was read and the bytes just before that
// point, and where reading must start again (at or before the read offset: the first line not
// fully matched). A file is the saved one only if all of that still holds (same inode, same first
// bytes, at least read_offset bytes, the same bytes before read_offset); then its stream resumes
// at resume_offset. Otherwise it changed while the agent was down and is read from its start.
//
// The agent implements FileResume for each file source: it holds the marks loaded at start, makes
// the consumer of every stream (a resumed one continues the saved stream's lines and counts),
// and forgets marks that no file claims. Called on the tailer's thread only.
#ifndef FAULTLINE_SOURCE_FILE_RESUME_H_
#define FAULTLINE_SOURCE_FILE_RESUME_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/source/stream_consumer.h"

namespace faultline {

struct FileMark {
  std::string path;  // where the file was
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t head_hash = 0;  // FNV-1a of the first head_len bytes
  uint64_t head_len = 0;
  uint64_t read_offset = 0;
  std::string tail;  // the bytes just before read_offset (up to 64)
  uint64_t resume_offset = 0;
};

class FileResume {
 public:
  virtual ~FileResume() = default;
  // The saved marks nothing has claimed yet (a claimed mark belongs to its stream from then on).
  virtual std::vector<FileMark> Unclaimed() const = 0;
  // Whether the source ran before: files present at Start without a mark then appeared while the
  // agent was down and are read whole; start_at applies only on a source's first start.
  virtual bool has_history() const = 0;
  // When the checkpoint the marks come from was written (CLOCK_REALTIME_COARSE, the clock of file
  // times, in ns; 0 without history). A rotated name of a saved file that changed since, holding
  // no mark, was written (and rotated) while the agent was down, and is read whole.
  virtual int64_t checkpoint_time_ns() const = 0;
  // Makes the consumer of a stream of `path` whose first byte is at `offset`. `resumed`, when not
  // null, is the unclaimed mark it continues (offset == resumed->resume_offset), which it claims.
  virtual std::unique_ptr<StreamConsumer> Start(const std::string& path, uint64_t offset,
                                                const FileMark* resumed) = 0;
  // No file holds `mark` any more (it was rewritten, or deleted while the agent was down).
  virtual void Forget(const FileMark& mark) = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_FILE_RESUME_H_
