#include "agent/source/line_merger.h"

namespace faultline {
namespace {

// Where the bytes after the last complete line end of `bytes` begin; 0 when there is none.
size_t AfterLastLineEnd(std::string_view bytes) {
  for (size_t i = bytes.size(); i > 0; --i) {
    const char c = bytes[i - 1];
    if (c == '\n') return i;
    if (c == '\r' && i < bytes.size()) return i;  // a trailing '\r' may yet become "\r\n"
  }
  return 0;
}

}  // namespace

LineMerger::LineMerger(size_t inputs, StreamConsumer* out, size_t max_partial_bytes)
    : out_(out), max_partial_bytes_(max_partial_bytes), partial_(inputs) {}

void LineMerger::Feed(size_t input, std::string_view bytes) {
  std::string& partial = partial_[input];
  const size_t cut = AfterLastLineEnd(bytes);  // "\r" held, then "\n...": cut after that '\n'
  if (cut == 0) {
    // A held '\r' not followed by '\n' was a bare line end: that line is complete.
    if (!partial.empty() && partial.back() == '\r' && !bytes.empty()) {
      out_->OnBytes(partial);
      partial.clear();
    }
    partial.append(bytes);
    if (partial.size() > max_partial_bytes_) {
      out_->OnBytes(partial);
      partial.clear();
    }
    return;
  }
  if (!partial.empty()) {
    out_->OnBytes(partial);
    partial.clear();
  }
  out_->OnBytes(bytes.substr(0, cut));
  partial.assign(bytes.substr(cut));
}

void LineMerger::End(size_t input) {
  std::string& partial = partial_[input];
  if (partial.empty()) return;
  const bool ended = partial.back() == '\n' || partial.back() == '\r';
  out_->OnBytes(partial);
  partial.clear();
  if (!ended) out_->OnBytes("\n");
}

}  // namespace faultline
