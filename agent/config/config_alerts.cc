// The config's alerts section (config_reader.h): grouping and repeat timing, and the receivers
// alerts go to (Slack, webhooks, Alertmanager), with secrets that may be kept in files. The
// receiver type names come from kReceiverTypes (config.h); a new type's own keys are checked in
// ParseReceiver.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "agent/config/config_reader.h"

namespace faultline {
namespace {

// Reads the alerts section into Config::alerts.
class AlertsSection : public ConfigReader {
 public:
  explicit AlertsSection(const ConfigReader& reader) : ConfigReader(reader) {}

  // A file's content without surrounding white space: for secrets kept out of the config.
  std::optional<std::string> FileContent(const YamlField& f, const std::string& path,
                                         const std::string& file) {
    const std::string resolved = Resolve(file);
    std::ifstream in(resolved, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in || in.bad()) {
      Fail(f.key, path, "cannot read '" + resolved + "': " + std::strerror(errno));
      return std::nullopt;
    }
    std::string content = text.str();
    const std::size_t begin = content.find_first_not_of(" \t\r\n");
    const std::size_t end = content.find_last_not_of(" \t\r\n");
    if (begin == std::string::npos) {
      Fail(f.key, path, "'" + resolved + "' is empty");
      return std::nullopt;
    }
    return content.substr(begin, end - begin + 1);
  }

  // A Standard Webhooks secret: "whsec_" (optional) and base64 of 24..64 bytes.
  bool CheckWebhookSecret(const YamlField& f, const std::string& path, std::string_view secret) {
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
      Fail(f.key, path,
           "a webhook secret is 'whsec_' followed by the base64 of 24 to 64 random bytes "
           "(Standard Webhooks), e.g. from: echo whsec_$(head -c 32 /dev/urandom | base64)");
      return false;
    }
    return true;
  }

