#include "agent/config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "agent/core/yaml_document.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

// Below 1 KiB ordinary compiler lines would be cut; above 64 MiB one runaway line (a minified JSON
// blob, a binary dumped to stdout) could hold that much memory per stream.
constexpr int64_t kMinMaxLineBytes = int64_t{1} << 10;
constexpr int64_t kMaxMaxLineBytes = int64_t{64} << 20;
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
// Fewer than 4 descriptors would reopen files on every write; more than 2^20 is above what a
// kernel gives one process (fs.nr_open).
constexpr int64_t kMinMaxOpenFiles = 4;
constexpr int64_t kMaxMaxOpenFiles = int64_t{1} << 20;
constexpr int64_t kMaxIntMs = INT32_MAX;
// Checkpoints more often than every 10 ms would cost more than the lines they protect; more than
// an hour apart, a crash would replay an hour of logs.
constexpr int64_t kMinCheckpointIntervalMs = 10;
constexpr int64_t kMaxCheckpointIntervalMs = 3600 * 1000;
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

// Templates cost 2 to 5 KiB each (discover_eval memory); a million would be GiBs.
constexpr int64_t kMaxTemplates = 100000;
// Per-template series are for the few templates worth a dashboard, not a template catalogue.
constexpr int64_t kMaxTemplateSeries = 1000;
// A reload compiles a rule pack: a second covers a big pack on a slow machine, ten minutes is a
// hang. Memory from 16 MiB (a small pack) to 64 GiB.
constexpr int64_t kMinReloadTimeoutMs = 1000;
constexpr int64_t kMaxReloadTimeoutMs = 600000;
constexpr int64_t kMinReloadMemoryBytes = int64_t{16} << 20;
constexpr int64_t kMaxReloadMemoryBytes = int64_t{64} << 30;

// One `key: value` of a YAML map, with the nodes kept for their line numbers.
struct Field {
  std::string name;
  YAML::Node key;
  YAML::Node value;
};

int LineOf(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;  // yaml-cpp counts lines from 0
}

std::string Join(const std::string& path, std::string_view name) {
  if (path.empty()) return std::string(name);
  return path + "." + std::string(name);
}

std::string Index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string ListNames(std::initializer_list<std::string_view> names) {
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::string KindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "a single value";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

bool IsValidSourceId(std::string_view id) {
  if (id.empty()) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Splits `host:port` or `[ipv6]:port`. On failure returns false and says why in `why`.
bool ParseListen(std::string_view text, std::string* host, uint16_t* port, std::string* why) {
  std::string_view host_part;
  std::string_view port_part;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) {
      *why = "missing ']' after the IPv6 address";
      return false;
    }
    host_part = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (rest.empty() || rest.front() != ':') {
      *why = "expected host:port, e.g. [::1]:9464";
      return false;
    }
    port_part = rest.substr(1);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      *why = "expected host:port, e.g. 127.0.0.1:9464";
      return false;
    }
    host_part = text.substr(0, colon);
    port_part = text.substr(colon + 1);
    if (host_part.find(':') != std::string_view::npos) {
      *why = "an IPv6 address must be in brackets, e.g. [::1]:9464";
      return false;
    }
  }
  if (host_part.empty()) {
    *why = "the host is empty; use 0.0.0.0 or [::] to listen on every interface";
    return false;
  }
  unsigned value = 0;
  const char* begin = port_part.data();
  const char* end = begin + port_part.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (port_part.empty() || ec != std::errc() || ptr != end || value < 1 || value > 65535) {
    *why = "the port must be a number from 1 to 65535, got '" + std::string(port_part) + "'";
    return false;
  }
  *host = std::string(host_part);
  *port = static_cast<uint16_t>(value);
  return true;
}

// Walks one parsed document, filling a Config and collecting every problem on the way. Never
// stops at the first error: each section is checked independently.
class ConfigParser {
 public:
  // Source id -> the line that first used it.
  using SourceIds = std::map<std::string, int, std::less<>>;

  ConfigParser(std::string file, fs::path base_dir)
      : file_(std::move(file)), base_dir_(std::move(base_dir)) {}

  void Parse(const YAML::Node& root, Config* config) {
    config->rule_paths = {Resolve("rules")};
    config->state.dir = Resolve("state");
    if (!root.IsMap() && !root.IsNull()) {
      AddError(LineOf(root), "", "the config must be a map of sections, got " + KindName(root));
      return;
    }
    const std::vector<Field> fields =
        Fields(root, "", {"rules", "framing", "http", "log", "limits", "state", "discover",
                          "reload", "sources", "alerts", "fixes"});
    for (const Field& f : fields) {
      if (f.name == "rules") ParseRules(f, config);
      if (f.name == "framing") ParseFraming(f, config);
      if (f.name == "http") ParseHttp(f, config);
      if (f.name == "log") ParseLog(f, config);
      if (f.name == "limits") ParseLimits(f, config);
      if (f.name == "state") ParseState(f, config);
      if (f.name == "discover") ParseDiscover(f, config);
      if (f.name == "reload") ParseReload(f, config);
      if (f.name == "sources") ParseSources(f, config);
      if (f.name == "alerts") ParseAlerts(f, config);
      if (f.name == "fixes") ParseFixes(f, config);
    }
  }

