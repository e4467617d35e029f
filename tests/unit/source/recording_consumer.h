// Test helpers for sources: a StreamConsumer that records what its stream received; RunUntil
// (tests/support/wait.h) runs the loop until a condition holds.
#ifndef FAULTLINE_TESTS_UNIT_SOURCE_RECORDING_CONSUMER_H_
#define FAULTLINE_TESTS_UNIT_SOURCE_RECORDING_CONSUMER_H_

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "agent/core/asio.h"
#include "agent/source/socket_peer.h"
#include "agent/source/stream_consumer.h"
#include "tests/support/wait.h"

namespace faultline::testing {

struct RecordedStream {
  static constexpr size_t kKeptBytes = 1 << 20;

  std::string name = {};
  std::string host = {};
  StreamLabels labels = {};
  std::string bytes = {};  // the first kKeptBytes received
  size_t total = 0;        // every byte received
  int on_bytes_calls = 0;
  int quiet = 0;
  bool ended = false;
  // Each run OnTimedBytes was given: its bytes and its time.
  std::vector<std::pair<std::string, std::optional<int64_t>>> runs = {};
};

class RecordingConsumer : public StreamConsumer {
 public:
  explicit RecordingConsumer(RecordedStream* stream) : stream_(stream) {}
  void OnBytes(std::string_view bytes) override {
    if (stream_->bytes.size() < RecordedStream::kKeptBytes) stream_->bytes.append(bytes);
    stream_->total += bytes.size();
    ++stream_->on_bytes_calls;
  }
  void OnTimedBytes(std::string_view bytes, std::span<const TimedRun> runs) override {
    std::size_t begin = 0;
    for (const TimedRun& run : runs) {
      stream_->runs.emplace_back(std::string(bytes.substr(begin, run.end - begin)), run.time_ms);
      begin = run.end;
    }
    OnBytes(bytes);
  }
  void OnQuiet() override { ++stream_->quiet; }
  void OnEnd() override { stream_->ended = true; }

 private:
  RecordedStream* stream_;
};

// Every stream made, in order of creation; the deque keeps their addresses.
struct Recorder {
  std::deque<RecordedStream> streams;

  PeerConsumerFactory ForPeers() {
    return [this](const SocketPeer& peer) {
      streams.push_back(RecordedStream{.name = peer.name, .host = peer.host});
      return std::make_unique<RecordingConsumer>(&streams.back());
    };
  }
  LabeledStreamConsumerFactory Labeled() {
    return [this](const std::string& name, const StreamLabels& labels) {
      streams.push_back(RecordedStream{.name = name, .labels = labels});
      return std::make_unique<RecordingConsumer>(&streams.back());
    };
  }
  std::string AllBytes() const {
    std::string all;
    for (const RecordedStream& s : streams) all += s.bytes;
    return all;
  }
};

}  // namespace faultline::testing

#endif  // FAULTLINE_TESTS_UNIT_SOURCE_RECORDING_CONSUMER_H_
