// The config's general sections (config_reader.h): rules, framing, http, log, limits, state,
// discover, reload and fixes, each a few settings of the agent as a whole.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/config/config_reader.h"
#include "agent/core/yaml_document.h"

namespace faultline {
namespace {

// Below 1 KiB ordinary compiler lines would be cut; above 64 MiB one runaway line (a minified JSON
// blob, a binary dumped to stdout) could hold that much memory per stream.
constexpr int64_t kMinMaxLineBytes = int64_t{1} << 10;
constexpr int64_t kMaxMaxLineBytes = int64_t{64} << 20;
// Fewer than 4 descriptors would reopen files on every write; more than 2^20 is above what a
// kernel gives one process (fs.nr_open).
constexpr int64_t kMinMaxOpenFiles = 4;
constexpr int64_t kMaxMaxOpenFiles = int64_t{1} << 20;
// Checkpoints more often than every 10 ms would cost more than the lines they protect; more than
// an hour apart, a crash would replay an hour of logs.
constexpr int64_t kMinCheckpointIntervalMs = 10;
constexpr int64_t kMaxCheckpointIntervalMs = 3600 * 1000;
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

// Reads the general sections of one config file (or, for fixes, of the file they are kept in).
class GeneralSections : public ConfigReader {
 public:
  explicit GeneralSections(const ConfigReader& reader) : ConfigReader(reader) {}