  ErrorList TakeErrors() { return std::move(errors_); }

 private:
  void AddError(int line, std::string key, std::string message) {
    errors_.push_back(Error{.file = file_,
                            .line = line,
                            .rule_id = "",
                            .key = std::move(key),
                            .message = std::move(message)});
  }

  // The entries of a map in file order. Reports keys outside `allowed`, duplicate keys, and
  // non-map values; a null value (`http:` with nothing under it) is an empty map.
  std::vector<Field> Fields(const YAML::Node& node, const std::string& path,
                            std::initializer_list<std::string_view> allowed) {
    std::vector<Field> fields;
    if (node.IsNull()) return fields;
    if (!node.IsMap()) {
      AddError(LineOf(node), path, "expected a map, got " + KindName(node));
      return fields;
    }
    std::map<std::string, int, std::less<>> first_line;
    for (auto it = node.begin(); it != node.end(); ++it) {
      // Copies, not references: the iterator's operator-> returns a temporary.
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      if (!key.IsScalar()) {
        AddError(LineOf(key), path, "a key must be a plain name, got " + KindName(key));
        continue;
      }
      const std::string name = key.Scalar();
      const std::string key_path = Join(path, name);
      bool known = false;
      for (std::string_view a : allowed) known = known || a == name;
      if (!known) {
        AddError(LineOf(key), key_path, "unknown key; allowed here: " + ListNames(allowed));
        continue;
      }
      auto [seen, inserted] = first_line.emplace(name, LineOf(key));
      if (!inserted) {
        AddError(LineOf(key), key_path,
                 "duplicate key; first set on line " + std::to_string(seen->second));
        continue;
      }
      fields.push_back(Field{name, key, value});
    }
    return fields;
  }

  std::optional<std::string> Scalar(const Field& f, const std::string& path) {
    if (!f.value.IsScalar()) {
      AddError(LineOf(f.key), path, "expected a single value, got " + KindName(f.value));
      return std::nullopt;
    }
    return f.value.Scalar();
  }

  // A decimal integer in [min, max]. yaml-cpp's own conversion would also take hex and octal
  // spellings and silently wrap values that do not fit; from_chars does neither.
  std::optional<int64_t> Integer(const Field& f, const std::string& path, int64_t min,
                                 int64_t max) {
    std::optional<std::string> text = Scalar(f, path);
    if (!text) return std::nullopt;
    int64_t value = 0;
    const char* end = text->data() + text->size();
    auto [ptr, ec] = std::from_chars(text->data(), end, value);
    const std::string range = "from " + std::to_string(min) + " to " + std::to_string(max);
    if (text->empty() || ec != std::errc() || ptr != end) {
      AddError(LineOf(f.key), path, "expected a whole number " + range + ", got '" + *text + "'");
      return std::nullopt;
    }
    if (value < min || value > max) {
      AddError(LineOf(f.key), path, "must be " + range + ", got " + std::to_string(value));
      return std::nullopt;
    }
    return value;
  }

  std::optional<std::string> Choice(const Field& f, const std::string& path,
                                    std::initializer_list<std::string_view> allowed) {
    std::optional<std::string> text = Scalar(f, path);
    if (!text) return std::nullopt;
    for (std::string_view a : allowed) {
      if (*text == a) return text;
    }
    AddError(LineOf(f.key), path, "'" + *text + "' is not one of: " + ListNames(allowed));
    return std::nullopt;
  }

  // A list of non-empty strings, itself non-empty unless `allow_empty`.
  std::optional<std::vector<std::string>> StringList(const Field& f, const std::string& path,
                                                     bool allow_empty = false) {
    if (!f.value.IsSequence()) {
      AddError(LineOf(f.key), path, "expected a list, got " + KindName(f.value));
      return std::nullopt;
    }
    if (f.value.size() == 0 && !allow_empty) {
      AddError(LineOf(f.key), path, "the list must not be empty");
      return std::nullopt;
    }
    std::vector<std::string> out;
    bool ok = true;
    for (std::size_t i = 0; i < f.value.size(); ++i) {
      const YAML::Node item = f.value[i];
      if (!item.IsScalar() || item.Scalar().empty()) {
        AddError(LineOf(item), Index(path, i),
                 "expected a non-empty string, got " +
                     (item.IsScalar() ? std::string("an empty string") : KindName(item)));
        ok = false;
        continue;
      }
      out.push_back(item.Scalar());
    }
    if (!ok) return std::nullopt;
    return out;
  }

