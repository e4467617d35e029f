// LineFramer: turns the bytes of one stream into lines.
//
// - A line ends at "\n", "\r\n" or a bare "\r". tqdm and other progress bars redraw one terminal
//   line with "\r"; each redraw is a line of its own, so a failure printed after a bar without a
//   newline is still seen on its own line.
// - ANSI escape sequences are removed (ansi.h).
// - A line longer than max_line_bytes is cut at that size and emitted, the rest of it is skipped
//   up to the next terminator, and truncated_lines() counts it. Memory stays bounded by
//   max_line_bytes however long a line is, and a long line is held once: its buffer is reserved
//   once (not grown by doubling) and handed to the batch when it ends, not copied.
// - Bytes are passed through as they are: invalid UTF-8 is matched as bytes and sanitised only at
//   the edges (utf8.h).
// - In the CRI and Docker formats (framing_options.h) a line is a record of the container runtime:
//   its prefix is removed (CRI) or its message unescaped (Docker's JSON), a message split into
//   several records is joined into one line (cut at max_line_bytes like any line), and only "\n"
//   ends a record, so a "\r" a program printed stays inside its line. A line's stream offset is
//   where the first record of its message begins. In the auto format the stream's first line
//   decides between the three (held until it has a "\n", a "\r" or kMaxCriPrefixBytes bytes).
// Bytes after the last terminator are kept until more arrive or Finish() flushes them as a line.
// The framer counts the stream's bytes, so every line it emits knows where it began, and
// resume_point() says where a reader that restarts must begin so that no line is read twice or
// from its middle; Resume() starts a framer there.
// Never throws. Not thread-safe; one framer per stream.
#ifndef FAULTLINE_FRAMING_LINE_FRAMER_H_
#define FAULTLINE_FRAMING_LINE_FRAMER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/framing/docker_json_record.h"
#include "agent/framing/framing_options.h"
#include "agent/framing/line_batch.h"

namespace faultline {

// Where framing of a stream can start again: the offset of the first byte not yet emitted as part
// of a line, and the framer's mode there.
struct FramerPosition {
  uint64_t offset = 0;
  // Inside a line cut at max_line_bytes: skip to its terminator (CRI: to the end of the record
  // that ends its message; the offset is then a record's start).
  bool in_cut_line = false;
  bool after_cr = false;     // the byte before `offset` was a '\r' that ended a line
  bool operator==(const FramerPosition&) const = default;
};

class LineFramer {
 public:
  explicit LineFramer(size_t max_line_bytes = kDefaultMaxLineBytes,
                      LineFormat format = LineFormat::kPlain);
  explicit LineFramer(const FramingOptions& options)
      : LineFramer(options.max_line_bytes, options.format) {}

  // Appends the lines completed by `bytes` to `batch`.
  void Feed(std::string_view bytes, LineBatch& batch);
  // End of stream: a pending partial line becomes a line.
  void Finish(LineBatch& batch);
  // The stream went quiet in the middle of a line (partial_flush_ms): the bytes so far become a
  // line now, and the rest of that line, when it comes, is skipped up to its terminator, so the
  // line is matched once, not twice. resume_point() then says "inside a line already taken".
  void FlushPartial(LineBatch& batch);
  // Continues a stream at `position` (from an earlier framer's resume_point()); the next Feed
  // starts with the byte at position.offset.
  void Resume(const FramerPosition& position);

  FramerPosition resume_point() const;
  uint64_t bytes_fed() const { return fed_ + undecided_.size(); }
  // A line is open and not yet matched (a line being skipped is not).
  bool has_partial() const {
    return !partial_.empty() || !undecided_.empty() || (!skipping_ && InRecordMessage());
  }
  uint64_t truncated_lines() const { return truncated_lines_; }
  // kAuto until the first line has decided.
  LineFormat format() const { return format_; }

 private:
  class NextBytes;
  // Auto format: holds `bytes` until the first line decides; true once it has (undecided_ then
  // holds every byte fed so far, to be framed in the format decided).
  bool Decide(std::string_view bytes, bool at_end);
  void FeedDecided(std::string_view bytes, LineBatch& batch);
  void FeedPlain(std::string_view bytes, LineBatch& batch);
  void FeedCri(std::string_view bytes, LineBatch& batch);
  void FeedDocker(std::string_view bytes, LineBatch& batch);
  // CRI: the record starting at record_start_ has `head` as its first bytes (all of them when the
  // record has ended); takes its prefix and returns the message bytes in `head`.
  std::string_view BeginCriRecord(std::string_view head);
  void AppendRecordMessage(std::string_view bytes, LineBatch& batch);
  void EndRecord(LineBatch& batch);
  // CRI: a record's head is held; it is taken as it is (the stream went quiet or ended).
  void TakeCriHead(LineBatch& batch);
  bool InRecordMessage() const { return !cri_head_.empty() || in_record_ || message_continues_; }
  const char* FeedPlainLines(const char* p, uint64_t at, NextBytes& next, LineBatch& batch);
  void EmitLine(std::string_view raw, LineBatch& batch);
  void EmitPartial(LineBatch& batch);
  void AppendPartial(std::string_view bytes, LineBatch& batch);

  const size_t max_line_bytes_;
  LineFormat format_;
  std::string undecided_;  // auto format: the bytes fed before the first line decided

  std::string partial_;        // raw bytes of the line being assembled
  bool skipping_ = false;      // inside the rest of a cut line
  bool after_cr_ = false;      // the last byte was "\r": a "\n" right after it ends nothing
  uint64_t truncated_lines_ = 0;
  uint64_t fed_ = 0;         // stream offset of the next byte to be fed
  uint64_t line_start_ = 0;  // stream offset where the line being assembled began

  // Container runtime records, CRI or Docker (partial_ holds the message being joined).
  bool in_record_ = false;          // inside a record (CRI: its prefix is read)
  bool record_partial_ = false;     // the record's message goes on in the next record
  bool message_continues_ = false;  // the last record ended inside its message
  uint64_t record_start_ = 0;
  std::string cri_head_;  // CRI: the first bytes of a record, until its prefix can be read
  DockerJsonRecord docker_record_;  // Docker: the record being decoded
  std::string decoded_;             // Docker: the message bytes of one piece, decoded
};

}  // namespace faultline

#endif  // FAULTLINE_FRAMING_LINE_FRAMER_H_
