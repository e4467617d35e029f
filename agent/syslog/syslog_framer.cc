#include "agent/syslog/syslog_framer.h"

#include <algorithm>

#include "agent/core/ascii.h"

namespace faultline {
namespace {

// A buffer that held one long message is given back rather than kept for every later one.
constexpr size_t kRetainedBytes = 64 * 1024;

// A message's own line end is not part of it: octet-counted senders often count a trailing LF,
// and LF-framed ones may end lines with CRLF.
std::string_view WithoutLineEnd(std::string_view message) {
  if (!message.empty() && message.back() == '\n') message.remove_suffix(1);
  if (!message.empty() && message.back() == '\r') message.remove_suffix(1);
  return message;
}

}  // namespace

SyslogFramer::SyslogFramer(size_t max_message_bytes)
    : max_message_bytes_(std::max<size_t>(1, max_message_bytes)) {}

void SyslogFramer::Keep(std::string_view bytes) {
  const size_t room = max_message_bytes_ - std::min(max_message_bytes_, message_.size());
  if (bytes.size() > room) {
    bytes = bytes.substr(0, room);
    if (!cut_) ++truncated_;
    cut_ = true;
  }
  message_.append(bytes);
}

void SyslogFramer::Emit(Sink& sink) {
  // A line's CR before its LF never reached message_ (kLine holds it back).
  sink.OnMessage(state_ == State::kLine ? std::string_view(message_) : WithoutLineEnd(message_));
  message_.clear();
  if (message_.capacity() > kRetainedBytes) std::string().swap(message_);
  cut_ = false;
}

void SyslogFramer::Feed(std::string_view bytes, Sink& sink) {
  while (!bytes.empty()) {
    switch (state_) {
      case State::kFrameStart: {
        const char c = bytes.front();
        if (c == '\n' || c == '\r') {  // blank lines between frames carry nothing
          bytes.remove_prefix(1);
        } else if (c >= '1' && c <= '9') {
          state_ = State::kCount;
          remaining_ = 0;
          count_digits_ = 0;
        } else {
          state_ = State::kLine;
        }
        break;
      }
      case State::kCount: {
        while (!bytes.empty() && IsAsciiDigit(bytes.front()) && count_digits_ < kMaxCountDigits) {
          remaining_ = remaining_ * 10 + static_cast<uint64_t>(bytes.front() - '0');
          message_.push_back(bytes.front());
          ++count_digits_;
          bytes.remove_prefix(1);
        }
        if (bytes.empty()) return;
        if (bytes.front() == ' ') {
          bytes.remove_prefix(1);
          message_.clear();
          state_ = State::kOctets;
        } else {
          CountBeginsALine();
        }
        break;
      }
      case State::kOctets: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size()));
        Keep(bytes.substr(0, n));
        bytes.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) {
          Emit(sink);
          state_ = State::kFrameStart;
        }
        break;
      }
      case State::kLine: {
        // A line is the bytes before its LF less one CR right before it, then cut at the limit,
        // however the reads split it.
        const size_t lf = bytes.find('\n');
        if (lf != std::string_view::npos && message_.empty() && !cut_ && !held_cr_) {
          // The common case: the whole line is in this read; hand it out without a copy.
          std::string_view line = WithoutLineEnd(bytes.substr(0, lf + 1));
          if (line.size() > max_message_bytes_) {
            line = line.substr(0, max_message_bytes_);
            ++truncated_;
          }
          sink.OnMessage(line);
          bytes.remove_prefix(lf + 1);
          state_ = State::kFrameStart;
          break;
        }
        std::string_view part = bytes.substr(0, lf == std::string_view::npos ? bytes.size() : lf);
        // A CR that ended the last read was not the line's end after all: more bytes came.
        if (held_cr_ && !part.empty()) Keep("\r");
        held_cr_ = false;
        const bool ends_in_cr = !part.empty() && part.back() == '\r';
        if (ends_in_cr) part.remove_suffix(1);
        Keep(part);
        if (lf == std::string_view::npos) {
          held_cr_ = ends_in_cr;  // the line's end if an LF comes next
          return;
        }
        Emit(sink);
        bytes.remove_prefix(lf + 1);
        state_ = State::kFrameStart;
        break;
      }
    }
  }
}

void SyslogFramer::CountBeginsALine() {
  state_ = State::kLine;
  if (message_.size() > max_message_bytes_) {
    message_.resize(max_message_bytes_);
    ++truncated_;
    cut_ = true;
  }
}

void SyslogFramer::Finish(Sink& sink) {
  if (state_ == State::kCount) CountBeginsALine();  // digits and then the end: a line
  if (state_ != State::kFrameStart && (!message_.empty() || cut_)) Emit(sink);
  message_.clear();
  cut_ = false;
  held_cr_ = false;  // a last line's CR is its end, as WithoutLineEnd has it
  state_ = State::kFrameStart;
}

}  // namespace faultline
