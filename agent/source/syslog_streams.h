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
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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
};

// This machine's local civil time now, read at most once per second.
CivilTime LocalCivilTimeNow();

class SyslogStreams : public StreamConsumer, private SyslogFramer::Sink {
 public:
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
    std::string pending;  // lines of this read not yet handed on
  };

  void OnMessage(std::string_view message) override;
  Stream& StreamFor(std::string_view host, std::string_view app);
  void Flush();

  const std::string name_;
  const SyslogStreamsOptions options_;
  const LabeledStreamConsumerFactory factory_;
  SyslogFramer framer_;
  CivilTime now_;              // read once per OnBytes
  std::list<Stream> streams_;  // most recently used first
  std::unordered_map<std::string, std::list<Stream>::iterator> by_key_;
  std::vector<Stream*> touched_;  // streams with pending lines
  std::string key_;               // scratch
  uint64_t messages_ = 0;
  bool ended_ = false;
};

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_SYSLOG_STREAMS_H_
