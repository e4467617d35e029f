// ConfigReader and the config's sections: the parts of LoadConfig (config_loader.h) shared by
// the files that read one group of sections each.
//
// config_loader.cc reads the top level and hands each section to its reader:
//   config_general.cc  rules, framing, http, log, limits, state, discover, reload, fixes
//   config_sources.cc  sources (file, stdin, fifo, tcp, udp, unix, unixgram)
//   config_alerts.cc   alerts and its receivers
// A new section is one key in the top-level list (config_loader.cc) and one Read*Section; a new
// source type is one branch in SourceSection::ParseSource (config_sources.cc).
//
// ConfigReader is the shared YAML field reader (agent/core/yaml_fields.h) of one config file,
// plus where relative paths in it lead. It appends to the caller's ErrorList; one load, one
// thread. Nothing here throws on a well-formed node tree (every node is checked before use).
#ifndef FAULTLINE_CONFIG_CONFIG_READER_H_
#define FAULTLINE_CONFIG_CONFIG_READER_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "agent/config/config.h"
#include "agent/core/result.h"
#include "agent/core/yaml_fields.h"

namespace faultline {

class ConfigReader : public YamlFieldReader {
 public:
  ConfigReader(std::string file, std::filesystem::path base_dir, ErrorList* errors)
      : YamlFieldReader(std::move(file), errors), base_dir_(std::move(base_dir)) {}

  const std::filesystem::path& base_dir() const { return base_dir_; }
  // Relative paths mean "next to the config file", so the agent behaves the same whatever its
  // working directory. Globs stay text: lexical normalisation leaves `*`, `?` and `**` alone.
  std::string Resolve(const std::string& path) const;

 private:
  std::filesystem::path base_dir_;
};

// Durations in ms are ints downstream.
inline constexpr int64_t kMaxIntMs = INT32_MAX;

// A `host:port` or `[ipv6]:port` to listen on.
struct ListenEndpoint {
  std::string host;
  uint16_t port = 0;
};
// Splits `host:port` or `[ipv6]:port`; the error's message says why not (no file or line: the
// caller knows them).
Result<ListenEndpoint> ParseListen(std::string_view text);
// Letters, digits, '_', '.' and '-': a source id or a receiver name.
bool IsValidSourceId(std::string_view id);

// One reader per top-level section; each fills its part of `config` and reports to `reader`.
void ReadRulesSection(const ConfigReader& reader, const YamlField& section, Config* config);
void ReadFramingSection(const ConfigReader& reader, const YamlField& section, Config* config);
void ReadHttpSection(const ConfigReader& reader, const YamlField& section, Config* config);
void ReadLogSection(const ConfigReader& reader, const YamlField& section, Config* config);
void ReadLimitsSection(const ConfigReader& reader, const YamlField& section, Config* config);
void ReadStateSection(const ConfigReader& reader, const YamlField& section, Config* config);
void ReadDiscoverSection(const ConfigReader& reader, const YamlField& section, Config* config);
void ReadReloadSection(const ConfigReader& reader, const YamlField& section, Config* config);
void ReadFixesSection(const ConfigReader& reader, const YamlField& section, Config* config);
void ReadSourcesSection(const ConfigReader& reader, const YamlField& section, Config* config);
void ReadAlertsSection(const ConfigReader& reader, const YamlField& section, Config* config);

}  // namespace faultline

#endif  // FAULTLINE_CONFIG_CONFIG_READER_H_
