#include "agent/alert/version_watcher.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>

#include "agent/core/yaml_document.h"
#include "agent/core/yaml_fields.h"
#include "agent/rules/pattern_syntax.h"
#include "agent/rules/rule_loader.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

int GroupIndex(const RE2& re, const std::string& name) {
  const auto& groups = re.NamedCapturingGroups();
  const auto it = groups.find(name);
  return it == groups.end() ? -1 : it->second;
}

// A version as printed often ends in the punctuation around it: "0.14.2," "(0.14.2)".
std::string CleanVersion(std::string_view v) {
  while (!v.empty() && (v.back() == ',' || v.back() == ')' || v.back() == ';' ||
                        v.back() == '.' || v.back() == '\'' || v.back() == '"')) {
    v.remove_suffix(1);
  }
  while (!v.empty() && (v.front() == '(' || v.front() == '\'' || v.front() == '"')) {
    v.remove_prefix(1);
  }
  return std::string(v);
}

// Checks one entry's patterns the way Build compiles them; adds errors.
void CheckEntry(const VersionPattern& p, int match_line, int each_line, ErrorList& errors) {
  const auto fail = [&](int line, const std::string& key, const std::string& message) {
    errors.push_back(Error{p.file, line, p.id, key, message});
  };
  const RE2 match(p.match, RulePatternOptions());
  if (!match.ok()) {
    fail(match_line, "match", "invalid pattern: " + match.error() + " (at '" + match.error_arg() + "')");
    return;
  }
  const RE2* groups = &match;
  std::unique_ptr<RE2> each;
  if (!p.each.empty()) {
    if (match.NumberOfCapturingGroups() < 1) {
      fail(match_line, "match", "with `each`, the first group of `match` must capture the list");
    }
    each = std::make_unique<RE2>(p.each, RulePatternOptions());
    if (!each->ok()) {
      fail(each_line, "each", "invalid pattern: " + each->error() + " (at '" + each->error_arg() + "')");
      return;
    }
    groups = each.get();
  }
  const int at = p.each.empty() ? match_line : each_line;
  const std::string key = p.each.empty() ? "match" : "each";
  if (GroupIndex(*groups, "version") < 0) {
    fail(at, key, "needs a named group (?P<version>...)");
  }
  if (p.package.empty() && GroupIndex(*groups, "package") < 0) {
    fail(at, key, "needs a named group (?P<package>...) or a fixed `package:`");
  }
}

}  // namespace

Result<std::vector<VersionPattern>> ParseVersionPatterns(std::string_view yaml,
                                                         const std::string& file) {
  Result<std::vector<YAML::Node>> docs = ParseYamlDocuments(yaml, file);
  if (!docs.ok()) return docs.errors();
  ErrorList errors;
  YamlFieldReader reader(file, &errors);
  std::vector<VersionPattern> out;
  for (const YAML::Node& doc : docs.value()) {
    if (doc.IsNull()) continue;
    if (!doc.IsSequence()) {
      reader.Fail(doc, "", "a versions file is a list of {id, match, [each], [package]}");
      continue;
    }
    for (std::size_t i = 0; i < doc.size(); ++i) {
      const YAML::Node entry = doc[i];
      const std::string where = IndexKey("", i);
      if (!entry.IsMap()) {
        reader.Fail(entry, where, "expected a map, got " + YamlKindName(entry));
        continue;
      }
      const std::size_t errors_before = errors.size();
      VersionPattern p;
      p.file = file;
      p.line = YamlLine(entry);
      int match_line = p.line;
      int each_line = p.line;
      const std::vector<YamlField> fields =
          reader.Fields(entry, where, {"id", "match", "each", "package"});
      for (const YamlField& f : fields) {
        const std::string path = JoinKey(where, f.name);
        const std::optional<std::string> value = reader.Scalar(f, path);
        if (!value.has_value()) continue;
        if (value->empty()) {
          reader.Fail(f.key, path, "must be a non-empty string");
          continue;
        }
        if (f.name == "id") p.id = *value;
        if (f.name == "match") {
          p.match = *value;
          match_line = YamlLine(f.value);
        }
        if (f.name == "each") {
          p.each = *value;
          each_line = YamlLine(f.value);
        }
        if (f.name == "package") p.package = NormalizePackageName(*value);
      }
      reader.set_rule_id(p.id);
      for (const char* required : {"id", "match"}) {
        if (!entry[required]) reader.Fail(p.line, JoinKey(where, required), "required key is missing");
      }
      reader.set_rule_id("");
      if (errors.size() != errors_before) continue;
      CheckEntry(p, match_line, each_line, errors);
      if (errors.size() == errors_before) out.push_back(std::move(p));
    }
  }
  if (!errors.empty()) return errors;
  return out;
}

Result<std::vector<VersionPattern>> LoadVersionPatterns(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      for (auto it = fs::recursive_directory_iterator(path, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && IsVersionPatternFile(it->path().string())) {
          files.push_back(it->path());
        }
      }
    } else if (IsVersionPatternFile(path)) {
      files.push_back(path);
    }
  }
  std::sort(files.begin(), files.end());
  ErrorList errors;
  std::vector<VersionPattern> out;
  for (const std::string& file : files) {
    Result<std::string> text = ReadYamlFile(file, "versions file");
    if (!text.ok()) {
      errors.insert(errors.end(), text.errors().begin(), text.errors().end());
      continue;
    }
    Result<std::vector<VersionPattern>> parsed = ParseVersionPatterns(text.value(), file);
    if (!parsed.ok()) {
      errors.insert(errors.end(), parsed.errors().begin(), parsed.errors().end());
      continue;
    }
    for (VersionPattern& p : parsed.value()) out.push_back(std::move(p));
  }
  if (!errors.empty()) return errors;
  return out;
}

