// File identity: how FileTailer (file_tailer.h) recognises a file it read before, notices that
// a file was rewritten under it, and tells a copy of a file (logrotate copytruncate) from a new
// file. The decisions are made here, on descriptors and bytes, so that they can be tested
// without a tailer, inotify or timers.
//
// A file is summed up by a ReadMark: how far it was read, a hash (FNV-1a) of its first bytes (up
// to kHeadBytes) and the bytes just before where reading stopped (up to kTailBytes). The same
// inode holding the same first bytes is the same file; a file whose bytes before the read offset
// changed was rewritten in place; another file whose first bytes hash alike and which holds the
// same bytes at the same offset is a copy.
//
// Free functions and plain values: no ownership (descriptors are the caller's, never closed
// here), no state, callable from any thread on descriptors the caller does not change meanwhile.
// A failed read (a file that shrank, an I/O error) never throws: it answers "not the same".
#ifndef FAULTLINE_SOURCE_FILE_IDENTITY_H_
#define FAULTLINE_SOURCE_FILE_IDENTITY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/source/file_resume.h"

namespace faultline {

// The first bytes that identify a file across a close and reopen, and a copy of it: 1 KiB holds
// the first lines of a log, which usually carry a timestamp or a run id.
inline constexpr size_t kHeadBytes = 1024;
// Enough bytes to tell one log's content from another's with overwhelming likelihood, few enough
// to re-read on every change.
inline constexpr size_t kTailBytes = 64;
inline constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL;

// FNV-1a of `bytes`, continuing from `hash` (kFnvBasis to start).
uint64_t Fnv(uint64_t hash, std::string_view bytes);

// What was read of a file: enough to recognise it again (first bytes) and to notice a rewrite or
// a copy of it (the bytes just before the offset).
struct ReadMark {
  uint64_t offset = 0;
  uint64_t head_hash = kFnvBasis;  // FNV-1a of the first head_len bytes
  size_t head_len = 0;             // min(kHeadBytes, offset)
  std::string tail;                // the last bytes before `offset`
};

// Reads exactly `len` bytes at `offset`; false on a short read (the file shrank) or an error.
bool ReadAt(int fd, uint64_t offset, size_t len, std::string* out);

// The mark of the file open at `fd` read up to `offset`; the mark of nothing read (offset 0)
// when `offset` is 0 or the file no longer holds that many bytes.
ReadMark MarkAt(int fd, uint64_t offset);
// Takes `bytes`, just read at mark.offset, into the mark.
void AddRead(ReadMark& mark, std::string_view bytes);
// Whether the file open at `fd` starts with the bytes `mark` hashed (true when it hashed none).
bool SameHead(int fd, const ReadMark& mark);
// Whether the file open at `fd`, now `size` bytes, is no longer the one `mark` read: shrunk below
// the offset, or (when it `changed` since last looked at) other bytes just before the offset.
bool Rewritten(int fd, uint64_t size, bool changed, const ReadMark& mark);

// A saved mark (file_resume.h) of a stream of `path`, on device `dev` and inode `ino`.
FileMark ToFileMark(const std::string& path, uint64_t dev, uint64_t ino, const ReadMark& mark,
                    uint64_t resume_offset);
// Whether the file open at `fd` still holds what `mark` says was read of it: a regular file of at
// least the bytes read, the same first bytes, and the same bytes just before where reading stopped.
bool Holds(int fd, const FileMark& mark);

// A file that may be a copy of another one read before (app.log.1 beside app.log): its first
// bytes are read once, then compared against the marks of any number of originals.
class CopyCandidate {
 public:
  // `fd` is the candidate open, `size` its size now. Reads its first bytes (up to kHeadBytes).
  CopyCandidate(int fd, uint64_t size);

  // Where the copy of what `original` read ends in this file: its first bytes hash like the
  // original's, and its bytes just before min(its size, original.offset) are the ones read there
  // (taken from `original.tail`, or from `original_fd` when the copy is shorter than what was read
  // and the original is still open; -1 when it is not). Nullopt when it is not such a copy.
  std::optional<uint64_t> CopiedUpTo(const ReadMark& original, int original_fd) const;

 private:
  int fd_;
  uint64_t size_;
  // prefix_[n]: the hash of the first n bytes, n up to the bytes read.
  std::vector<uint64_t> prefix_;
};

// The first bytes (up to kHeadBytes) and the last ones (up to kTailBytes) of a file of `size`.
struct FileEnds {
  uint64_t size = 0;
  std::string head;
  std::string end;
};
// False when the file open at `fd` no longer holds `size` bytes.
bool ReadEnds(int fd, uint64_t size, FileEnds* ends);
// Whether the file open at `original_fd` holds `ends` at the same offsets: the file they were
// read from is, so far, a copy of its start (a copy logrotate copytruncate is making, or made
// before a truncate still to come).
bool StartsWith(int original_fd, const FileEnds& ends);

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_FILE_IDENTITY_H_
