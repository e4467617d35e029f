// SyslogStreams: the consumer of one syslog connection or datagram peer (`format: syslog`). It
// splits what arrives into messages (SyslogFramer, RFC 6587, on a stream; one message per
// datagram otherwise), reads each header (ParseSyslogMessage) and hands the message text, as a
// line, to a stream of its own per (host, app) with those two as the stream's labels: findings
// then name the machine and the program, and the lines around a finding are the same
// program's, not whatever else the relay interleaved.
//
// The host label is the message's HOSTNAME, or, when it names none (libc's syslog() over a Unix
// socket, a bare line), the peer's (default_host); the app label is APP-NAME or TAG, empty when
// the message has none (the consumer turns empty into `unknown`). Both are printable US-ASCII
// of at most 255 and 48 bytes (the parser refuses anything else), and the consumer bounds how
// many distinct values become metric labels.
//
// Time: each message's lines are handed on with the time its header gives (OnTimedBytes), so a
// finding is dated by the sender, as a file line is by a timestamp it starts with. RFC 5424's
// timestamps carry their offset; RFC 3164's (and any without an offset) are read as this
// machine's local time, the year resolved as ParseSyslogMessage says. A time the receiver cannot
// believe is dropped and the line dated by its arrival: more than kMaxAheadMs ahead of the
// arrival (a sender's clock running fast, or a zone ahead of ours on RFC 3164: a future
// first_seen would stay on the page and decide fix judgements wrongly until that time came; the
// minute covers NTP-less drift and a second's rounding), or more than kMaxBehindMs behind it (a
// board without a battery-backed clock booting in 1970 would otherwise set first_seen for good;
// a relay's disk queue can hold messages for days, not for weeks).
//
// Bounded: at most max_streams (host, app) streams per connection; a new pair beyond that ends
// the stream of the pair heard from least recently. A message over max_message_bytes is cut
// (SyslogFramer). Messages that arrive in one read are handed on per stream in one call, so a
// busy relay's lines are still matched in batches. All streams share the connection's name.
// Not thread-safe: the event loop. Never throws.
#ifndef FAULTLINE_SOURCE_SYSLOG_STREAMS_H_
#define FAULTLINE_SOURCE_SYSLOG_STREAMS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/core/clock.h"
#include "agent/source/stream_consumer.h"
#include "agent/syslog/syslog_framer.h"
#include "agent/syslog/syslog_message.h"

namespace faultline {

struct SyslogStreamsOptions {
  // Each OnBytes call is one message (UDP, unixgram; RFC 5426); else a byte stream to frame.
  bool datagrams = false;
  std::size_t max_message_bytes = 1 << 20;
  std::string default_host;
  std::size_t max_streams = 16;
  // The receiver's civil time, for RFC 3164's yearless timestamps.
  std::function<CivilTime()> now;
  // The receiver's clock (core/clock.h), the arrival time that bounds a sender's.
  WallClock clock = SystemNow;
};

// A sender's time (Unix milliseconds) the receiver believes at `arrival_ms` (see the top).
std::optional<int64_t> BoundedSenderTime(int64_t sender_ms, int64_t arrival_ms);

// This machine's local civil time now, read at most once per second.
CivilTime LocalCivilTimeNow();

class SyslogStreams : public StreamConsumer, private SyslogFramer::Sink {
 public:
  static constexpr int64_t kMaxAheadMs = 60 * 1000;
  static constexpr int64_t kMaxBehindMs = 30LL * 86400 * 1000;

  SyslogStreams(std::string name, SyslogStreamsOptions options,
                LabeledStreamConsumerFactory factory);
  ~SyslogStreams() override;

  void OnBytes(std::string_view bytes) override;
  void OnQuiet() override;
  void OnEnd() override;

  uint64_t messages() const { return messages_; }
  std::size_t streams() const { return streams_.size(); }

 private:
  struct Stream {
    std::string key;
    std::unique_ptr<StreamConsumer> consumer;
    std::string pending;         // lines of this read not yet handed on
    std::vector<TimedRun> runs;  // their times
  };

  void OnMessage(std::string_view message) override;
  Stream& StreamFor(std::string_view host, std::string_view app);
  std::optional<int64_t> TimeOf(const SyslogMessage& message);
  static void HandOn(Stream& stream);
  void Flush();

  const std::string name_;
  const SyslogStreamsOptions options_;
  const LabeledStreamConsumerFactory factory_;
  SyslogFramer framer_;
  CivilTime now_;           // read once per OnBytes
  int64_t arrival_ms_ = 0;  // likewise
  // The last local civil time converted (mktime is slow and a busy sender repeats its second).
  CivilTime local_civil_;
  int64_t local_seconds_ = 0;
  bool local_cached_ = false;
  std::list<Stream> streams_;  // most recently used first
  std::unordered_map<std::string, std::list<Stream>::iterator> by_key_;
  std::vector<Stream*> touched_;  // streams with pending lines
  std::string key_;               // scratch
  uint64_t messages_ = 0;
  bool ended_ = false;
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_SYSLOG_STREAMS_H_
