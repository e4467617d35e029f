// SourceStatus: what a running source says about itself on the status page and in
// /api/v1/status: the streams it follows (files, later connections), how far behind each one is,
// and the problems it met (a file it may not read).
//
// A plain value, taken on the event-loop thread by the source and rendered later; every string is
// a path or a message of the agent's own, never log text.
#ifndef FAULTLINE_SOURCE_SOURCE_STATUS_H_
#define FAULTLINE_SOURCE_SOURCE_STATUS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace faultline {

struct SourceStreamStatus {
  std::string name;         // a path, a peer address
  uint64_t read_bytes = 0;  // offset of the next byte to read
  // Bytes known to be there and not read yet (a file's size at its last stat minus read_bytes);
  // 0 when the source cannot know (a socket).
  uint64_t lag_bytes = 0;
  bool open = false;      // holds a descriptor now (a quiet file may be followed by stat)
  bool draining = false;  // rotated away or deleted: read to its end, then closed
};

struct SourceProblem {
  std::string name;     // the path or peer it concerns
  std::string message;  // e.g. "Permission denied"
};

struct SourceStatus {
  std::string type;  // "file", ...
  std::vector<SourceStreamStatus> streams;
  std::vector<SourceProblem> problems;
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_SOURCE_STATUS_H_