  // Relative paths mean "next to the config file", so the agent behaves the same whatever its
  // working directory. Globs stay text: lexical normalisation leaves `*`, `?` and `**` alone.
  std::string Resolve(const std::string& path) const {
    fs::path p(path);
    if (!p.is_absolute()) p = base_dir_ / p;
    return p.lexically_normal().string();
  }

  void ParseRules(const Field& section, Config* config) {
    const std::string path = "rules";
    for (const Field& f : Fields(section.value, path, {"paths", "context_idle_flush_ms"})) {
      const std::string key = Join(path, f.name);
      if (f.name == "paths") {
        if (auto list = StringList(f, key)) {
          config->rule_paths.clear();
          for (const std::string& p : *list) config->rule_paths.push_back(Resolve(p));
        }
      } else if (f.name == "context_idle_flush_ms") {
        if (auto v = Integer(f, key, 1, kMaxIntMs)) {
          config->context_idle_flush_ms = static_cast<int>(*v);
        }
      }
    }
  }

  void ParseFraming(const Field& section, Config* config) {
    const std::string path = "framing";
    for (const Field& f : Fields(section.value, path, {"max_line_bytes"})) {
      if (auto v = Integer(f, Join(path, f.name), kMinMaxLineBytes, kMaxMaxLineBytes)) {
        config->max_line_bytes = static_cast<std::size_t>(*v);
      }
    }
  }

  void ParseHttp(const Field& section, Config* config) {
    const std::string path = "http";
    for (const Field& f : Fields(section.value, path, {"listen", "admin_token_file"})) {
      const std::string key = Join(path, f.name);
      std::optional<std::string> text = Scalar(f, key);
      if (!text) continue;
      if (f.name == "admin_token_file") {
        if (text->empty()) {
          AddError(LineOf(f.key), key, "expected a file name");
        } else {
          config->http_admin_token_file = Resolve(*text);
        }
        continue;
      }
      std::string why;
      if (!ParseListen(*text, &config->http_address, &config->http_port, &why)) {
        AddError(LineOf(f.key), key, "'" + *text + "': " + why);
      } else {
        config->http_listen_set = true;
      }
    }
  }

  void ParseLog(const Field& section, Config* config) {
    const std::string path = "log";
    for (const Field& f : Fields(section.value, path, {"level"})) {
      if (auto v = Choice(f, Join(path, f.name), {"trace", "debug", "info", "warn", "error"})) {
        config->log_level = *v;
      }
    }
  }

  void ParseLimits(const Field& section, Config* config) {
    const std::string path = "limits";
    for (const Field& f : Fields(section.value, path, {"max_open_files"})) {
      const std::string key = Join(path, f.name);
      const std::string text = f.value.IsScalar() ? f.value.Scalar() : "";
      if (text == "auto") {
        config->max_open_files = 0;
      } else if (!text.empty() && text.find_first_not_of("0123456789-+") != std::string::npos) {
        AddError(LineOf(f.key), key,
                 "expected auto or a whole number from " + std::to_string(kMinMaxOpenFiles) +
                     " to " + std::to_string(kMaxMaxOpenFiles) + ", got '" + text + "'");
      } else if (auto v = Integer(f, key, kMinMaxOpenFiles, kMaxMaxOpenFiles)) {
        config->max_open_files = static_cast<std::size_t>(*v);
      }
    }
  }

  void ParseState(const Field& section, Config* config) {
    const std::string path = "state";
    for (const Field& f : Fields(section.value, path, {"dir", "checkpoint_interval_ms"})) {
      const std::string key = Join(path, f.name);
      if (f.name == "dir") {
        std::optional<std::string> dir = Scalar(f, key);
        if (dir && dir->empty()) {
          AddError(LineOf(f.key), key, "must not be empty");
        } else if (dir) {
          config->state.dir = Resolve(*dir);
        }
      } else if (f.name == "checkpoint_interval_ms") {
        if (auto v = Integer(f, key, kMinCheckpointIntervalMs, kMaxCheckpointIntervalMs)) {
          config->state.checkpoint_interval_ms = static_cast<int>(*v);
        }
      }
    }
  }

  void ParseDiscover(const Field& section, Config* config) {
    const std::string path = "discover";
    for (const Field& f : Fields(section.value, path,
                                 {"enabled", "max_templates", "alert_after", "max_series"})) {
      const std::string key = Join(path, f.name);
      if (f.name == "enabled") {
        if (auto v = Choice(f, key, {"true", "false"})) config->discover_enabled = *v == "true";
      } else if (f.name == "max_templates") {
        if (auto v = Integer(f, key, 1, kMaxTemplates)) {
          config->discover_max_templates = static_cast<std::size_t>(*v);
        }
      } else if (f.name == "alert_after") {
        if (auto v = Integer(f, key, 1, INT32_MAX)) {
          config->discover_alert_after = static_cast<uint64_t>(*v);
        }
      } else if (f.name == "max_series") {
        if (auto v = Integer(f, key, 0, kMaxTemplateSeries)) {
          config->discover_max_series = static_cast<std::size_t>(*v);
        }
      }
    }
  }

