// Config: the agent's settings as plain structs, filled and validated by LoadConfig
// (config_loader.h). Every field has the default documented in config/faultline.yaml; relative
// paths are already resolved against the config file's folder when LoadConfig returns.
#ifndef FAULTLINE_CONFIG_CONFIG_H_
#define FAULTLINE_CONFIG_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/framing/framing_options.h"

namespace faultline {

enum class StartAt { kBeginning, kEnd };

// The names rotation gives old copies of a log, which hold lines already counted under the live
// name: numbered (app.log.1 .. app.log.999), the kubelet's 0.log.<timestamp>, compressed, and
// logrotate's dateext (-YYYYMMDD, -YYYYMMDDHH). The default `exclude` of a file source.
inline std::vector<std::string> DefaultRotatedNameExcludes() {
  return {"*.[0-9]",
          "*.[0-9][0-9]",
          "*.[0-9][0-9][0-9]",
          "*.log.[0-9]*",
          "*.gz",
          "*.zst",
          "*.xz",
          "*.bz2",
          "*-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]",
          "*-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]"};
}

struct FileSourceConfig {
  std::string id;                  // names the source in metrics (`source` label) and logs
  std::vector<std::string> paths;  // file paths or globs (`*`, `?`, `[...]`, `**`), absolute
  // Names (or, with a '/', absolute paths) globs must not follow; fnmatch patterns.
  std::vector<std::string> exclude = DefaultRotatedNameExcludes();
  StartAt start_at = StartAt::kEnd;  // for files present at start; new files are read whole
  int poll_interval_ms = 1000;       // fallback wake-up when inotify says nothing
  int rescan_interval_ms = 30000;    // full walk of the globs, a net for missed inotify events
  int rotate_wait_ms = 60000;        // a rotated-away file is read until quiet this long
  int partial_flush_ms = 0;          // a partial last line quiet this long is matched; 0: never

  bool operator==(const FileSourceConfig&) const = default;  // a reload restarts a changed one
};

// The state store (agent/state/state_store.h): offsets and counts that survive a restart.
struct StateConfig {
  std::string dir;                    // absolute; default: state/ beside the config file
  int checkpoint_interval_ms = 1000;  // at most this long between checkpoints
};

// How a running agent takes a new config and rule pack (SIGHUP, POST /-/reload, file changes).
struct ReloadConfig {
  bool watch = false;  // reload when the config file or a rule file changes (inotify)
  // A load and compile that takes longer is rejected; the old config keeps running.
  int timeout_ms = 20000;
  // Heap the new config and rules may hold once compiled; more is rejected.
  std::size_t max_memory_bytes = std::size_t{1} << 30;
};

// Sources that listen on a socket: `type: tcp | udp | unix | unixgram`.
enum class NetTransport { kTcp, kUdp, kUnix, kUnixgram };
// How the bytes of a network source are read: plain lines, or syslog messages (RFC 3164 and 5424;
// on stream sockets framed by octet counting or by LF, RFC 6587) whose host and app become labels.
enum class NetFormat { kPlain, kSyslog };

struct NetSourceConfig {
  std::string id;  // as FileSourceConfig::id
  NetTransport transport = NetTransport::kTcp;
  std::string host;      // tcp, udp: the address to listen on (IP or name, IPv6 without brackets)
  uint16_t port = 0;     // tcp, udp
  std::string path;      // unix, unixgram: the socket file, absolute
  uint32_t mode = 0660;  // unix, unixgram: permission bits of the socket file
  NetFormat format = NetFormat::kPlain;
  // Connections (tcp, unix) or peer streams (udp, unixgram) held at once.
  std::size_t max_streams = 256;
  // A connection (or peer stream) silent this long is closed and its stream ended.
  int idle_timeout_ms = 3600 * 1000;
  // A reload restarts a changed one (its connections end); an unchanged one keeps them.
  bool operator==(const NetSourceConfig&) const = default;