  void ParseAlerts(const YamlField& section, Config* config) {
    const std::string path = "alerts";
    AlertsConfig& alerts = config->alerts;
    alerts.enabled = true;
    // group_wait up to an hour; quiet_for and repeat_interval from a second (tests) to 30 days.
    constexpr int64_t kMaxGroupWaitMs = 3600 * 1000;
    constexpr int64_t kMaxIntervalMs = 30LL * 24 * 3600 * 1000;
    for (const YamlField& f :
         Fields(section.value, path,
                {"group_wait_ms", "quiet_for_ms", "repeat_interval_ms", "resolve_after_runs",
                 "min_severity", "host", "receivers", "source_versions"})) {
      const std::string key = JoinKey(path, f.name);
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
  void ParseSourceVersions(const YamlField& section, const std::string& path,
                           AlertsConfig* alerts) {
    if (section.value.IsNull()) return;
    if (!section.value.IsMap()) {
      Fail(section.key, path, "expected a map of source id to {package: version}");
      return;
    }
    for (auto it = section.value.begin(); it != section.value.end(); ++it) {
      const YAML::Node source = it->first;
      const YAML::Node packages = it->second;
      const std::string source_path = JoinKey(path, source.IsScalar() ? source.Scalar() : "?");
      if (!source.IsScalar() || !packages.IsMap()) {
        Fail(source, source_path, "expected a source id and a map of package: version");
        continue;
      }
      std::vector<std::pair<std::string, std::string>> versions;
      for (auto p = packages.begin(); p != packages.end(); ++p) {
        if (!p->first.IsScalar() || !p->second.IsScalar() || p->second.Scalar().empty()) {
          Fail(p->first, source_path, "expected package: version");
          continue;
        }
        versions.emplace_back(p->first.Scalar(), p->second.Scalar());
      }
      alerts->source_versions.emplace_back(source.Scalar(), std::move(versions));
    }
  }

  void ParseReceivers(const YamlField& section, const std::string& path, AlertsConfig* alerts) {
    if (section.value.IsNull()) return;
    if (!section.value.IsSequence()) {
      Fail(section.key, path, "expected a list, got " + YamlKindName(section.value));
      return;
    }
    std::map<std::string, int, std::less<>> names;
    for (std::size_t i = 0; i < section.value.size(); ++i) {
      ParseReceiver(section.value[i], IndexKey(path, i), &names, alerts);
    }
  }

  void ParseReceiver(const YAML::Node& node, const std::string& path,
                     std::map<std::string, int, std::less<>>* names, AlertsConfig* alerts) {
    if (!node.IsMap()) {
      Fail(node, path, "expected a map with name, type and url, got " + YamlKindName(node));
      return;
    }
    ReceiverConfig r;
    r.line = YamlLine(node);
    bool ok = true;
    bool has_type = false;
    for (const YamlField& f : Fields(
             node, path,
             {"name", "type", "url", "urls", "url_file", "secrets", "secret_files", "github_secret",
              "github_secret_file", "headers", "send_resolved", "min_severity", "rate_per_second",
              "burst", "connect_timeout_ms", "timeout_ms", "give_up_after_ms"})) {
      const std::string key = JoinKey(path, f.name);
      const auto fail = [&ok] { ok = false; };
      if (f.name == "name") {
        std::optional<std::string> name = Scalar(f, key);
        if (!name) {
          fail();
        } else if (!IsValidSourceId(*name)) {
          Fail(f.key, key,
               "'" + *name + "' is not a valid name: use letters, digits, '_', '.' and '-'");
          fail();
        } else if (auto [seen, inserted] = names->emplace(*name, YamlLine(f.key)); !inserted) {
          Fail(f.key, key,
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
            Fail(f.key, key, "'" + *v + "' is not one of: " + ReceiverTypeNames());
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
            if (CheckWebhookSecret(f, key, secret))
              r.secrets.push_back(secret);
            else
              fail();
          }
        } else {
          fail();
        }
      } else if (f.name == "secret_files") {
        if (auto list = StringList(f, key)) {
          for (const std::string& file : *list) {
            std::optional<std::string> secret = FileContent(f, key, file);
            if (secret && CheckWebhookSecret(f, key, *secret))
              r.secrets.push_back(*secret);
            else
              fail();
          }
        } else {
          fail();
        }
      } else if (f.name == "github_secret") {
        if (auto v = Scalar(f, key))
          r.github_secret = *v;
        else
          fail();
      } else if (f.name == "github_secret_file") {
        std::optional<std::string> file = Scalar(f, key);
        std::optional<std::string> secret = file ? FileContent(f, key, *file) : std::nullopt;
        if (secret)
          r.github_secret = *secret;
        else
          fail();
      } else if (f.name == "headers") {
        if (!f.value.IsMap()) {
          Fail(f.key, key, "expected a map of header name to value");
          fail();
          continue;
        }
        for (auto it = f.value.begin(); it != f.value.end(); ++it) {
          if (!it->first.IsScalar() || !it->second.IsScalar() ||
              it->first.Scalar().find_first_of(":\r\n ") != std::string::npos ||
              it->second.Scalar().find_first_of("\r\n") != std::string::npos) {
            Fail(it->first, key, "expected Header-Name: value on one line");
            fail();
            continue;
          }
          r.headers.emplace_back(it->first.Scalar(), it->second.Scalar());
        }
      } else if (f.name == "send_resolved") {
        if (auto v = Bool(f, key))
          r.send_resolved = *v;
        else
          fail();
      } else if (f.name == "min_severity") {
        if (auto v = Choice(f, key, {"info", "warning", "error", "critical"}))
          r.min_severity = *v;
        else
          fail();
      } else if (f.name == "rate_per_second") {
        std::optional<std::string> text = Scalar(f, key);
        char* end = nullptr;
        const double v = text ? std::strtod(text->c_str(), &end) : 0;
        if (!text || end == text->c_str() || *end != '\0' || !(v > 0) || v > 1000) {
          Fail(f.key, key, "expected a number of messages per second, above 0 and at most 1000");
          fail();
        } else {
          r.rate_per_second = v;
        }
      } else if (f.name == "burst") {
        if (auto v = Integer(f, key, 1, 1000))
          r.burst = static_cast<int>(*v);
        else
          fail();
      } else if (f.name == "connect_timeout_ms") {
        if (auto v = Integer(f, key, 100, 60000))
          r.connect_timeout_ms = static_cast<int>(*v);
        else
          fail();
      } else if (f.name == "timeout_ms") {
        if (auto v = Integer(f, key, 100, 300000))
          r.timeout_ms = static_cast<int>(*v);
        else
          fail();
      } else if (f.name == "give_up_after_ms") {
        if (auto v = Integer(f, key, 1000, 30LL * 24 * 3600 * 1000))
          r.give_up_after_ms = *v;
        else
          fail();
      }
    }
    if (r.name.empty() && ok) {
      Fail(r.line, JoinKey(path, "name"), "required key is missing");
      ok = false;
    }
    if (!has_type) {
      Fail(r.line, JoinKey(path, "type"),
           "required key is missing; allowed: " + ReceiverTypeNames());
      ok = false;
    }
    if (ok && r.urls.empty()) {
      Fail(r.line, JoinKey(path, "url"), "required: url, urls or url_file");
      ok = false;
    }
    if (ok && r.urls.size() > 1 && r.type != ReceiverConfig::Type::kAlertmanager) {
      Fail(r.line, JoinKey(path, "urls"), "only an alertmanager receiver takes several URLs");
      ok = false;
    }
    for (const std::string& url : r.urls) {
      if (!url.starts_with("http://") && !url.starts_with("https://")) {
        Fail(r.line, JoinKey(path, "url"), "'" + url + "' is not an http:// or https:// URL");
        ok = false;
      }
    }
    if (r.secrets.size() > 2) {
      Fail(r.line, JoinKey(path, "secrets"),
           "at most two secrets (the old and the new one while rotating)");
      ok = false;
    }
    if (!r.secrets.empty() && r.type != ReceiverConfig::Type::kWebhook) {
      Fail(r.line, JoinKey(path, "secrets"), "only a webhook receiver signs its requests");
      ok = false;
    }
    if (ok) alerts->receivers.push_back(std::move(r));
  }
};

}  // namespace

void ReadAlertsSection(const ConfigReader& reader, const YamlField& section, Config* config) {
  AlertsSection(reader).ParseAlerts(section, config);
}

}  // namespace faultline
