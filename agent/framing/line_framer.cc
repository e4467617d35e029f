#include "agent/framing/line_framer.h"

#include <algorithm>
#include <cstring>

#include "agent/framing/ansi.h"
#include "agent/framing/cri_record.h"

namespace faultline {
namespace {

// Room reserved in front of a long line for the lines already in the batch when it ends, so the
// batch can move in front of it instead of copying the line (LineBatch::AppendAdopting).
// StreamPipeline matches a batch once it reaches 64 KiB, so it holds less than that.
constexpr size_t kAdoptRoomBytes = 256 * 1024;

// How many bytes of a Docker record are decoded at a time (the decoded copy is no longer).
constexpr size_t kDockerDecodeBytes = 64 * 1024;

}  // namespace

// Where the next "\n", "\r" and ESC are in one Feed call's bytes. Each is searched again only
// once the read position has passed it, so a log with a "\r" or a colour code on every line costs
// one pass over the bytes, not one pass per line.
class LineFramer::NextBytes {
 public:
  explicit NextBytes(const char* end) : end_(end) {}
  const char* Newline(const char* p) { return Find(newline_, '\n', p); }
  const char* CarriageReturn(const char* p) { return Find(carriage_return_, '\r', p); }
  const char* Escape(const char* p) { return Find(escape_, kEscape, p); }

 private:
  const char* Find(const char*& cached, char c, const char* p) {
    if (cached == nullptr || cached < p) {
      const void* found = std::memchr(p, c, end_ - p);
      cached = found != nullptr ? static_cast<const char*>(found) : end_;
    }
    return cached;
  }

