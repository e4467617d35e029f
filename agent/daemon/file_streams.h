// FileStreamHost: what file sources need of the agent to resume their files from the state store
// and to have their streams saved at every checkpoint (state/stream_states.h).
//
// A file source asks it for the streams saved for the source, makes every stream's consumer
// through it (a ResumableConsumer: it can say where its stream stands), and registers itself
// while running so that a checkpoint can walk its streams. A source stopped while the agent runs
// (a reload restarts or removes it) hands its streams over as they stand, frozen (they count
// nothing more, not even the partial line or the pending hits that ending would settle): the
// source that takes its place resumes them as a restart would, so a reload neither loses nor
// counts twice. Event loop only.
#ifndef FAULTLINE_DAEMON_FILE_STREAMS_H_
#define FAULTLINE_DAEMON_FILE_STREAMS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/match/stream_state.h"
#include "agent/sink/metrics.h"
#include "agent/source/stream_consumer.h"
#include "agent/state/stream_states.h"
#include "agent/stream/resumable_consumer.h"

namespace faultline {

// A running source of file streams, walked at each checkpoint.
class FileStreamSet {
 public:
  virtual ~FileStreamSet() = default;
  virtual void CollectStreams(std::vector<SavedStream>& out) const = 0;
  virtual const std::string& source_id() const = 0;
  // Running total of bytes its files held that were never read (FileTailer::bytes_lost).
  virtual uint64_t bytes_lost() const = 0;
  // Size, read offset, rotations and truncations of every followed file, for /metrics.
  virtual void CollectFiles(std::vector<Metrics::FileSample>& out) const = 0;
};

class FileStreamHost {
 public:
  virtual ~FileStreamHost() = default;
  virtual const std::vector<SavedStream>& Saved(const std::string& source_id) const = 0;
  virtual bool HasHistory(const std::string& source_id) const = 0;
  // When Saved(source_id) was taken (FileResume::checkpoint_time_ns).
  virtual int64_t CheckpointTimeNs(const std::string& source_id) const = 0;
  // The consumer of a stream of `path` in `source_id` whose first byte is at `offset`;
  // `resumed`, when not null, is the saved stream it continues. While `*frozen` is true the
  // consumer ignores everything (its source handed it over).
  virtual std::unique_ptr<ResumableConsumer> StartFileStream(const std::string& source_id,
                                                             const std::string& path,
                                                             uint64_t offset,
                                                             const SavedStream* resumed,
                                                             const bool* frozen) = 0;
  // A source stopping while the agent runs: its streams as they stand become Saved(source_id).
  virtual void HandOver(const std::string& source_id, std::vector<SavedStream> streams) = 0;
  virtual void AddFileStreams(const FileStreamSet* set) = 0;
  virtual void RemoveFileStreams(const FileStreamSet* set) = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_DAEMON_FILE_STREAMS_H_
