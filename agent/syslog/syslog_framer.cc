#include "agent/syslog/syslog_framer.h"

#include <algorithm>

namespace faultline {
namespace {

// A buffer that held one long message is given back rather than kept for every later one.
constexpr size_t kRetainedBytes = 64 * 1024;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

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
  sink.OnMessage(WithoutLineEnd(message_));
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
        while (!bytes.empty() && IsDigit(bytes.front()) && count_digits_ < kMaxCountDigits) {
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
          state_ = State::kLine;  // the digits begin a plain message, and stay in it
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
        const size_t lf = bytes.find('\n');
        if (lf == std::string_view::npos) {
          Keep(bytes);
          return;
        }
        if (message_.empty() && !cut_) {
          // The common case: the whole line is in this read; hand it out without a copy.
          std::string_view line = WithoutLineEnd(bytes.substr(0, lf + 1));
          if (line.size() > max_message_bytes_) {
            line = line.substr(0, max_message_bytes_);
            ++truncated_;
          }
          sink.OnMessage(line);
        } else {
          Keep(bytes.substr(0, lf));
          Emit(sink);
        }
        bytes.remove_prefix(lf + 1);
        state_ = State::kFrameStart;
        break;
      }
    }
  }
}

void SyslogFramer::Finish(Sink& sink) {
  if (state_ != State::kFrameStart && (!message_.empty() || cut_)) Emit(sink);
  message_.clear();
  cut_ = false;
  state_ = State::kFrameStart;
}

}  // namespace faultline
