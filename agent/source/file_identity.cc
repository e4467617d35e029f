// File identity decisions (file_identity.h): the reads and comparisons behind "the same file",
// "rewritten" and "a copy of it".
#include "agent/source/file_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace faultline {
namespace {

constexpr uint64_t kFnvPrime = 0x100000001b3ULL;

void RememberTail(std::string& tail, std::string_view bytes) {
  if (bytes.size() >= kTailBytes) {
    tail.assign(bytes.substr(bytes.size() - kTailBytes));
    return;
  }
  tail.append(bytes);
  if (tail.size() > kTailBytes) tail.erase(0, tail.size() - kTailBytes);
}

}  // namespace

uint64_t Fnv(uint64_t hash, std::string_view bytes) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

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

ReadMark MarkAt(int fd, uint64_t offset) {
  ReadMark mark;
  const size_t head_len = static_cast<size_t>(std::min<uint64_t>(kHeadBytes, offset));
  std::string head;
  const size_t tail_len = static_cast<size_t>(std::min<uint64_t>(kTailBytes, offset));
  if (offset == 0 || !ReadAt(fd, 0, head_len, &head) ||
      !ReadAt(fd, offset - tail_len, tail_len, &mark.tail)) {
    return ReadMark{};  // empty, or shrank meanwhile: from the beginning
  }
  mark.offset = offset;
  mark.head_len = head_len;
  mark.head_hash = Fnv(mark.head_hash, head);
  return mark;
}

void AddRead(ReadMark& mark, std::string_view bytes) {
  if (mark.head_len < kHeadBytes) {  // still inside the first bytes: head_len == offset
    const size_t add = std::min(bytes.size(), kHeadBytes - mark.head_len);
    mark.head_hash = Fnv(mark.head_hash, bytes.substr(0, add));
    mark.head_len += add;
  }
  mark.offset += bytes.size();
  RememberTail(mark.tail, bytes);
}

bool SameHead(int fd, const ReadMark& mark) {
  if (mark.head_len == 0) return true;
  std::string head;
  return ReadAt(fd, 0, mark.head_len, &head) && Fnv(kFnvBasis, head) == mark.head_hash;
}

bool Rewritten(int fd, uint64_t size, bool changed, const ReadMark& mark) {
  if (size < mark.offset) return true;
  if (!changed || mark.tail.empty()) return false;
  std::string now;
  return ReadAt(fd, mark.offset - mark.tail.size(), mark.tail.size(), &now) && now != mark.tail;
}

FileMark ToFileMark(const std::string& path, uint64_t dev, uint64_t ino, const ReadMark& mark,
                    uint64_t resume_offset) {
  return FileMark{path,          dev,         ino,       mark.head_hash,
                  mark.head_len, mark.offset, mark.tail, resume_offset};
}

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

CopyCandidate::CopyCandidate(int fd, uint64_t size) : fd_(fd), size_(size) {
  if (size == 0) return;
  std::string head;
  const size_t head_len = static_cast<size_t>(std::min<uint64_t>(kHeadBytes, size));
  if (!ReadAt(fd, 0, head_len, &head)) return;
  prefix_.resize(head_len + 1);
  prefix_[0] = kFnvBasis;
  for (size_t i = 0; i < head_len; ++i) prefix_[i + 1] = Fnv(prefix_[i], head.substr(i, 1));
}

std::optional<uint64_t> CopyCandidate::CopiedUpTo(const ReadMark& original, int original_fd) const {
  if (original.head_len == 0 || original.head_len >= prefix_.size() ||
      prefix_[original.head_len] != original.head_hash) {
    return std::nullopt;
  }
  const uint64_t at = std::min(size_, original.offset);
  const size_t n = static_cast<size_t>(std::min<uint64_t>(kTailBytes, at));
  std::string mine;
  std::string theirs;
  if (!ReadAt(fd_, at - n, n, &mine)) return std::nullopt;
  if (at == original.offset) {
    theirs = original.tail;
  } else if (original_fd < 0 || !ReadAt(original_fd, at - n, n, &theirs)) {
    return std::nullopt;
  }
  if (mine != theirs) return std::nullopt;
  return at;
}

bool ReadEnds(int fd, uint64_t size, FileEnds* ends) {
  ends->size = size;
  const size_t head_len = static_cast<size_t>(std::min<uint64_t>(kHeadBytes, size));
  const size_t end_len = static_cast<size_t>(std::min<uint64_t>(kTailBytes, size));
  return ReadAt(fd, 0, head_len, &ends->head) && ReadAt(fd, size - end_len, end_len, &ends->end);
}

bool StartsWith(int original_fd, const FileEnds& ends) {
  struct stat st {};
  std::string bytes;
  return original_fd >= 0 && fstat(original_fd, &st) == 0 &&
         static_cast<uint64_t>(st.st_size) >= ends.size &&
         ReadAt(original_fd, 0, ends.head.size(), &bytes) && bytes == ends.head &&
         ReadAt(original_fd, ends.size - ends.end.size(), ends.end.size(), &bytes) &&
         bytes == ends.end;
}

}  // namespace faultline