  bool stream() const {
    return transport == NetTransport::kTcp || transport == NetTransport::kUnix;
  }
  bool local() const {
    return transport == NetTransport::kUnix || transport == NetTransport::kUnixgram;
  }
};

// `type: stdin`: the agent's standard input, read as one stream that ends when stdin closes (at
// most one such source). When every source of the agent has ended, the agent stops (exit 0).
struct StdinSourceConfig {
  std::string id;
  bool operator==(const StdinSourceConfig&) const = default;
};

// `type: fifo`: a named pipe, created (mode 0600) when the path does not exist; writers may close
// and reopen it at will (agent/source/fifo_reader.h).
struct FifoSourceConfig {
  std::string id;
  std::string path;  // absolute
  bool operator==(const FifoSourceConfig&) const = default;
};

// One receiver of alerts (`alerts.receivers[]`). Secrets (webhook secrets, a Slack URL, which is
// itself a secret) may come from files so that the config can be shared.
struct ReceiverConfig {
  enum class Type { kSlack, kWebhook, kAlertmanager };
  std::string name;  // unique; names the receiver in metrics, the outbox and `alert test`
  Type type = Type::kWebhook;
  // Where to POST. Alertmanager takes several (a cluster: each is sent every alert); the others
  // one. An Alertmanager URL is its base (http://am:9093), /api/v2/alerts is added.
  std::vector<std::string> urls;
  // webhook: Standard Webhooks secrets (whsec_...), one or two (rotation); each signs.
  std::vector<std::string> secrets;
  // webhook: an optional secret for a GitHub-style X-Hub-Signature-256 header too.
  std::string github_secret;
  // Extra request headers ("Authorization: Bearer ..." for an Alertmanager behind a proxy).
  std::vector<std::pair<std::string, std::string>> headers;
  bool send_resolved = false;
  std::string min_severity = "error";  // info | warning | error | critical
  // Token bucket: messages per second and burst. 0: the type's default (Slack 1/s burst 3,
  // others 10/s burst 20).
  double rate_per_second = 0;
  int burst = 0;
  int connect_timeout_ms = 5000;
  int timeout_ms = 15000;
  int64_t give_up_after_ms = 24LL * 3600 * 1000;
  int line = 0;  // where it was defined, for later errors
  bool operator==(const ReceiverConfig&) const = default;
};

// Every receiver type, once, in the enum's order: the registration entry of a receiver type. The
// loader accepts exactly the names of ReceiverTypeName; a new enumerator without a name fails to
// compile (-Werror=switch here and in Receiver::Prepare, alert/receiver.cc), and one missing
// from this table fails the static_assert below.
inline constexpr ReceiverConfig::Type kReceiverTypes[] = {
    ReceiverConfig::Type::kSlack,
    ReceiverConfig::Type::kWebhook,
    ReceiverConfig::Type::kAlertmanager,
};

// The name of `type` in the config (`type: slack`); empty for a value that is no enumerator.
constexpr std::string_view ReceiverTypeName(ReceiverConfig::Type type) {
  switch (type) {
    case ReceiverConfig::Type::kSlack:
      return "slack";
    case ReceiverConfig::Type::kWebhook:
      return "webhook";
    case ReceiverConfig::Type::kAlertmanager:
      return "alertmanager";
  }
  return "";
}

constexpr bool EveryReceiverTypeListed() {
  for (std::size_t i = 0; i < std::size(kReceiverTypes); ++i) {
    if (kReceiverTypes[i] != static_cast<ReceiverConfig::Type>(i)) return false;
  }
  return ReceiverTypeName(static_cast<ReceiverConfig::Type>(std::size(kReceiverTypes))).empty();
}
static_assert(EveryReceiverTypeListed(),
              "kReceiverTypes must list every ReceiverConfig::Type, in order");

// The type named `name`, or none.
constexpr std::optional<ReceiverConfig::Type> ReceiverTypeNamed(std::string_view name) {
  for (ReceiverConfig::Type type : kReceiverTypes) {
    if (ReceiverTypeName(type) == name) return type;
  }
  return std::nullopt;
}

// "slack, webhook, alertmanager": what an error lists as allowed.
inline std::string ReceiverTypeNames() {
  std::string out;
  for (ReceiverConfig::Type type : kReceiverTypes) {
    if (!out.empty()) out += ", ";
    out += ReceiverTypeName(type);
  }
  return out;
}

// A fix shipped in the config (`fixes:`), fleet-wide.
struct FixConfig {
  std::string signature;  // a signature or a rule id
  std::string version;    // fixed in; empty: fixed now
  std::string note;
  std::string by;
  int line = 0;
};

struct AlertsConfig {
  bool enabled = false;  // the `alerts:` section is present
  int64_t group_wait_ms = 10000;
  int64_t quiet_for_ms = 24LL * 3600 * 1000;
  int64_t repeat_interval_ms = 4LL * 3600 * 1000;
  // A signature is resolved after this many successful runs in a row of the job (source) it last
  // failed in; 0: only by a fix or quiet_for (signature_tracker.h says what a run is).
  int64_t resolve_after_runs = 3;
  std::string min_severity = "error";
  std::string host;  // names this agent in alerts; default: the host name
  std::vector<ReceiverConfig> receivers;
  // Package versions per source id, for streams that do not print them.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>
      source_versions;
};

struct Config {
  std::string file;  // the config file this was loaded from

