// StreamState: everything about one stream that a checkpoint saves and a restart restores, as one
// value (docs/design.md section 1).
//
// Two positions matter. `read` is how far the stream was read and matched. `committed` is the
// first byte not yet fully matched: the start of the earliest line whose fate is still open (a
// hit waiting for context, the first line of a sequence in progress, a partial line, a batch not
// matched yet). A reader that restarts at `committed` (framing in the mode `committed` says) loses
// no line and never starts mid-line; the lines in [committed, read) were seen before, and only
// the pending hits among them (pending_hits) were not yet counted.
//
// The source fills in what identifies the stream (its id, name and identity); the pipeline fills
// in the positions (StreamPipeline::State). A plain copyable value.
#ifndef FAULTLINE_MATCH_STREAM_STATE_H_
#define FAULTLINE_MATCH_STREAM_STATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "agent/framing/line_framer.h"

namespace faultline {

// A hit still waiting for context when the state was taken.
struct PendingHitState {
  std::string rule_id;
  uint64_t line_number = 0;
  bool operator==(const PendingHitState&) const = default;
};

// What makes a file the same file after a restart: device, inode and a hash of its first bytes
// (a recycled inode holds other bytes).
struct StreamIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t head_hash = 0;
  uint64_t head_bytes = 0;  // how many first bytes head_hash covers
};

struct StreamState {
  std::string source_id;
  std::string stream_name;
  StreamIdentity identity;

  FramerPosition committed;  // resume here
  uint64_t committed_line = 0;  // lines before committed.offset
  uint64_t read_offset = 0;
  uint64_t read_line = 0;
  std::vector<PendingHitState> pending_hits;
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_STREAM_STATE_H_