  const char* const end_;
  const char* newline_ = nullptr;
  const char* carriage_return_ = nullptr;
  const char* escape_ = nullptr;
};

LineFramer::LineFramer(size_t max_line_bytes, LineFormat format)
    : max_line_bytes_(std::max<size_t>(max_line_bytes, 1)), format_(format) {}

FramerPosition LineFramer::resume_point() const {
  if (format_ != LineFormat::kCri && format_ != LineFormat::kDocker) {
    return FramerPosition{skipping_ ? fed_ : line_start_, skipping_, after_cr_};
  }
  // A message is read again from its first record; a cut one is skipped from the record being
  // read (or the next), whose tag says whether the message ends there.
  const bool in_record = !cri_head_.empty() || in_record_;
  if (skipping_) return FramerPosition{in_record ? record_start_ : fed_, true, false};
  if (message_continues_) return FramerPosition{line_start_, false, false};
  return FramerPosition{in_record ? record_start_ : fed_, false, false};
}

void LineFramer::EmitLine(std::string_view raw, LineBatch& batch) {
  if (std::memchr(raw.data(), kEscape, raw.size()) == nullptr) {
    batch.Append(raw, line_start_);
  } else {
    AppendWithoutAnsi(raw, batch.buffer());
    batch.EndLine(line_start_);
  }
}

// Emits partial_ as a line and empties it. A long one is handed to the batch buffer and all
// (escape sequences removed where they are) rather than copied, so it is held once.
void LineFramer::EmitPartial(LineBatch& batch) {
  if (partial_.size() < LineBatch::kAdoptAtBytes) {
    EmitLine(partial_, batch);
    partial_.clear();
    return;
  }
  if (std::memchr(partial_.data(), kEscape, partial_.size()) != nullptr) {
    StripAnsiInPlace(partial_);
  }
  batch.AppendAdopting(partial_, line_start_);
  // Not adopted (the batch was too full): the long line's buffer is not kept for the next one.
  if (partial_.capacity() > LineBatch::kRetainedBytes) std::string().swap(partial_);
}

// Adds bytes of an unterminated line, cutting the line once it reaches max_line_bytes_.
void LineFramer::AppendPartial(std::string_view bytes, LineBatch& batch) {
  if (skipping_) return;
  const size_t room = max_line_bytes_ - partial_.size();
  const size_t taken = std::min(bytes.size(), room);
  if (partial_.size() + taken > partial_.capacity() &&
      partial_.size() + taken >= LineBatch::kAdoptAtBytes) {
    // A long line: reserve once for the longest allowed, with room in front for the batch that
    // EmitPartial moves there. Growing by doubling would hold the old and the new buffer at
    // once (1.5x the line); reserved pages cost memory only once they are written.
    partial_.reserve(max_line_bytes_ + kAdoptRoomBytes);
  }
  partial_.append(bytes.substr(0, taken));
  if (bytes.size() <= room) return;
  EmitPartial(batch);
  skipping_ = true;
  ++truncated_lines_;
}

// Most logs are plain "\n"-terminated lines: take every such line up to the first byte that needs
// care ("\r", ESC, an over-long line, an unterminated rest) with one copy and one memchr per line.
const char* LineFramer::FeedPlainLines(const char* p, uint64_t at, NextBytes& next,
                                       LineBatch& batch) {
  const char* limit = std::min(next.CarriageReturn(p), next.Escape(p));
  return p + batch.AppendLines(std::string_view(p, limit - p), max_line_bytes_, at);
}

void LineFramer::Feed(std::string_view bytes, LineBatch& batch) {
  // An empty read (a poll that found nothing new) must not forget a "\r" that ended the last one.
  if (bytes.empty()) return;
  if (format_ != LineFormat::kAuto) {
    FeedDecided(bytes, batch);
    return;
  }
  if (!Decide(bytes, false)) return;
  const std::string held = std::move(undecided_);
  undecided_.clear();
  FeedDecided(held, batch);
}

bool LineFramer::Decide(std::string_view bytes, bool at_end) {
  undecided_.append(bytes);
  // The first terminator decides: a CRI record ends only at "\n", but its prefix has no "\r", so
  // a "\r" before the prefix is whole means plain (a progress bar's first redraw is not held).
  const size_t terminator = undecided_.find_first_of("\n\r");
  // A resumed plain stream that stopped after a "\r" is not a CRI one.
  if (terminator == std::string::npos && undecided_.size() < kMaxCriPrefixBytes && !at_end &&
      !after_cr_) {
    return false;
  }
  const std::string_view first(undecided_.data(), std::min(terminator, undecided_.size()));
  if (after_cr_) {
    format_ = LineFormat::kPlain;
  } else if (ParseCriPrefix(first).valid) {
    format_ = LineFormat::kCri;
  } else if (first.starts_with(kDockerJsonPrefix)) {
    format_ = LineFormat::kDocker;
  } else {
    format_ = LineFormat::kPlain;
  }
  return true;
}

void LineFramer::FeedDecided(std::string_view bytes, LineBatch& batch) {
  if (format_ == LineFormat::kCri) {
    FeedCri(bytes, batch);
  } else if (format_ == LineFormat::kDocker) {
    FeedDocker(bytes, batch);
  } else {
    FeedPlain(bytes, batch);
  }
}

void LineFramer::FeedPlain(std::string_view bytes, LineBatch& batch) {
  if (bytes.empty()) return;
  const char* const data = bytes.data();
  const char* p = data;
  const char* const end = p + bytes.size();
  const uint64_t base = fed_;
  fed_ += bytes.size();
  const auto at = [base, data](const char* q) { return base + static_cast<uint64_t>(q - data); };
  if (after_cr_ && *p == '\n') line_start_ = at(++p);  // the "\n" of a "\r\n" split across reads
  after_cr_ = false;
  NextBytes next(end);
  while (p != end) {
    if (partial_.empty() && !skipping_) {
      p = FeedPlainLines(p, at(p), next, batch);
      line_start_ = at(p);
      if (p == end) return;
    }
    const char* term = std::min(next.Newline(p), next.CarriageReturn(p));
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
        EmitPartial(batch);
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
    line_start_ = at(p);
  }
}

// CRI records: every record is one "\n"-terminated line of the file. Its first bytes are held
// in cri_head_ until the prefix can be read (kMaxCriPrefixBytes, or the record's end); its message
// bytes then go to partial_ like the bytes of a plain line, and the record's end ends the line
// unless the record was a P one. A record that is whole in one Feed and ends its message is
// emitted from the bytes fed, without a copy through partial_.
void LineFramer::FeedCri(std::string_view bytes, LineBatch& batch) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  const uint64_t base = fed_;
  fed_ += bytes.size();
  const auto at = [base, data = bytes.data()](const char* q) {
    return base + static_cast<uint64_t>(q - data);
  };
  while (p != end) {
    const void* found = std::memchr(p, '\n', end - p);
    const char* const newline = found != nullptr ? static_cast<const char*>(found) : end;
    if (in_record_) {
      AppendRecordMessage(std::string_view(p, newline - p), batch);
    } else if (cri_head_.empty() && newline != end) {
      record_start_ = at(p);
      const std::string_view message = BeginCriRecord(std::string_view(p, newline - p));
      if (!record_partial_ && !message_continues_ && !skipping_ &&
          message.size() <= max_line_bytes_) {
        EmitLine(message, batch);
        in_record_ = false;
        p = newline + 1;
        continue;
      }
      AppendRecordMessage(message, batch);
    } else {
      if (cri_head_.empty()) record_start_ = at(p);
      const size_t room = kMaxCriPrefixBytes - cri_head_.size();
      const size_t taken = std::min<size_t>(room, newline - p);
      cri_head_.append(p, taken);
      p += taken;
      const bool record_ended = p == newline && newline != end;
      if (!record_ended && cri_head_.size() < kMaxCriPrefixBytes) continue;  // p == end
      const std::string head = std::move(cri_head_);
      cri_head_.clear();
      AppendRecordMessage(BeginCriRecord(head), batch);
      if (!record_ended) continue;  // the record's message goes on
    }
    if (newline == end) return;
    EndRecord(batch);
    p = newline + 1;
  }
}

