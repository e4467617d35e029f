// LineBatch: framed lines laid end to end in one buffer, each followed by '\n'.
//
// Each line also records where its raw bytes began in its stream (stream_begin), so that a
// checkpoint can name the offset of a line that is still waiting for context.
//
// Framing fills a batch; the matcher scans the whole buffer in one multi-pattern pass (much faster
// than one call per line) and maps each hit back to its line. A batch owns its bytes; views from
// line() are valid until the next Clear() or append. Not thread-safe; one per stream.
#ifndef FAULTLINE_FRAMING_LINE_BATCH_H_
#define FAULTLINE_FRAMING_LINE_BATCH_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace faultline {

class LineBatch {
 public:
  size_t size() const { return line_ends_.size(); }
  bool empty() const { return line_ends_.empty(); }
  // Bytes held, terminators included: what a flush threshold compares against.
  size_t bytes() const { return text_.size(); }
  // Bytes the text buffer has allocated (held, or kept for the next lines).
  size_t capacity_bytes() const { return text_.capacity(); }

  // The whole buffer: every line followed by '\n'.
  std::string_view text() const { return text_; }
  size_t line_begin(size_t i) const { return i == 0 ? 0 : line_ends_[i - 1] + 1; }
  // Offset of the '\n' that ends line i.
  size_t line_end(size_t i) const { return line_ends_[i]; }
  std::string_view line(size_t i) const {
    const size_t begin = line_begin(i);
    return std::string_view(text_).substr(begin, line_ends_[i] - begin);
  }
  // Stream offset of the first raw byte of line i (before ANSI stripping).
  uint64_t stream_begin(size_t i) const { return stream_begins_[i]; }
  // Index of the line holding byte `offset` of text(); `offset` must be < bytes().
  size_t LineAt(size_t offset) const {
    return std::lower_bound(line_ends_.begin(), line_ends_.end(), offset) - line_ends_.begin();
  }

  // Appends one line; `line` must not contain '\n'.
  void Append(std::string_view line, uint64_t stream_begin = 0) {
    text_.append(line);
    EndLine(stream_begin);
  }
  // Appends the leading whole lines of `lines` (each ending in '\n', with no other terminator
  // inside) in one copy, stopping before the first line longer than `max_line_bytes` and before
  // any unterminated rest. Returns the number of bytes taken. The fast path of framing.
  // `stream_offset`: where `lines` begins in its stream.
  size_t AppendLines(std::string_view lines, size_t max_line_bytes, uint64_t stream_offset = 0) {
    const char* const begin = lines.data();
    const char* const end = begin + lines.size();
    const size_t base = text_.size();
    const char* line = begin;
    while (line != end) {
      const void* nl = std::memchr(line, '\n', end - line);
      if (nl == nullptr) break;
      const char* newline = static_cast<const char*>(nl);
      if (static_cast<size_t>(newline - line) > max_line_bytes) break;
      line_ends_.push_back(static_cast<uint32_t>(base + (newline - begin)));
      stream_begins_.push_back(stream_offset + static_cast<uint64_t>(line - begin));
      line = newline + 1;
    }
    text_.append(begin, line - begin);
    return static_cast<size_t>(line - begin);
  }
  // Appends `line` (no '\n' inside) like Append, but a long line is not copied: when `line` has
  // room for the batch's bytes in front of it plus a terminator, those are moved into `line`
  // instead and its buffer becomes the batch's, so a line of max_line_bytes is held once, not
  // twice. `line` is left empty (holding the batch's old buffer) either way.
  void AppendAdopting(std::string& line, uint64_t stream_begin = 0) {
    if (line.size() < kAdoptAtBytes || line.size() < text_.size() ||
        line.capacity() < text_.size() + line.size() + 1) {
      Append(line, stream_begin);
      line.clear();
      return;
    }
    const size_t end = text_.size() + line.size();
    line.insert(0, text_);
    line.push_back('\n');
    text_.swap(line);
    line.clear();
    line_ends_.push_back(static_cast<uint32_t>(end));
    stream_begins_.push_back(stream_begin);
  }
  // Lines shorter than this are copied by AppendAdopting: moving the batch would cost more.
  static constexpr size_t kAdoptAtBytes = 256 * 1024;

  // For framing that writes a line's bytes straight into buffer() and then ends it.
  std::string& buffer() { return text_; }
  void EndLine(uint64_t stream_begin = 0) {
    line_ends_.push_back(static_cast<uint32_t>(text_.size()));
    stream_begins_.push_back(stream_begin);
    text_.push_back('\n');
  }

  // Empties the batch. Its buffers are kept for the next lines, unless one over-long line grew
  // them far past what a batch normally holds: those are returned to the system.
  void Clear() {
    text_.clear();
    if (text_.capacity() > kRetainedBytes) std::string().swap(text_);
    line_ends_.clear();
    stream_begins_.clear();
  }
  // A batch is matched at about 64 KiB (StreamPipeline::kBatchBytes) and may hold one line of the
  // default max_line_bytes (1 MiB) beside it; buffers up to this size are kept across Clear().
  static constexpr size_t kRetainedBytes = 4 << 20;

 private:
  std::string text_;
  std::vector<uint32_t> line_ends_;
  std::vector<uint64_t> stream_begins_;
};

}  // namespace faultline

#endif  // FAULTLINE_FRAMING_LINE_BATCH_H_
