// The config's sources section (config_reader.h): a list of sources, each with an id unique in
// the file and a type that decides its other keys. A new source type is one branch in
// ParseSource and one Parse*Source here, beside its *SourceConfig in config.h.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/config/config_reader.h"

namespace faultline {
namespace {

// Polling is only the fallback when inotify stays silent (NFS, overlayfs, watch limits): faster
// than 10 ms burns CPU for nothing, slower than a minute makes a live log look dead.
constexpr int64_t kMinPollIntervalMs = 10;
constexpr int64_t kMaxPollIntervalMs = 60000;
// A rotated file stays open this long after its last write, for writers that reopen late.
constexpr int64_t kMinRotateWaitMs = 100;
constexpr int64_t kMaxRotateWaitMs = 24 * 3600 * 1000;
// The full walk is a safety net for missed inotify events; more often than every 100 ms it would
// cost what inotify saves.
constexpr int64_t kMinRescanIntervalMs = 100;
constexpr int64_t kMaxRescanIntervalMs = 24 * 3600 * 1000;
// A socket file's path must fit sockaddr_un::sun_path (108 bytes on Linux, with its NUL).
constexpr std::size_t kMaxSocketPathBytes = 107;
// Connections or peers one network source holds; each costs a descriptor (stream types) and a
// stream's matching state, and the descriptor limit is shared with files and HTTP.
constexpr int64_t kMaxNetStreams = 65536;
// A connection closed after less than a second of silence would cut senders that pause between
// writes.
constexpr int64_t kMinIdleTimeoutMs = 1000;

std::optional<NetTransport> NetTransportNamed(std::string_view type) {
  if (type == "tcp") return NetTransport::kTcp;
  if (type == "udp") return NetTransport::kUdp;
  if (type == "unix") return NetTransport::kUnix;
  if (type == "unixgram") return NetTransport::kUnixgram;
  return std::nullopt;
}

// Octal permission bits, as chmod takes them: 660, 0660 or 0o660.
std::optional<uint32_t> FileMode(std::string_view text) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'o' || text[1] == 'O')) {
    text.remove_prefix(2);
  }
  if (text.empty() || text.size() > 4) return std::nullopt;
  uint32_t mode = 0;
  for (char c : text) {
    if (c < '0' || c > '7') return std::nullopt;
    mode = mode * 8 + static_cast<uint32_t>(c - '0');
  }
  if (mode > 0777) return std::nullopt;
  return mode;
}

// Reads the sources section: every entry checked, the valid ones added to the Config.
class SourceSection : public ConfigReader {
 public:
  // Source id -> the line that first used it.
  using SourceIds = std::map<std::string, int, std::less<>>;

  explicit SourceSection(const ConfigReader& reader) : ConfigReader(reader) {}

  void ParseSources(const YamlField& section, Config* config) {
    const std::string path = "sources";
    if (section.value.IsNull()) return;  // `sources:` with nothing under it: no sources
    if (!section.value.IsSequence()) {
      Fail(section.key, path, "expected a list, got " + YamlKindName(section.value));
      return;
    }
    SourceIds ids;
    for (std::size_t i = 0; i < section.value.size(); ++i) {
      ParseSource(section.value[i], IndexKey(path, i), &ids, config);
    }
  }

  // The source types and the keys each allows; `id` and `type` are common to all.
  static constexpr std::string_view kSourceTypes = "file, stdin, fifo, tcp, udp, unix, unixgram";

