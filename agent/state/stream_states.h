// StreamStates: the state store's participant for the positions of file streams (component
// "streams"): for every followed file, what identifies it and where reading starts again.
//
// One row per stream, keyed by (source, device, inode): the file's identity (its FileMark: path,
// device, inode, hash of the first bytes, read offset and the bytes just before it) and its
// StreamState: the committed position (the first byte not fully matched: a line whose context is
// still pending is not past it; resume_offset of the mark), the lines before it, the lines read,
// and the hits still pending at the time (their lines are read again after a restart and are the
// only ones among the re-read lines to be counted; match/stream_state.h).
// A stream that ended (its file drained after a rotation, deleted) loses its row at the next
// checkpoint; sources seen are kept in streams_sources, so a source that ran before reads files
// that appeared while the agent was down from their start, whatever start_at says; and
// streams_checkpoint holds when the rows were last written (a rotated file changed after that
// was written while the agent was down).
// read_offset is the file's (how far the tailer read, for recognising it); counted_offset the
// stream's (bytes before it were counted in faultline_bytes_total): after a restart the stream
// reads again from resume_offset and counts only what lies beyond.
//
// Every checkpoint asks `snapshot` for the states of every live file stream, on the event loop at
// the same instant as the counters (CounterStates), and writes the rows that changed.
// Freeze() stops that: the agent freezes the streams once their final positions are collected at
// stop, so the streams ending as sources stop do not delete their rows.
//
// Threading: the event loop, except the parts' Write. Never throws.
#ifndef FAULTLINE_STATE_STREAM_STATES_H_
#define FAULTLINE_STATE_STREAM_STATES_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "agent/match/stream_state.h"
#include "agent/source/file_resume.h"
#include "agent/state/state_store.h"

namespace faultline {

struct SavedStream {
  std::string source_id;
  FileMark mark;
  // committed, committed_line, read_offset, read_line and pending_hits (identity is in `mark`).
  StreamState state;
};

class StreamStates : public StateParticipant {
 public:
  struct Snapshot {
    std::vector<SavedStream> streams;
    std::set<std::string> sources;  // ids of the file sources running
  };
  explicit StreamStates(std::function<Snapshot()> snapshot) : snapshot_(std::move(snapshot)) {}

  // The streams saved for `source_id` at the last checkpoint before this start.
  const std::vector<SavedStream>& saved(const std::string& source_id) const;
  bool has_history(const std::string& source_id) const {
    return saved_sources_.contains(source_id);
  }
  size_t saved_count() const;
  // When the checkpoint holding the saved streams was written (CLOCK_REALTIME, ns); 0 if none.
  int64_t checkpoint_time_ns() const { return checkpoint_time_ns_; }
  // When saved(source_id) was taken: at its hand-over, else at that checkpoint.
  int64_t saved_at_ns(const std::string& source_id) const;
  // A source stopped while the agent runs (a reload restarts or removes it): `streams`, its
  // streams as they stood, become saved(source_id), taken now, as if it had been checkpointed and
  // the agent restarted, for the source that takes its place.
  void HandOver(const std::string& source_id, std::vector<SavedStream> streams);

  void Freeze() { frozen_ = true; }

  std::string_view component() const override { return "streams"; }
  int schema_version() const override { return 1; }
  DbStatus Migrate(SqliteDb& db, int from) override;
  DbStatus Load(SqliteDb& db) override;
  std::unique_ptr<CheckpointPart> Collect(bool full) override;

 private:
  using Key = std::tuple<std::string, uint64_t, uint64_t>;  // source, device, inode
  // A row as written, for telling what changed.
  struct Row {
    std::string path;
    uint64_t head_hash, head_len, read_offset;
    std::string tail;
    uint64_t resume_offset;
    bool in_cut_line, after_cr;
    uint64_t committed_line, read_line, counted_offset;
    std::string pending;  // JSON [[rule_id, line], ...]
    bool operator==(const Row&) const = default;
  };
  class Part;
  static Row ToRow(const SavedStream& stream);

  const std::function<Snapshot()> snapshot_;
  std::map<std::string, std::vector<SavedStream>> saved_;
  std::set<std::string> saved_sources_;
  std::map<Key, Row> committed_;
  std::set<std::string> committed_sources_;
  int64_t checkpoint_time_ns_ = 0;
  std::map<std::string, int64_t> handed_over_ns_;  // by source
  bool frozen_ = false;
};

}  // namespace faultline

#endif  // FAULTLINE_STATE_STREAM_STATES_H_
