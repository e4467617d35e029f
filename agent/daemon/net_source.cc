// Sources of `type: tcp | unix` (StreamListener: one stream per connection) and `type: udp |
// unixgram` (DatagramListener: one stream per peer). With `format: syslog` each connection or
// peer is read by a SyslogStreams, which gives every (host, app) its own labelled stream.
#include <chrono>
#include <string>
#include <type_traits>

#include "agent/daemon/sources.h"
#include "agent/source/datagram_listener.h"
#include "agent/source/stream_listener.h"
#include "agent/source/syslog_streams.h"

namespace faultline {
namespace {

// The bytes a syslog frame may carry besides the message text (header, structured data), so
// that a message of max_line_bytes is still whole; what is longer is cut by the framer.
constexpr std::size_t kSyslogHeaderAllowance = 4096;

PeerConsumerFactory ConsumersFor(const SourceContext& context, const NetSourceConfig& source) {
  if (source.format == NetFormat::kPlain) {
    StreamConsumerFactory consumers = context.consumers(source.id);
    return [consumers](const SocketPeer& peer) { return consumers(peer.name); };
  }
  SyslogStreamsOptions options;
  options.datagrams = !source.stream();
  options.max_message_bytes = context.config.framing.max_line_bytes + kSyslogHeaderAllowance;
  LabeledStreamConsumerFactory consumers = context.labeled_consumers(source.id);
  return [consumers, options](const SocketPeer& peer) {
    SyslogStreamsOptions for_peer = options;
    for_peer.default_host = peer.host;
    return std::make_unique<SyslogStreams>(peer.name, std::move(for_peer), consumers);
  };
}

const char* TypeName(NetTransport transport) {
  switch (transport) {
    case NetTransport::kTcp:
      return "tcp";
    case NetTransport::kUdp:
      return "udp";
    case NetTransport::kUnix:
      return "unix";
    case NetTransport::kUnixgram:
      return "unixgram";
  }
  return "net";
}

template <typename Listener>
class NetSource : public Source {
 public:
  template <typename Options>
  NetSource(asio::io_context& io, NetTransport transport, Options options,
            PeerConsumerFactory consumers)
      : type_(TypeName(transport)), listener_(io, std::move(options), std::move(consumers)) {}
  Result<void> Open() override { return listener_.Open(); }
  void Start() override { listener_.Start(); }
  void Stop() override { listener_.Stop(); }
  SourceStatus Status() const override {
    SourceStatus status{.type = type_, .streams = listener_.Streams(), .problems = {}};
    if constexpr (std::is_same_v<Listener, StreamListener>) {
      if (listener_.refused() > 0) {
        status.problems.push_back({"max_connections", std::to_string(listener_.refused()) +
                                                          " new connection(s) closed at once: "
                                                          "every connection held was active"});
      }
      if (listener_.evicted() > 0) {
        status.problems.push_back({"max_connections", std::to_string(listener_.evicted()) +
                                                          " silent connection(s) closed to make "
                                                          "room for new ones"});
      }
    }
    return status;
  }

 private:
  const std::string type_;
  Listener listener_;
};

}  // namespace

std::unique_ptr<Source> BuildSource(const SourceContext& context, const NetSourceConfig& source) {
  const auto quiet_after = std::chrono::milliseconds(context.config.context_idle_flush_ms);
  const auto idle_timeout = std::chrono::milliseconds(source.idle_timeout_ms);
  PeerConsumerFactory consumers = ConsumersFor(context, source);
  if (source.stream()) {
    StreamListenerOptions options;
    options.unix_socket = source.local();
    options.host = source.host;
    options.port = source.port;
    options.path = source.path;
    options.mode = source.mode;
    options.max_connections = source.max_streams;
    options.idle_timeout = idle_timeout;
    options.quiet_after = quiet_after;
    return std::make_unique<NetSource<StreamListener>>(context.io, source.transport,
                                                       std::move(options), std::move(consumers));
  }
  DatagramListenerOptions options;
  options.unix_socket = source.local();
  options.host = source.host;
  options.port = source.port;
  options.path = source.path;
  options.mode = source.mode;
  options.max_peers = source.max_streams;
  options.idle_timeout = idle_timeout;
  options.quiet_after = quiet_after;
  return std::make_unique<NetSource<DatagramListener>>(context.io, source.transport,
                                                       std::move(options), std::move(consumers));
}

}  // namespace faultline