  void ParseSource(const YAML::Node& node, const std::string& path, SourceIds* ids,
                   Config* config) {
    if (!node.IsMap()) {
      Fail(node, path, "expected a map with id and type, got " + YamlKindName(node));
      return;
    }
    // The type decides which keys are allowed, so find it before checking the rest.
    const int line = YamlLine(node);
    std::optional<std::string> type;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == "type") {
        type = Scalar(YamlField{"type", it->first, it->second}, JoinKey(path, "type"));
        if (!type) return;
        if (const std::optional<NetTransport> net = NetTransportNamed(*type)) {
          ParseNetSource(node, path, line, *net, ids, config);
          return;
        }
        if (*type != "file" && *type != "stdin" && *type != "fifo") {
          Fail(it->first, JoinKey(path, "type"),
               "unknown source type '" + *type + "'; allowed: " + std::string(kSourceTypes));
          return;
        }
        break;
      }
    }
    if (!type) {
      // Still check the rest as a file source, the common case: one round trip shows every
      // problem of the entry.
      Fail(line, JoinKey(path, "type"),
           "required key is missing; allowed: " + std::string(kSourceTypes));
      ParseFileSource(node, path, line, ids, /*ok=*/false, config);
    } else if (*type == "file") {
      ParseFileSource(node, path, line, ids, /*ok=*/true, config);
    } else if (*type == "stdin") {
      ParseStdinSource(node, path, line, ids, config);
    } else {
      ParseFifoSource(node, path, line, ids, config);
    }
  }

  // The `id` of a source: valid and unique; false (reported) when not.
  bool ParseSourceId(const YamlField& f, const std::string& key, SourceIds* ids, std::string* id) {
    std::optional<std::string> text = Scalar(f, key);
    if (!text) return false;
    if (!IsValidSourceId(*text)) {
      Fail(f.key, key, "'" + *text + "' is not a valid id: use letters, digits, '_', '.' and '-'");
      return false;
    }
    if (auto [seen, inserted] = ids->emplace(*text, YamlLine(f.key)); !inserted) {
      Fail(f.key, key,
           "duplicate source id '" + *text + "'; first used on line " +
               std::to_string(seen->second));
      return false;
    }
    *id = *text;
    return true;
  }

  void ParseFileSource(const YAML::Node& node, const std::string& path, int line, SourceIds* ids,
                       bool ok, Config* config) {
    FileSourceConfig source;
    bool has_id = false;
    bool has_paths = false;
    for (const YamlField& f :
         Fields(node, path,
                {"id", "type", "paths", "exclude", "start_at", "poll_interval_ms",
                 "rescan_interval_ms", "rotate_wait_ms", "partial_flush_ms"})) {
      const std::string key = JoinKey(path, f.name);
      if (f.name == "id") {
        has_id = true;
        ok = ParseSourceId(f, key, ids, &source.id) && ok;
      } else if (f.name == "paths") {
        has_paths = true;
        if (auto list = StringList(f, key)) {
          for (const std::string& p : *list) source.paths.push_back(Resolve(p));
        } else {
          ok = false;
        }
      } else if (f.name == "exclude") {
        if (auto list = StringList(f, key, /*allow_empty=*/true)) {
          source.exclude.clear();
          // A pattern with a '/' is matched against whole paths, so it is resolved like one.
          for (const std::string& p : *list) {
            source.exclude.push_back(p.find('/') == std::string::npos ? p : Resolve(p));
          }
        } else {
          ok = false;
        }
      } else if (f.name == "rescan_interval_ms") {
        if (auto v = Integer(f, key, kMinRescanIntervalMs, kMaxRescanIntervalMs)) {
          source.rescan_interval_ms = static_cast<int>(*v);
        } else {
          ok = false;
        }
      } else if (f.name == "start_at") {
        if (auto v = Choice(f, key, {"beginning", "end"})) {
          source.start_at = *v == "beginning" ? StartAt::kBeginning : StartAt::kEnd;
        } else {
          ok = false;
        }
      } else if (f.name == "poll_interval_ms") {
        if (auto v = Integer(f, key, kMinPollIntervalMs, kMaxPollIntervalMs)) {
          source.poll_interval_ms = static_cast<int>(*v);
        } else {
          ok = false;
        }
      } else if (f.name == "partial_flush_ms") {
        if (auto v = Integer(f, key, 0, kMaxIntMs)) {
          source.partial_flush_ms = static_cast<int>(*v);
        } else {
          ok = false;
        }
      } else if (f.name == "rotate_wait_ms") {
        if (auto v = Integer(f, key, kMinRotateWaitMs, kMaxRotateWaitMs)) {
          source.rotate_wait_ms = static_cast<int>(*v);
        } else {
          ok = false;
        }
      }
    }
    if (!has_id) {
      Fail(line, JoinKey(path, "id"), "required key is missing");
      ok = false;
    }
    if (!has_paths) {
      Fail(line, JoinKey(path, "paths"), "required key is missing");
      ok = false;
    }
    if (ok) config->file_sources.push_back(std::move(source));
  }

  // A source of `type: tcp | udp | unix | unixgram` (NetSourceConfig).
  void ParseNetSource(const YAML::Node& node, const std::string& path, int line,
                      NetTransport transport, SourceIds* ids, Config* config) {
    NetSourceConfig source;
    source.transport = transport;
    const bool local = source.local();
    const std::string_view where_key = local ? "path" : "listen";
    const std::string_view cap_key = source.stream() ? "max_connections" : "max_peers";
    bool ok = true;
    bool has_id = false;
    bool has_where = false;
    const std::vector<YamlField> fields =
        local ? Fields(node, path,
                       {"id", "type", "path", "mode", "format", cap_key, "idle_timeout_ms"})
              : Fields(node, path, {"id", "type", "listen", "format", cap_key, "idle_timeout_ms"});
    for (const YamlField& f : fields) {
      const std::string key = JoinKey(path, f.name);
      if (f.name == "id") {
        has_id = true;
        ok = ParseSourceId(f, key, ids, &source.id) && ok;
      } else if (f.name == "listen" && !local) {
        has_where = true;
        std::optional<std::string> text = Scalar(f, key);
        if (!text) {
          ok = false;
        } else if (Result<ListenEndpoint> listen = ParseListen(*text); !listen.ok()) {
          Fail(f.key, key, "'" + *text + "': " + listen.errors().front().message);
          ok = false;
        } else {
          source.host = listen.value().host;
          source.port = listen.value().port;
        }
      } else if (f.name == "path" && local) {
        has_where = true;
        std::optional<std::string> text = Scalar(f, key);
        if (!text || text->empty()) {
          if (text) Fail(f.key, key, "the socket path must not be empty");
          ok = false;
          continue;
        }
        source.path = Resolve(*text);
        if (source.path.size() > kMaxSocketPathBytes) {
          Fail(f.key, key,
               "'" + source.path + "' is " + std::to_string(source.path.size()) +
                   " bytes long; a socket path may have at most " +
                   std::to_string(kMaxSocketPathBytes));
          ok = false;
        }
      } else if (f.name == "mode") {
        std::optional<std::string> text = Scalar(f, key);
        std::optional<uint32_t> mode = text ? FileMode(*text) : std::nullopt;
        if (!mode) {
          if (text) {
            Fail(
                YamlLine(f.key), key,
                "expected permission bits in octal, 0000 to 0777 (e.g. 0660), got '" + *text + "'");
          }
          ok = false;
        } else {
          source.mode = *mode;
        }
      } else if (f.name == "format") {
        if (auto v = Choice(f, key, {"plain", "syslog"})) {
          source.format = *v == "syslog" ? NetFormat::kSyslog : NetFormat::kPlain;
        } else {
          ok = false;
        }
      } else if (f.name == cap_key) {
        if (auto v = Integer(f, key, 1, kMaxNetStreams)) {
          source.max_streams = static_cast<std::size_t>(*v);
        } else {
          ok = false;
        }
      } else if (f.name == "idle_timeout_ms") {
        if (auto v = Integer(f, key, kMinIdleTimeoutMs, kMaxIntMs)) {
          source.idle_timeout_ms = static_cast<int>(*v);
        } else {
          ok = false;
        }
      }
    }
    if (!has_id) {
      Fail(line, JoinKey(path, "id"), "required key is missing");
      ok = false;
    }
    if (!has_where) {
      Fail(line, JoinKey(path, where_key), "required key is missing");
      ok = false;
    }
    if (ok) config->net_sources.push_back(std::move(source));
  }

  void ParseStdinSource(const YAML::Node& node, const std::string& path, int line, SourceIds* ids,
                        Config* config) {
    StdinSourceConfig source;
    bool ok = true;
    bool has_id = false;
    for (const YamlField& f : Fields(node, path, {"id", "type"})) {
      if (f.name == "id") {
        has_id = true;
        ok = ParseSourceId(f, JoinKey(path, f.name), ids, &source.id) && ok;
      }
    }
    if (!has_id) {
      Fail(line, JoinKey(path, "id"), "required key is missing");
      ok = false;
    }
    // There is one standard input: two sources would each get an arbitrary part of it.
    if (stdin_line_ != 0) {
      Fail(line, JoinKey(path, "type"),
           "only one source can read standard input; the first is on line " +
               std::to_string(stdin_line_));
      ok = false;
    } else {
      stdin_line_ = line;
    }
    if (ok) config->stdin_sources.push_back(std::move(source));
  }

  void ParseFifoSource(const YAML::Node& node, const std::string& path, int line, SourceIds* ids,
                       Config* config) {
    FifoSourceConfig source;
    bool ok = true;
    bool has_id = false;
    bool has_path = false;
    for (const YamlField& f : Fields(node, path, {"id", "type", "path"})) {
      const std::string key = JoinKey(path, f.name);
      if (f.name == "id") {
        has_id = true;
        ok = ParseSourceId(f, key, ids, &source.id) && ok;
      } else if (f.name == "path") {
        has_path = true;
        std::optional<std::string> text = Scalar(f, key);
        if (!text || text->empty()) {
          if (text) Fail(f.key, key, "expected a path, got an empty string");
          ok = false;
          continue;
        }
        source.path = Resolve(*text);
        // One pipe read by two sources would split its lines between them at random.
        if (auto [seen, inserted] = fifo_lines_.emplace(source.path, YamlLine(f.key)); !inserted) {
          Fail(f.key, key,
               "the named pipe " + source.path + " is already read by the source on line " +
                   std::to_string(seen->second));
          ok = false;
        }
      }
    }
    if (!has_id) {
      Fail(line, JoinKey(path, "id"), "required key is missing");
      ok = false;
    }
    if (!has_path) {
      Fail(line, JoinKey(path, "path"), "required key is missing");
      ok = false;
    }
    if (ok) config->fifo_sources.push_back(std::move(source));
  }

 private:
  int stdin_line_ = 0;                                  // of the stdin source, 0: none yet
  std::map<std::string, int, std::less<>> fifo_lines_;  // fifo path -> line of its source
};

}  // namespace

void ReadSourcesSection(const ConfigReader& reader, const YamlField& section, Config* config) {
  SourceSection(reader).ParseSources(section, config);
}

}  // namespace faultline