  void ParseRules(const YamlField& section, Config* config) {
    const std::string path = "rules";
    for (const YamlField& f : Fields(section.value, path, {"paths", "context_idle_flush_ms"})) {
      const std::string key = JoinKey(path, f.name);
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

  void ParseFraming(const YamlField& section, Config* config) {
    const std::string path = "framing";
    for (const YamlField& f : Fields(section.value, path, {"max_line_bytes", "input_format"})) {
      const std::string key = JoinKey(path, f.name);
      if (f.name == "input_format") {
        if (std::optional<std::string> text = Scalar(f, key)) {
          if (std::optional<LineFormat> format = ParseLineFormat(*text)) {
            config->framing.format = *format;
          } else {
            Fail(f.key, key,
                 "'" + *text + "' is not an input format (" + std::string(kLineFormatNames) + ")");
          }
        }
      } else if (auto v = Integer(f, key, kMinMaxLineBytes, kMaxMaxLineBytes)) {
        config->framing.max_line_bytes = static_cast<std::size_t>(*v);
      }
    }
  }

  void ParseHttp(const YamlField& section, Config* config) {
    const std::string path = "http";
    for (const YamlField& f : Fields(section.value, path, {"listen", "admin_token_file"})) {
      const std::string key = JoinKey(path, f.name);
      std::optional<std::string> text = Scalar(f, key);
      if (!text) continue;
      if (f.name == "admin_token_file") {
        if (text->empty()) {
          Fail(f.key, key, "expected a file name");
        } else {
          config->http_admin_token_file = Resolve(*text);
        }
        continue;
      }
      Result<ListenEndpoint> listen = ParseListen(*text);
      if (!listen.ok()) {
        Fail(f.key, key, "'" + *text + "': " + listen.errors().front().message);
      } else {
        config->http_address = listen.value().host;
        config->http_port = listen.value().port;
        config->http_listen_set = true;
      }
    }
  }

  void ParseLog(const YamlField& section, Config* config) {
    const std::string path = "log";
    for (const YamlField& f : Fields(section.value, path, {"level"})) {
      if (auto v = Choice(f, JoinKey(path, f.name), {"trace", "debug", "info", "warn", "error"})) {
        config->log_level = *v;
      }
    }
  }

  void ParseLimits(const YamlField& section, Config* config) {
    const std::string path = "limits";
    for (const YamlField& f : Fields(section.value, path, {"max_open_files"})) {
      const std::string key = JoinKey(path, f.name);
      const std::string text = f.value.IsScalar() ? f.value.Scalar() : "";
      if (text == "auto") {
        config->max_open_files = 0;
      } else if (!text.empty() && text.find_first_not_of("0123456789-+") != std::string::npos) {
        Fail(f.key, key,
             "expected auto or a whole number from " + std::to_string(kMinMaxOpenFiles) + " to " +
                 std::to_string(kMaxMaxOpenFiles) + ", got '" + text + "'");
      } else if (auto v = Integer(f, key, kMinMaxOpenFiles, kMaxMaxOpenFiles)) {
        config->max_open_files = static_cast<std::size_t>(*v);
      }
    }
  }

  void ParseState(const YamlField& section, Config* config) {
    const std::string path = "state";
    for (const YamlField& f : Fields(section.value, path, {"dir", "checkpoint_interval_ms"})) {
      const std::string key = JoinKey(path, f.name);
      if (f.name == "dir") {
        std::optional<std::string> dir = Scalar(f, key);
        if (dir && dir->empty()) {
          Fail(f.key, key, "must not be empty");
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

  void ParseDiscover(const YamlField& section, Config* config) {
    const std::string path = "discover";
    for (const YamlField& f :
         Fields(section.value, path, {"enabled", "max_templates", "alert_after", "max_series"})) {
      const std::string key = JoinKey(path, f.name);
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

  void ParseReload(const YamlField& section, Config* config) {
    const std::string path = "reload";
    for (const YamlField& f :
         Fields(section.value, path, {"watch", "timeout_ms", "max_memory_bytes"})) {
      const std::string key = JoinKey(path, f.name);
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

  // `fixes:` is a list, or the path (relative to the config's folder) of a YAML file holding
  // that list: one file a fleet shares while each node's config differs. Errors in that file
  // name it, with its lines.
  void ParseFixes(const YamlField& section, Config* config) {
    const std::string path = "fixes";
    if (section.value.IsNull()) return;
    if (section.value.IsScalar()) {
      const std::string file = Resolve(section.value.as<std::string>());
      config->fixes_file = file;
      Result<std::string> text = ReadYamlFile(file, "fixes file");
      Result<YAML::Node> list =
          text.ok() ? ParseYamlDocument(text.value(), file) : Result<YAML::Node>(text.errors());
      if (!list.ok()) {
        for (const Error& e : list.errors()) Fail(section.value, path, e.ToString());
        return;
      }
      // Errors in that file name it, not the config.
      GeneralSections in_file(ConfigReader(file, base_dir(), errors()));
      in_file.ParseFixList(list.value(), config);
      return;
    }
    ParseFixList(section.value, config);
  }

  void ParseFixList(const YAML::Node& list, Config* config) {
    const std::string path = "fixes";
    if (list.IsNull()) return;
    if (!list.IsSequence()) {
      Fail(list, path, "expected a list, got " + YamlKindName(list));
      return;
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string item_path = IndexKey(path, i);
      const YAML::Node node = list[i];
      FixConfig fix;
      fix.line = YamlLine(node);
      for (const YamlField& f : Fields(node, item_path, {"signature", "version", "note", "by"})) {
        const std::string key = JoinKey(item_path, f.name);
        std::optional<std::string> v = Scalar(f, key);
        if (!v) continue;
        if (f.name == "signature") fix.signature = *v;
        if (f.name == "version") fix.version = *v;
        if (f.name == "note") fix.note = *v;
        if (f.name == "by") fix.by = *v;
      }
      if (!node.IsMap()) continue;
      if (fix.signature.empty()) {
        Fail(fix.line, JoinKey(item_path, "signature"), "required key is missing");
        continue;
      }
      config->fixes.push_back(std::move(fix));
    }
  }
};

}  // namespace

void ReadRulesSection(const ConfigReader& reader, const YamlField& section, Config* config) {
  GeneralSections(reader).ParseRules(section, config);
}

void ReadFramingSection(const ConfigReader& reader, const YamlField& section, Config* config) {
  GeneralSections(reader).ParseFraming(section, config);
}

void ReadHttpSection(const ConfigReader& reader, const YamlField& section, Config* config) {
  GeneralSections(reader).ParseHttp(section, config);
}

void ReadLogSection(const ConfigReader& reader, const YamlField& section, Config* config) {
  GeneralSections(reader).ParseLog(section, config);
}

void ReadLimitsSection(const ConfigReader& reader, const YamlField& section, Config* config) {
  GeneralSections(reader).ParseLimits(section, config);
}

void ReadStateSection(const ConfigReader& reader, const YamlField& section, Config* config) {
  GeneralSections(reader).ParseState(section, config);
}

void ReadDiscoverSection(const ConfigReader& reader, const YamlField& section, Config* config) {
  GeneralSections(reader).ParseDiscover(section, config);
}

void ReadReloadSection(const ConfigReader& reader, const YamlField& section, Config* config) {
  GeneralSections(reader).ParseReload(section, config);
}

void ReadFixesSection(const ConfigReader& reader, const YamlField& section, Config* config) {
  GeneralSections(reader).ParseFixes(section, config);
}

}  // namespace faultline