// Docker json-file records: each "\n"-terminated line of the file is decoded as its bytes arrive
// (docker_json_record.h); the decoded message bytes go to partial_, and the record's end says
// whether the message ended there.
void LineFramer::FeedDocker(std::string_view bytes, LineBatch& batch) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  const uint64_t base = fed_;
  fed_ += bytes.size();
  while (p != end) {
    const void* found = std::memchr(p, '\n', end - p);
    const char* const newline = found != nullptr ? static_cast<const char*>(found) : end;
    if (!in_record_) {
      in_record_ = true;
      record_start_ = base + static_cast<uint64_t>(p - bytes.data());
      if (!message_continues_ && !skipping_) line_start_ = record_start_;
      docker_record_.Begin();
    }
    // In pieces, so that a huge record is never held decoded beyond max_line_bytes.
    for (const char* piece = p; piece != newline;) {
      const size_t n = std::min<size_t>(kDockerDecodeBytes, newline - piece);
      decoded_.clear();
      docker_record_.Feed(std::string_view(piece, n), decoded_);
      AppendRecordMessage(decoded_, batch);
      piece += n;
    }
    if (newline == end) return;
    decoded_.clear();
    record_partial_ = !docker_record_.End(decoded_);
    AppendRecordMessage(decoded_, batch);
    EndRecord(batch);
    p = newline + 1;
  }
}

std::string_view LineFramer::BeginCriRecord(std::string_view head) {
  const CriPrefix prefix = ParseCriPrefix(head);
  record_partial_ = prefix.partial;
  in_record_ = true;
  if (!message_continues_ && !skipping_) line_start_ = record_start_;
  return head.substr(prefix.content_offset);
}

void LineFramer::AppendRecordMessage(std::string_view bytes, LineBatch& batch) {
  if (!bytes.empty()) AppendPartial(bytes, batch);
}

void LineFramer::EndRecord(LineBatch& batch) {
  in_record_ = false;
  message_continues_ = record_partial_;
  if (message_continues_) return;
  if (skipping_) {
    skipping_ = false;  // the cut message ends here; its first part was emitted already
  } else {
    EmitPartial(batch);
  }
}

void LineFramer::TakeCriHead(LineBatch& batch) {
  if (cri_head_.empty()) return;
  const std::string head = std::move(cri_head_);
  cri_head_.clear();
  AppendRecordMessage(BeginCriRecord(head), batch);
}

void LineFramer::FlushPartial(LineBatch& batch) {
  if (format_ == LineFormat::kAuto && !undecided_.empty()) {
    Decide("", true);
    const std::string held = std::move(undecided_);
    undecided_.clear();
    FeedDecided(held, batch);
  }
  if (skipping_) return;
  if (format_ == LineFormat::kCri || format_ == LineFormat::kDocker) {
    if (format_ == LineFormat::kCri) {
      TakeCriHead(batch);
    } else if (in_record_) {
      decoded_.clear();
      docker_record_.TakeHeld(decoded_);
      AppendRecordMessage(decoded_, batch);
    }
    if (skipping_ || !InRecordMessage()) return;
  } else if (partial_.empty()) {
    return;
  }
  EmitPartial(batch);
  skipping_ = true;
}

void LineFramer::Finish(LineBatch& batch) {
  if (format_ == LineFormat::kAuto && !undecided_.empty()) {
    Decide("", true);
    const std::string held = std::move(undecided_);
    undecided_.clear();
    FeedDecided(held, batch);
  }
  if (format_ == LineFormat::kCri || format_ == LineFormat::kDocker) {
    if (format_ == LineFormat::kCri) {
      TakeCriHead(batch);
    } else if (in_record_) {
      decoded_.clear();
      docker_record_.End(decoded_);
      AppendRecordMessage(decoded_, batch);
    }
    if (!skipping_ && InRecordMessage()) EmitPartial(batch);
    in_record_ = record_partial_ = message_continues_ = false;
  } else if (!partial_.empty()) {
    EmitPartial(batch);
  }
  skipping_ = false;
  after_cr_ = false;
  line_start_ = fed_;
}

void LineFramer::Resume(const FramerPosition& position) {
  partial_.clear();
  undecided_.clear();
  cri_head_.clear();
  in_record_ = record_partial_ = message_continues_ = false;
  fed_ = line_start_ = record_start_ = position.offset;
  skipping_ = position.in_cut_line;
  after_cr_ = position.after_cr;
}

}  // namespace faultline
