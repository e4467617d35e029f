#include "agent/framing/line_framer.h"

#include <algorithm>
#include <cstring>

#include "agent/framing/ansi.h"

namespace faultline {
namespace {

// First "\n" or "\r" in [p, end), or end.
const char* FindTerminator(const char* p, const char* end) {
  const void* nl = std::memchr(p, '\n', end - p);
  const char* limit = nl ? static_cast<const char*>(nl) : end;
  const void* cr = std::memchr(p, '\r', limit - p);
  return cr ? static_cast<const char*>(cr) : limit;
}

}  // namespace

LineFramer::LineFramer(size_t max_line_bytes)
    : max_line_bytes_(std::max<size_t>(max_line_bytes, 1)) {}

void LineFramer::EmitLine(std::string_view raw, LineBatch& batch) {
  if (std::memchr(raw.data(), kEscape, raw.size()) == nullptr) {
    batch.Append(raw);
  } else {
    AppendWithoutAnsi(raw, batch.buffer());
    batch.EndLine();
  }
}

// Adds bytes of an unterminated line, cutting the line once it reaches max_line_bytes_.
void LineFramer::AppendPartial(std::string_view bytes, LineBatch& batch) {
  if (skipping_) return;
  const size_t room = max_line_bytes_ - partial_.size();
  if (bytes.size() <= room) {
    partial_.append(bytes);
    return;
  }
  partial_.append(bytes.substr(0, room));
  EmitLine(partial_, batch);
  partial_.clear();
  skipping_ = true;
  ++truncated_lines_;
}

// Most logs are plain "\n"-terminated lines: take every such line up to the first byte that needs
// care ("\r", ESC, an over-long line, an unterminated rest) with one copy and one memchr per line.
const char* LineFramer::FeedPlainLines(const char* p, const char* end, LineBatch& batch) {
  const void* cr = std::memchr(p, '\r', end - p);
  const char* limit = cr ? static_cast<const char*>(cr) : end;
  const void* esc = std::memchr(p, kEscape, limit - p);
  if (esc != nullptr) limit = static_cast<const char*>(esc);
  return p + batch.AppendLines(std::string_view(p, limit - p), max_line_bytes_);
}

void LineFramer::Feed(std::string_view bytes, LineBatch& batch) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  if (p != end && after_cr_ && *p == '\n') ++p;  // the "\n" of a "\r\n" split across reads
  after_cr_ = false;
  while (p != end) {
    if (partial_.empty() && !skipping_) {
      p = FeedPlainLines(p, end, batch);
      if (p == end) return;
    }
    const char* term = FindTerminator(p, end);
    if (term == end) {
      AppendPartial(std::string_view(p, end - p), batch);
      return;
    }
    const std::string_view piece(p, term - p);
    if (skipping_) {
      skipping_ = false;  // the cut line ends here; its first part was emitted already
    } else if (partial_.empty()) {
      if (piece.size() > max_line_bytes_) {
        EmitLine(piece.substr(0, max_line_bytes_), batch);
        ++truncated_lines_;
      } else {
        EmitLine(piece, batch);
      }
    } else {
      AppendPartial(piece, batch);
      if (skipping_) {
        skipping_ = false;
      } else {
        EmitLine(partial_, batch);
        partial_.clear();
      }
    }
    p = term + 1;
    if (*term == '\r') {
      if (p == end) {
        after_cr_ = true;
      } else if (*p == '\n') {
        ++p;
      }
    }
  }
}

void LineFramer::Finish(LineBatch& batch) {
  if (!partial_.empty()) EmitLine(partial_, batch);
  partial_.clear();
  skipping_ = false;
  after_cr_ = false;
}

}  // namespace faultline
