// ResumableConsumer: a stream consumer that can say where its stream stands (StreamState), so that
// a checkpoint can save it and a restart or a reload can resume it there. File sources make their
// streams' consumers of this kind (daemon/file_streams.h); MatchedStream is the one that exists.
//
// Same threading as StreamConsumer: the event loop only. State() never fails.
#ifndef FAULTLINE_STREAM_RESUMABLE_CONSUMER_H_
#define FAULTLINE_STREAM_RESUMABLE_CONSUMER_H_

#include "agent/match/stream_state.h"
#include "agent/source/stream_consumer.h"

namespace faultline {

class ResumableConsumer : public StreamConsumer {
 public:
  // Where the stream stands now: committed position, lines, pending hits (stream_state.h).
  virtual StreamState State() const = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_STREAM_RESUMABLE_CONSUMER_H_