  void ParseReload(const Field& section, Config* config) {
    const std::string path = "reload";
    for (const Field& f :
         Fields(section.value, path, {"watch", "timeout_ms", "max_memory_bytes"})) {
      const std::string key = Join(path, f.name);
      if (f.name == "watch") {
        if (auto v = Choice(f, key, {"true", "false"})) config->reload.watch = *v == "true";
      } else if (f.name == "timeout_ms") {
        if (auto v = Integer(f, key, kMinReloadTimeoutMs, kMaxReloadTimeoutMs)) {
          config->reload.timeout_ms = static_cast<int>(*v);
        }
      } else if (f.name == "max_memory_bytes") {
        if (auto v = Integer(f, key, kMinReloadMemoryBytes, kMaxReloadMemoryBytes)) {
          config->reload.max_memory_bytes = static_cast<std::size_t>(*v);
        }
      }
    }
  }

  void ParseSources(const Field& section, Config* config) {
    const std::string path = "sources";
    if (section.value.IsNull()) return;  // `sources:` with nothing under it: no sources
    if (!section.value.IsSequence()) {
      AddError(LineOf(section.key), path, "expected a list, got " + KindName(section.value));
      return;
    }
    SourceIds ids;
    for (std::size_t i = 0; i < section.value.size(); ++i) {
      ParseSource(section.value[i], Index(path, i), &ids, config);
    }
  }

  // The source types and the keys each allows; `id` and `type` are common to all.
  static constexpr std::string_view kSourceTypes =
      "file, stdin, fifo, tcp, udp, unix, unixgram";

