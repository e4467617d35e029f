// LoadConfig (config_loader.h): reads the file, checks the top level, and hands each section to
// its reader (config_reader.h lists which file reads which).
#include "agent/config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "agent/config/config_reader.h"
#include "agent/core/yaml_document.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

void ReadConfig(const ConfigReader& reader, const YAML::Node& root, Config* config) {
  config->rule_paths = {reader.Resolve("rules")};
  config->state.dir = reader.Resolve("state");
  ConfigReader top = reader;
  if (!root.IsMap() && !root.IsNull()) {
    top.Fail(root, "", "the config must be a map of sections, got " + YamlKindName(root));
    return;
  }
  // The sections, in the order config/faultline.yaml documents them.
  const std::vector<YamlField> fields =
      top.Fields(root, "",
                 {"rules", "framing", "http", "log", "limits", "state", "discover", "reload",
                  "sources", "alerts", "fixes"});
  for (const YamlField& f : fields) {
    if (f.name == "rules") ReadRulesSection(reader, f, config);
    if (f.name == "framing") ReadFramingSection(reader, f, config);
    if (f.name == "http") ReadHttpSection(reader, f, config);
    if (f.name == "log") ReadLogSection(reader, f, config);
    if (f.name == "limits") ReadLimitsSection(reader, f, config);
    if (f.name == "state") ReadStateSection(reader, f, config);
    if (f.name == "discover") ReadDiscoverSection(reader, f, config);
    if (f.name == "reload") ReadReloadSection(reader, f, config);
    if (f.name == "sources") ReadSourcesSection(reader, f, config);
    if (f.name == "alerts") ReadAlertsSection(reader, f, config);
    if (f.name == "fixes") ReadFixesSection(reader, f, config);
  }
}

}  // namespace

std::string ConfigReader::Resolve(const std::string& path) const {
  fs::path p(path);
  if (!p.is_absolute()) p = base_dir_ / p;
  return p.lexically_normal().string();
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

Result<ListenEndpoint> ParseListen(std::string_view text) {
  const auto why = [](std::string message) {
    return Error{.file = "", .line = 0, .rule_id = "", .key = "", .message = std::move(message)};
  };
  std::string_view host_part;
  std::string_view port_part;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) {
      return why("missing ']' after the IPv6 address");
    }
    host_part = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (rest.empty() || rest.front() != ':') {
      return why("expected host:port, e.g. [::1]:9464");
    }
    port_part = rest.substr(1);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return why("expected host:port, e.g. 127.0.0.1:9464");
    }
    host_part = text.substr(0, colon);
    port_part = text.substr(colon + 1);
    if (host_part.find(':') != std::string_view::npos) {
      return why("an IPv6 address must be in brackets, e.g. [::1]:9464");
    }
  }
  if (host_part.empty()) {
    return why("the host is empty; use 0.0.0.0 or [::] to listen on every interface");
  }
  unsigned value = 0;
  const char* begin = port_part.data();
  const char* end = begin + port_part.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (port_part.empty() || ec != std::errc() || ptr != end || value < 1 || value > 65535) {
    return why("the port must be a number from 1 to 65535, got '" + std::string(port_part) + "'");
  }
  return ListenEndpoint{std::string(host_part), static_cast<uint16_t>(value)};
}

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
  ErrorList errors;
  try {
    ReadConfig(ConfigReader(path, std::move(base_dir), &errors), root, &config);
  } catch (const YAML::Exception& e) {
    // Not expected: the readers check node types before using them. Kept so that a yaml-cpp
    // surprise is a load error with a line number rather than a crash.
    errors.push_back(Error{.file = path,
                           .line = e.mark.is_null() ? 0 : e.mark.line + 1,
                           .rule_id = "",
                           .key = "",
                           .message = std::string("internal error reading config: ") + e.what()});
    return errors;
  }
  if (!errors.empty()) return errors;
  return config;
}

}  // namespace faultline
