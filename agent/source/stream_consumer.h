// StreamConsumer: what every source hands the bytes of one stream to, whatever the stream is (a
// tailed file, a connection, stdin, a wrapped command's output). The agent's consumer frames and
// matches them (StreamPipeline); sources know nothing of rules.
//
// A source creates one consumer per stream through a StreamConsumerFactory, calls it on the event
// loop thread only, in order, and never after OnEnd. Consumers must not throw.
#ifndef FAULTLINE_SOURCE_STREAM_CONSUMER_H_
#define FAULTLINE_SOURCE_STREAM_CONSUMER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace faultline {

// Bytes whose sender said when they were written (a syslog header's timestamp): the bytes of an
// OnTimedBytes call from the previous run's `end` up to this one's, ending at a line end.
struct TimedRun {
  std::size_t end = 0;
  std::optional<int64_t> time_ms;  // Unix milliseconds; none when the sender did not say
};

class StreamConsumer {
 public:
  virtual ~StreamConsumer() = default;
  virtual void OnBytes(std::string_view bytes) = 0;
  // As OnBytes, from a source that knows when its lines were written; `runs` cover `bytes` in
  // order. A consumer that keeps no times takes the bytes alone.
  virtual void OnTimedBytes(std::string_view bytes, std::span<const TimedRun> runs) {
    static_cast<void>(runs);
    OnBytes(bytes);
  }
  virtual void OnQuiet() = 0;  // nothing new for a while: settle what waits for more
  // Nothing new for the source's partial_flush_ms: a partial last line may be taken as a line.
  // Only sources with such a setting call it.
  virtual void OnPartialTimeout() {}
  virtual void OnEnd() = 0;  // no more bytes will come to this stream
};

// Makes the consumer of a new stream; `name` names it (a path, a peer address).
using StreamConsumerFactory =
    std::function<std::unique_ptr<StreamConsumer>(const std::string& name)>;

// Labels a stream carries for all its lines (a syslog message's host and app): name, value.
// Values come from the stream's bytes; the consumer bounds and sanitises them before they
// become metric labels.
using StreamLabels = std::vector<std::pair<std::string, std::string>>;

// As StreamConsumerFactory, for streams with labels of their own.
using LabeledStreamConsumerFactory = std::function<std::unique_ptr<StreamConsumer>(
    const std::string& name, const StreamLabels& labels)>;

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_STREAM_CONSUMER_H_