  void ParseSource(const YAML::Node& node, const std::string& path, SourceIds* ids,
                   Config* config) {
    if (!node.IsMap()) {
      AddError(LineOf(node), path, "expected a map with id and type, got " + KindName(node));
      return;
    }
    // The type decides which keys are allowed, so find it before checking the rest.
    const int line = LineOf(node);
    std::optional<std::string> type;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == "type") {
        type = Scalar(Field{"type", it->first, it->second}, Join(path, "type"));
        if (!type) return;
        if (const std::optional<NetTransport> net = NetTransportNamed(*type)) {
          ParseNetSource(node, path, line, *net, ids, config);
          return;
        }
        if (*type != "file" && *type != "stdin" && *type != "fifo") {
          AddError(LineOf(it->first), Join(path, "type"),
                   "unknown source type '" + *type + "'; allowed: " + std::string(kSourceTypes));
          return;
        }
        break;
      }
    }
    if (!type) {
      // Still check the rest as a file source, the common case: one round trip shows every
      // problem of the entry.
      AddError(line, Join(path, "type"),
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
  bool ParseSourceId(const Field& f, const std::string& key, SourceIds* ids, std::string* id) {
    std::optional<std::string> text = Scalar(f, key);
    if (!text) return false;
    if (!IsValidSourceId(*text)) {
      AddError(LineOf(f.key), key,
               "'" + *text + "' is not a valid id: use letters, digits, '_', '.' and '-'");
      return false;
    }
    if (auto [seen, inserted] = ids->emplace(*text, LineOf(f.key)); !inserted) {
      AddError(LineOf(f.key), key,
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
    for (const Field& f :
         Fields(node, path,
                {"id", "type", "paths", "exclude", "start_at", "poll_interval_ms",
                 "rescan_interval_ms", "rotate_wait_ms", "partial_flush_ms"})) {
      const std::string key = Join(path, f.name);
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
      AddError(line, Join(path, "id"), "required key is missing");
      ok = false;
    }
    if (!has_paths) {
      AddError(line, Join(path, "paths"), "required key is missing");
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
    const std::vector<Field> fields =
        local ? Fields(node, path,
                       {"id", "type", "path", "mode", "format", cap_key, "idle_timeout_ms"})
              : Fields(node, path, {"id", "type", "listen", "format", cap_key, "idle_timeout_ms"});
    for (const Field& f : fields) {
      const std::string key = Join(path, f.name);
      if (f.name == "id") {
        has_id = true;
        ok = ParseSourceId(f, key, ids, &source.id) && ok;
      } else if (f.name == "listen" && !local) {
        has_where = true;
        std::optional<std::string> text = Scalar(f, key);
        std::string why;
        if (!text) {
          ok = false;
        } else if (!ParseListen(*text, &source.host, &source.port, &why)) {
          AddError(LineOf(f.key), key, "'" + *text + "': " + why);
          ok = false;
        }
      } else if (f.name == "path" && local) {
        has_where = true;
        std::optional<std::string> text = Scalar(f, key);
        if (!text || text->empty()) {
          if (text) AddError(LineOf(f.key), key, "the socket path must not be empty");
          ok = false;
          continue;
        }
        source.path = Resolve(*text);
        if (source.path.size() > kMaxSocketPathBytes) {
          AddError(LineOf(f.key), key,
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
            AddError(LineOf(f.key), key,
                     "expected permission bits in octal, 0000 to 0777 (e.g. 0660), got '" +
                         *text + "'");
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
      AddError(line, Join(path, "id"), "required key is missing");
      ok = false;
    }
    if (!has_where) {
      AddError(line, Join(path, where_key), "required key is missing");
      ok = false;
    }
    if (ok) config->net_sources.push_back(std::move(source));
  }

  void ParseStdinSource(const YAML::Node& node, const std::string& path, int line,
                        SourceIds* ids, Config* config) {
    StdinSourceConfig source;
    bool ok = true;
    bool has_id = false;
    for (const Field& f : Fields(node, path, {"id", "type"})) {
      if (f.name == "id") {
        has_id = true;
        ok = ParseSourceId(f, Join(path, f.name), ids, &source.id) && ok;
      }
    }
    if (!has_id) {
      AddError(line, Join(path, "id"), "required key is missing");
      ok = false;
    }
    // There is one standard input: two sources would each get an arbitrary part of it.
    if (stdin_line_ != 0) {
      AddError(line, Join(path, "type"),
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
    for (const Field& f : Fields(node, path, {"id", "type", "path"})) {
      const std::string key = Join(path, f.name);
      if (f.name == "id") {
        has_id = true;
        ok = ParseSourceId(f, key, ids, &source.id) && ok;
      } else if (f.name == "path") {
        has_path = true;
        std::optional<std::string> text = Scalar(f, key);
        if (!text || text->empty()) {
          if (text) AddError(LineOf(f.key), key, "expected a path, got an empty string");
          ok = false;
          continue;
        }
        source.path = Resolve(*text);
        // One pipe read by two sources would split its lines between them at random.
        if (auto [seen, inserted] = fifo_lines_.emplace(source.path, LineOf(f.key)); !inserted) {
          AddError(LineOf(f.key), key,
                   "the named pipe " + source.path + " is already read by the source on line " +
                       std::to_string(seen->second));
          ok = false;
        }
      }
    }
    if (!has_id) {
      AddError(line, Join(path, "id"), "required key is missing");
      ok = false;
    }
    if (!has_path) {
      AddError(line, Join(path, "path"), "required key is missing");
      ok = false;
    }
    if (ok) config->fifo_sources.push_back(std::move(source));
  }

  // `true` or `false`.
  std::optional<bool> Bool(const Field& f, const std::string& path) {
    std::optional<std::string> text = Scalar(f, path);
    if (!text) return std::nullopt;
    if (*text == "true") return true;
    if (*text == "false") return false;
    AddError(LineOf(f.key), path, "expected true or false, got '" + *text + "'");
    return std::nullopt;
  }

  // A file's content without surrounding white space: for secrets kept out of the config.
  std::optional<std::string> FileContent(const Field& f, const std::string& path,
                                         const std::string& file) {
    const std::string resolved = Resolve(file);
    std::ifstream in(resolved, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in || in.bad()) {
      AddError(LineOf(f.key), path, "cannot read '" + resolved + "': " + std::strerror(errno));
      return std::nullopt;
    }
    std::string content = text.str();
    const std::size_t begin = content.find_first_not_of(" \t\r\n");
    const std::size_t end = content.find_last_not_of(" \t\r\n");
    if (begin == std::string::npos) {
      AddError(LineOf(f.key), path, "'" + resolved + "' is empty");
      return std::nullopt;
    }
    return content.substr(begin, end - begin + 1);
  }

  // A Standard Webhooks secret: "whsec_" (optional) and base64 of 24..64 bytes.
  bool CheckWebhookSecret(const Field& f, const std::string& path, std::string_view secret) {
    if (secret.starts_with("whsec_")) secret.remove_prefix(6);
    std::size_t padding = 0;
    bool ok = !secret.empty() && secret.size() % 4 == 0;
    for (std::size_t i = 0; ok && i < secret.size(); ++i) {
      const char c = secret[i];
      if (c == '=') {
        ok = i + 2 >= secret.size();
        ++padding;
      } else {
        ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
             c == '+' || c == '/';
      }
    }
    const std::size_t bytes = ok ? secret.size() / 4 * 3 - padding : 0;
    if (!ok || bytes < 24 || bytes > 64) {
      AddError(LineOf(f.key), path,
               "a webhook secret is 'whsec_' followed by the base64 of 24 to 64 random bytes "
               "(Standard Webhooks), e.g. from: echo whsec_$(head -c 32 /dev/urandom | base64)");
      return false;
    }
    return true;
  }

  void ParseAlerts(const Field& section, Config* config) {
    const std::string path = "alerts";
    AlertsConfig& alerts = config->alerts;
    alerts.enabled = true;
    // group_wait up to an hour; quiet_for and repeat_interval from a second (tests) to 30 days.
    constexpr int64_t kMaxGroupWaitMs = 3600 * 1000;
    constexpr int64_t kMaxIntervalMs = 30LL * 24 * 3600 * 1000;
    for (const Field& f : Fields(section.value, path,
                                 {"group_wait_ms", "quiet_for_ms", "repeat_interval_ms",
                                  "resolve_after_runs", "min_severity", "host", "receivers",
                                  "source_versions"})) {
      const std::string key = Join(path, f.name);
      if (f.name == "group_wait_ms") {
        if (auto v = Integer(f, key, 0, kMaxGroupWaitMs)) alerts.group_wait_ms = *v;
      } else if (f.name == "quiet_for_ms") {
        if (auto v = Integer(f, key, 1000, kMaxIntervalMs)) alerts.quiet_for_ms = *v;
      } else if (f.name == "repeat_interval_ms") {
        if (auto v = Integer(f, key, 1000, kMaxIntervalMs)) alerts.repeat_interval_ms = *v;
      } else if (f.name == "resolve_after_runs") {
        if (auto v = Integer(f, key, 0, 1000)) alerts.resolve_after_runs = *v;
      } else if (f.name == "min_severity") {
        if (auto v = Choice(f, key, {"info", "warning", "error", "critical"})) {
          alerts.min_severity = *v;
        }
      } else if (f.name == "host") {
        if (auto v = Scalar(f, key)) alerts.host = *v;
      } else if (f.name == "receivers") {
        ParseReceivers(f, key, &alerts);
      } else if (f.name == "source_versions") {
        ParseSourceVersions(f, key, &alerts);
      }
    }
  }

  // source_versions: {source-id: {package: version, ...}, ...}: any keys, so read them directly.
  void ParseSourceVersions(const Field& section, const std::string& path, AlertsConfig* alerts) {
    if (section.value.IsNull()) return;
    if (!section.value.IsMap()) {
      AddError(LineOf(section.key), path, "expected a map of source id to {package: version}");
      return;
    }
    for (auto it = section.value.begin(); it != section.value.end(); ++it) {
      const YAML::Node source = it->first;
      const YAML::Node packages = it->second;
      const std::string source_path = Join(path, source.IsScalar() ? source.Scalar() : "?");
      if (!source.IsScalar() || !packages.IsMap()) {
        AddError(LineOf(source), source_path, "expected a source id and a map of package: version");
        continue;
      }
      std::vector<std::pair<std::string, std::string>> versions;
      for (auto p = packages.begin(); p != packages.end(); ++p) {
        if (!p->first.IsScalar() || !p->second.IsScalar() || p->second.Scalar().empty()) {
          AddError(LineOf(p->first), source_path, "expected package: version");
          continue;
        }
        versions.emplace_back(p->first.Scalar(), p->second.Scalar());
      }
      alerts->source_versions.emplace_back(source.Scalar(), std::move(versions));
    }
  }

  void ParseReceivers(const Field& section, const std::string& path, AlertsConfig* alerts) {
    if (section.value.IsNull()) return;
    if (!section.value.IsSequence()) {
      AddError(LineOf(section.key), path, "expected a list, got " + KindName(section.value));
      return;
    }
    std::map<std::string, int, std::less<>> names;
    for (std::size_t i = 0; i < section.value.size(); ++i) {
      ParseReceiver(section.value[i], Index(path, i), &names, alerts);
    }
  }

  void ParseReceiver(const YAML::Node& node, const std::string& path,
                     std::map<std::string, int, std::less<>>* names, AlertsConfig* alerts) {
    if (!node.IsMap()) {
      AddError(LineOf(node), path, "expected a map with name, type and url, got " + KindName(node));
      return;
    }
    ReceiverConfig r;
    r.line = LineOf(node);
    bool ok = true;
    bool has_type = false;
    for (const Field& f :
         Fields(node, path,
                {"name", "type", "url", "urls", "url_file", "secrets", "secret_files",
                 "github_secret", "github_secret_file", "headers", "send_resolved",
                 "min_severity", "rate_per_second", "burst", "connect_timeout_ms", "timeout_ms",
                 "give_up_after_ms"})) {
      const std::string key = Join(path, f.name);
      const auto fail = [&ok] { ok = false; };
      if (f.name == "name") {
        std::optional<std::string> name = Scalar(f, key);
        if (!name) {
          fail();
        } else if (!IsValidSourceId(*name)) {
          AddError(LineOf(f.key), key,
                   "'" + *name + "' is not a valid name: use letters, digits, '_', '.' and '-'");
          fail();
        } else if (auto [seen, inserted] = names->emplace(*name, LineOf(f.key)); !inserted) {
          AddError(LineOf(f.key), key,
                   "duplicate receiver name '" + *name + "'; first used on line " +
                       std::to_string(seen->second));
          fail();
        } else {
          r.name = *name;
        }
      } else if (f.name == "type") {
        has_type = true;
        const std::optional<std::string> v = Scalar(f, key);
        if (const auto type = v ? ReceiverTypeNamed(*v) : std::nullopt) {
          r.type = *type;
        } else {
          if (v) {
            AddError(LineOf(f.key), key, "'" + *v + "' is not one of: " + ReceiverTypeNames());
          }
          fail();
        }
      } else if (f.name == "url") {
        if (auto v = Scalar(f, key)) {
          r.urls.push_back(*v);
        } else {
          fail();
        }
      } else if (f.name == "urls") {
        if (auto list = StringList(f, key)) {
          r.urls.insert(r.urls.end(), list->begin(), list->end());
        } else {
          fail();
        }
      } else if (f.name == "url_file") {
        std::optional<std::string> file = Scalar(f, key);
        std::optional<std::string> url = file ? FileContent(f, key, *file) : std::nullopt;
        if (url) {
          r.urls.push_back(*url);
        } else {
          fail();
        }
      } else if (f.name == "secrets") {
        if (auto list = StringList(f, key)) {
          for (const std::string& secret : *list) {
            if (CheckWebhookSecret(f, key, secret)) r.secrets.push_back(secret);
            else fail();
          }
        } else {
          fail();
        }
      } else if (f.name == "secret_files") {
        if (auto list = StringList(f, key)) {
          for (const std::string& file : *list) {
            std::optional<std::string> secret = FileContent(f, key, file);
            if (secret && CheckWebhookSecret(f, key, *secret)) r.secrets.push_back(*secret);
            else fail();
          }
        } else {
          fail();
        }
      } else if (f.name == "github_secret") {
        if (auto v = Scalar(f, key)) r.github_secret = *v;
        else fail();
      } else if (f.name == "github_secret_file") {
        std::optional<std::string> file = Scalar(f, key);
        std::optional<std::string> secret = file ? FileContent(f, key, *file) : std::nullopt;
        if (secret) r.github_secret = *secret;
        else fail();
      } else if (f.name == "headers") {
        if (!f.value.IsMap()) {
          AddError(LineOf(f.key), key, "expected a map of header name to value");
          fail();
          continue;
        }
        for (auto it = f.value.begin(); it != f.value.end(); ++it) {
          if (!it->first.IsScalar() || !it->second.IsScalar() ||
              it->first.Scalar().find_first_of(":\r\n ") != std::string::npos ||
              it->second.Scalar().find_first_of("\r\n") != std::string::npos) {
            AddError(LineOf(it->first), key, "expected Header-Name: value on one line");
            fail();
            continue;
          }
          r.headers.emplace_back(it->first.Scalar(), it->second.Scalar());
        }
      } else if (f.name == "send_resolved") {
        if (auto v = Bool(f, key)) r.send_resolved = *v;
        else fail();
      } else if (f.name == "min_severity") {
        if (auto v = Choice(f, key, {"info", "warning", "error", "critical"})) r.min_severity = *v;
        else fail();
      } else if (f.name == "rate_per_second") {
        std::optional<std::string> text = Scalar(f, key);
        char* end = nullptr;
        const double v = text ? std::strtod(text->c_str(), &end) : 0;
        if (!text || end == text->c_str() || *end != '\0' || !(v > 0) || v > 1000) {
          AddError(LineOf(f.key), key, "expected a number of messages per second, above 0 and at most 1000");
          fail();
        } else {
          r.rate_per_second = v;
        }
      } else if (f.name == "burst") {
        if (auto v = Integer(f, key, 1, 1000)) r.burst = static_cast<int>(*v);
        else fail();
      } else if (f.name == "connect_timeout_ms") {
        if (auto v = Integer(f, key, 100, 60000)) r.connect_timeout_ms = static_cast<int>(*v);
        else fail();
      } else if (f.name == "timeout_ms") {
        if (auto v = Integer(f, key, 100, 300000)) r.timeout_ms = static_cast<int>(*v);
        else fail();
      } else if (f.name == "give_up_after_ms") {
        if (auto v = Integer(f, key, 1000, 30LL * 24 * 3600 * 1000)) r.give_up_after_ms = *v;
        else fail();
      }
    }
    if (r.name.empty() && ok) {
      AddError(r.line, Join(path, "name"), "required key is missing");
      ok = false;
    }
    if (!has_type) {
      AddError(r.line, Join(path, "type"),
               "required key is missing; allowed: " + ReceiverTypeNames());
      ok = false;
    }
    if (ok && r.urls.empty()) {
      AddError(r.line, Join(path, "url"), "required: url, urls or url_file");
      ok = false;
    }
    if (ok && r.urls.size() > 1 && r.type != ReceiverConfig::Type::kAlertmanager) {
      AddError(r.line, Join(path, "urls"), "only an alertmanager receiver takes several URLs");
      ok = false;
    }
    for (const std::string& url : r.urls) {
      if (!url.starts_with("http://") && !url.starts_with("https://")) {
        AddError(r.line, Join(path, "url"), "'" + url + "' is not an http:// or https:// URL");
        ok = false;
      }
    }
    if (r.secrets.size() > 2) {
      AddError(r.line, Join(path, "secrets"), "at most two secrets (the old and the new one while rotating)");
      ok = false;
    }
    if (!r.secrets.empty() && r.type != ReceiverConfig::Type::kWebhook) {
      AddError(r.line, Join(path, "secrets"), "only a webhook receiver signs its requests");
      ok = false;
    }
    if (ok) alerts->receivers.push_back(std::move(r));
  }

  // `fixes:` is a list, or the path (relative to the config's folder) of a YAML file holding
  // that list: one file a fleet shares while each node's config differs. Errors in that file
  // name it, with its lines.
  void ParseFixes(const Field& section, Config* config) {
    const std::string path = "fixes";
    if (section.value.IsNull()) return;
    if (section.value.IsScalar()) {
      const std::string file = Resolve(section.value.as<std::string>());
      config->fixes_file = file;
      Result<std::string> text = ReadYamlFile(file, "fixes file");
      Result<YAML::Node> list =
          text.ok() ? ParseYamlDocument(text.value(), file) : Result<YAML::Node>(text.errors());
      if (!list.ok()) {
        for (const Error& e : list.errors()) AddError(LineOf(section.value), path, e.ToString());
        return;
      }
      ConfigParser in_file(file, base_dir_);
      in_file.ParseFixList(list.value(), config);
      for (Error& e : in_file.TakeErrors()) errors_.push_back(std::move(e));
      return;
    }
    ParseFixList(section.value, config);
  }

  void ParseFixList(const YAML::Node& list, Config* config) {
    const std::string path = "fixes";
    if (list.IsNull()) return;
    if (!list.IsSequence()) {
      AddError(LineOf(list), path, "expected a list, got " + KindName(list));
      return;
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string item_path = Index(path, i);
      const YAML::Node node = list[i];
      FixConfig fix;
      fix.line = LineOf(node);
      for (const Field& f : Fields(node, item_path, {"signature", "version", "note", "by"})) {
        const std::string key = Join(item_path, f.name);
        std::optional<std::string> v = Scalar(f, key);
        if (!v) continue;
        if (f.name == "signature") fix.signature = *v;
        if (f.name == "version") fix.version = *v;
        if (f.name == "note") fix.note = *v;
        if (f.name == "by") fix.by = *v;
      }
      if (!node.IsMap()) continue;
      if (fix.signature.empty()) {
        AddError(fix.line, Join(item_path, "signature"), "required key is missing");
        continue;
      }
      config->fixes.push_back(std::move(fix));
    }
  }

  const std::string file_;
  const fs::path base_dir_;
  ErrorList errors_;
  int stdin_line_ = 0;                                     // of the stdin source, 0: none yet
  std::map<std::string, int, std::less<>> fifo_lines_;     // fifo path -> line of its source
};

}  // namespace

Result<Config> LoadConfig(const std::string& path) {
  auto file_error = [&path](std::string message) {
    return Error{.file = path, .line = 0, .rule_id = "", .key = "", .message = std::move(message)};
  };

  std::error_code ec;
  if (fs::is_directory(path, ec)) return file_error("cannot read config file: is a directory");
  Result<std::string> text = ReadYamlFile(path, "config file");
  if (!text.ok()) return text.errors();

  fs::path base_dir = fs::absolute(fs::path(path), ec).parent_path();
  if (ec) return file_error("cannot resolve the config file's folder: " + ec.message());

  Result<YAML::Node> document = ParseYamlDocument(text.value(), path);
  if (!document.ok()) return document.errors();
  const YAML::Node& root = document.value();

  Config config;
  config.file = path;
  ConfigParser parser(path, std::move(base_dir));
  try {
    parser.Parse(root, &config);
  } catch (const YAML::Exception& e) {
    // Not expected: the parser checks node types before using them. Kept so that a yaml-cpp
    // surprise is a load error with a line number rather than a crash.
    ErrorList errors = parser.TakeErrors();
    errors.push_back(Error{.file = path,
                           .line = e.mark.is_null() ? 0 : e.mark.line + 1,
                           .rule_id = "",
                           .key = "",
                           .message = std::string("internal error reading config: ") + e.what()});
    return errors;
  }
  ErrorList errors = parser.TakeErrors();
  if (!errors.empty()) return errors;
  return config;
}

}  // namespace faultline