Result<std::unique_ptr<VersionWatcher>> VersionWatcher::Build(const std::vector<VersionPattern>& versions,
                                                        const std::vector<Rule>& rules) {
  std::unique_ptr<VersionWatcher> watcher(new VersionWatcher());
  ErrorList errors;
  RE2::Options options = RulePatternOptions();
  auto set = std::make_unique<RE2::Set>(options, RE2::UNANCHORED);
  const auto add = [&](Compiled c, const std::string& pattern, const Error& where) {
    std::string error;
    if (set->Add("(?m:" + pattern + ")", &error) < 0) {
      Error e = where;
      e.message = "invalid pattern: " + error;
      errors.push_back(std::move(e));
      return;
    }
    c.in_text = std::make_unique<RE2>("(?m:" + pattern + ")", options);
    c.line = std::make_unique<RE2>(pattern, options);
    watcher->patterns_.push_back(std::move(c));
  };
  for (const VersionPattern& p : versions) {
    Compiled c;
    c.kind = Hit::Kind::kVersion;
    c.package = p.package;
    if (!p.each.empty()) c.each = std::make_unique<RE2>(p.each, options);
    const RE2 groups(p.each.empty() ? p.match : p.each, options);
    c.package_group = GroupIndex(groups, "package");
    c.version_group = GroupIndex(groups, "version");
    add(std::move(c), p.match, Error{p.file, p.line, p.id, "match", ""});
  }
  for (const Rule& rule : rules) {
    for (const std::string& pattern : rule.resolved_by) {
      Compiled c;
      c.kind = Hit::Kind::kResolved;
      c.rule_id = rule.id;
      add(std::move(c), pattern, Error{rule.file, rule.line, rule.id, "resolved_by", ""});
    }
  }
  if (!errors.empty()) return errors;
  if (!watcher->patterns_.empty() && !set->Compile()) {
    return Error{"", 0, "", "", "the version and resolved_by patterns do not fit in one RE2::Set"};
  }
  watcher->set_ = std::move(set);
  return watcher;
}

void VersionWatcher::Confirm(const Compiled& p, std::string_view line, uint64_t number,
                          std::vector<Hit>* out) const {
  if (p.kind == Hit::Kind::kResolved) {
    if (RE2::PartialMatch(line, *p.line)) {
      out->push_back(Hit{Hit::Kind::kResolved, number, "", "", p.rule_id});
    }
    return;
  }
  const int groups = std::max(p.package_group, p.version_group);
  if (p.each == nullptr) {
    std::vector<re2::StringPiece> captures(static_cast<std::size_t>(groups + 1));
    if (!p.line->Match(line, 0, line.size(), RE2::UNANCHORED, captures.data(), groups + 1)) return;
    Hit hit{Hit::Kind::kVersion, number,
            p.package_group >= 0 ? NormalizePackageName(std::string_view(
                                       captures[p.package_group].data(),
                                       captures[p.package_group].size()))
                                 : p.package,
            CleanVersion(std::string_view(captures[p.version_group].data(),
                                          captures[p.version_group].size())),
            ""};
    if (!hit.package.empty() && !hit.version.empty()) out->push_back(std::move(hit));
    return;
  }
  re2::StringPiece list;
  if (!RE2::PartialMatch(line, *p.line, &list)) return;
  std::vector<re2::StringPiece> captures(static_cast<std::size_t>(groups + 1));
  std::size_t at = 0;
  const std::string_view text(list.data(), list.size());
  while (at < text.size() &&
         p.each->Match(text, at, text.size(), RE2::UNANCHORED, captures.data(), groups + 1)) {
    const re2::StringPiece whole = captures[0];
    Hit hit{Hit::Kind::kVersion, number,
            p.package_group >= 0 ? NormalizePackageName(std::string_view(
                                       captures[p.package_group].data(),
                                       captures[p.package_group].size()))
                                 : p.package,
            CleanVersion(std::string_view(captures[p.version_group].data(),
                                          captures[p.version_group].size())),
            ""};
    if (!hit.package.empty() && !hit.version.empty()) out->push_back(std::move(hit));
    const std::size_t end = static_cast<std::size_t>(whole.data() + whole.size() - text.data());
    at = end > at ? end : at + 1;
  }
}

void VersionWatcher::Scan(const LineBatch& batch, uint64_t first_line, std::vector<Hit>* out) const {
  if (patterns_.empty() || batch.empty()) return;
  const std::string_view text = batch.text();
  std::vector<int> matched;
  if (!set_->Match(text, &matched)) return;
  std::sort(matched.begin(), matched.end());
  for (int id : matched) {
    const Compiled& p = patterns_[static_cast<std::size_t>(id)];
    re2::StringPiece found;
    std::size_t at = 0;
    while (at < text.size() &&
           p.in_text->Match(text, at, text.size(), RE2::UNANCHORED, &found, 1)) {
      const std::size_t offset = static_cast<std::size_t>(found.data() - text.data());
      const std::size_t index = batch.LineAt(std::min(offset, text.size() - 1));
      Confirm(p, batch.line(index), first_line + index, out);
      at = batch.line_end(index) + 1;
    }
  }
}

}  // namespace faultline