  std::vector<std::string> rule_paths;  // folders of rule YAML, absolute
  int context_idle_flush_ms = 2000;     // a stream quiet this long settles pending context

  FramingOptions framing;  // the `framing:` section

  std::string http_address = "127.0.0.1";
  uint16_t http_port = 9464;
  bool http_listen_set = false;  // the file set http.listen (`watch -c` serves metrics only then)
  // A file holding the bearer token of the admin routes that change state (POST /-/reload, the
  // signature lifecycle's); empty: with alerts, one generated into the state folder, else those
  // routes are refused (agent/api/admin_token.h). Absolute.
  std::string http_admin_token_file;

  ReloadConfig reload;

  std::string log_level = "info";  // trace | debug | info | warn | error

  // Descriptors all file sources may hold together; 0: auto (half the descriptor limit).
  std::size_t max_open_files = 0;

  StateConfig state;
  // Unrecognised errors (agent/discover/): error lines no rule explains, mined into templates.
  bool discover_enabled = true;
  std::size_t discover_max_templates = 1000;
  uint64_t discover_alert_after = 3;     // occurrences before a template is an alert event
  std::size_t discover_max_series = 20;  // per-template metric series, most frequent first

  std::vector<FileSourceConfig> file_sources;
  std::vector<NetSourceConfig> net_sources;
  std::vector<StdinSourceConfig> stdin_sources;
  std::vector<FifoSourceConfig> fifo_sources;

  AlertsConfig alerts;
  std::vector<FixConfig> fixes;
  std::string fixes_file;  // `fixes: FILE`: where they came from (watched by reload.watch)
};

// Every source type's list in Config, once: the registration entry of a source type. BuildSources
// (daemon/sources.cc), reload's comparison of sections (daemon/source_set.cc) and the counters
// kept across a restart (daemon/agent.cc) walk this and name no list; a type listed here without
// a BuildSource overload does not compile, and a list missing here fails the test
// SourceTypes.EveryTypeTheLoaderAcceptsIsRegistered (tests/unit/daemon/source_types_test.cc).
inline constexpr auto kSourceLists = std::make_tuple(&Config::file_sources, &Config::net_sources,
                                                     &Config::stdin_sources, &Config::fifo_sources);

// Calls `visit(list)` with each source type's list of `config` (const or not), in the order of
// kSourceLists.
template <typename ConfigT, typename Visit>
void ForEachSourceList(ConfigT& config, Visit&& visit) {
  std::apply([&](auto... member) { (visit(config.*member), ...); }, kSourceLists);
}

}  // namespace faultline

#endif  // FAULTLINE_CONFIG_CONFIG_H_
