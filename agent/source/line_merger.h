// LineMerger: merges several byte streams (a command's stdout and stderr) into one stream of
// whole lines, in the order the lines were completed: what a terminal or a CI log shows, and what
// rules are written against (a rule's context may sit on the other stream, as pip's "error:
// subprocess-exited-with-error" on stderr after a compiler error on stdout).
//
// Each input keeps the bytes after its last line end until that line ends, so a line of one input
// is never cut by a line of the other. A line end is "\n", or a "\r" that is followed by a byte
// (a trailing "\r" is held back in case "\n" follows, so "\r\n" split between two reads stays one
// line end for the framer; line_framer.h). An input's partial line is handed on as it is when it
// grows past max_partial_bytes (the framer cuts it at max_line_bytes anyway), and when the input
// ends (End), its last line is ended there: a newline is handed on after it, so the next line of
// the other input does not glue onto it (faultline_bytes_total counts that byte).
//
// Every byte fed is handed on exactly once, in order per input. Not thread-safe; the consumer
// must outlive the merger. Never throws.
#ifndef FAULTLINE_SOURCE_LINE_MERGER_H_
#define FAULTLINE_SOURCE_LINE_MERGER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "agent/source/stream_consumer.h"

namespace faultline {

class LineMerger {
 public:
  LineMerger(size_t inputs, StreamConsumer* out, size_t max_partial_bytes);

  void Feed(size_t input, std::string_view bytes);
  // No more bytes for `input`: its partial line is handed on, ended by a newline.
  void End(size_t input);

  size_t partial_bytes(size_t input) const { return partial_[input].size(); }

 private:
  StreamConsumer* const out_;
  const size_t max_partial_bytes_;
  std::vector<std::string> partial_;  // per input: bytes after its last line end
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_LINE_MERGER_H_
