// The shared YAML field reader (yaml_fields.h).
#include "agent/core/yaml_fields.h"

#include <map>
#include <utility>

#include "agent/core/yaml_document.h"

namespace faultline {

int YamlLine(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;  // yaml-cpp counts lines from 0
}

std::string YamlKindName(const YAML::Node& node) {
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

std::string JoinKey(const std::string& path, std::string_view name) {
  if (path.empty()) return std::string(name);
  return path + "." + std::string(name);
}

std::string IndexKey(const std::string& path, std::size_t i) {
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

void YamlFieldReader::Fail(int line, std::string key, std::string message) {
  errors_->push_back(Error{.file = file_,
                           .line = line,
                           .rule_id = rule_id_,
                           .key = std::move(key),
                           .message = std::move(message)});
}

std::vector<YamlField> YamlFieldReader::Fields(const YAML::Node& node, const std::string& path,
                                               std::initializer_list<std::string_view> allowed) {
  std::vector<YamlField> fields;
  if (node.IsNull()) return fields;
  if (!node.IsMap()) {
    Fail(node, path, "expected a map, got " + YamlKindName(node));
    return fields;
  }
  std::map<std::string, int, std::less<>> first_line;
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies, not references: the iterator's operator-> returns a temporary.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      Fail(key, path, "a key must be a plain name, got " + YamlKindName(key));
      continue;
    }
    const std::string name = key.Scalar();
    const std::string key_path = JoinKey(path, name);
    bool known = false;
    for (std::string_view a : allowed) known = known || a == name;
    if (!known) {
      Fail(key, key_path, "unknown key; allowed here: " + ListNames(allowed));
      continue;
    }
    auto [seen, inserted] = first_line.emplace(name, YamlLine(key));
    if (!inserted) {
      Fail(key, key_path, "duplicate key; first set on line " + std::to_string(seen->second));
      continue;
    }
    fields.push_back(YamlField{name, key, value});
  }
  return fields;
}

std::optional<std::string> YamlFieldReader::Scalar(const YamlField& f, const std::string& path) {
  if (!f.value.IsScalar()) {
    Fail(f.key, path, "expected a single value, got " + YamlKindName(f.value));
    return std::nullopt;
  }
  return f.value.Scalar();
}

std::optional<int64_t> YamlFieldReader::Integer(const YamlField& f, const std::string& path,
                                                int64_t min, int64_t max) {
  std::optional<std::string> text = Scalar(f, path);
  if (!text) return std::nullopt;
  const std::optional<int64_t> value = DecimalInteger(*text);
  const std::string range = "from " + std::to_string(min) + " to " + std::to_string(max);
  if (!value) {
    Fail(f.key, path, "expected a whole number " + range + ", got '" + *text + "'");
    return std::nullopt;
  }
  if (*value < min || *value > max) {
    Fail(f.key, path, "must be " + range + ", got " + std::to_string(*value));
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> YamlFieldReader::Choice(
    const YamlField& f, const std::string& path, std::initializer_list<std::string_view> allowed) {
  std::optional<std::string> text = Scalar(f, path);
  if (!text) return std::nullopt;
  for (std::string_view a : allowed) {
    if (*text == a) return text;
  }
  Fail(f.key, path, "'" + *text + "' is not one of: " + ListNames(allowed));
  return std::nullopt;
}

std::optional<bool> YamlFieldReader::Bool(const YamlField& f, const std::string& path) {
  std::optional<std::string> text = Scalar(f, path);
  if (!text) return std::nullopt;
  if (*text == "true") return true;
  if (*text == "false") return false;
  Fail(f.key, path, "expected true or false, got '" + *text + "'");
  return std::nullopt;
}

std::optional<std::vector<std::string>> YamlFieldReader::StringList(const YamlField& f,
                                                                    const std::string& path,
                                                                    bool allow_empty) {
  if (!f.value.IsSequence()) {
    Fail(f.key, path, "expected a list, got " + YamlKindName(f.value));
    return std::nullopt;
  }
  if (f.value.size() == 0 && !allow_empty) {
    Fail(f.key, path, "the list must not be empty");
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (std::size_t i = 0; i < f.value.size(); ++i) {
    const YAML::Node item = f.value[i];
    if (!item.IsScalar() || item.Scalar().empty()) {
      Fail(item, IndexKey(path, i),
           "expected a non-empty string, got " +
               (item.IsScalar() ? std::string("an empty string") : YamlKindName(item)));
      ok = false;
      continue;
    }
    out.push_back(item.Scalar());
  }
  if (!ok) return std::nullopt;
  return out;
}

void YamlFieldReader::UnknownKeys(const YAML::Node& map,
                                  std::initializer_list<std::string_view> allowed,
                                  const std::string& prefix) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (!known) Fail(it->first, prefix + key, "unknown key; allowed here: " + ListNames(allowed));
  }
}

std::string YamlFieldReader::Required(const YAML::Node& map, const std::string& key) {
  const YAML::Node n = map[key];
  if (!n) {
    Fail(map, key, "required key is missing");
    return "";
  }
  if (!n.IsScalar() || n.Scalar().empty()) {
    Fail(n, key, "must be a non-empty string");
    return "";
  }
  return n.Scalar();
}

std::string YamlFieldReader::Optional(const YAML::Node& map, const std::string& key) {
  const YAML::Node n = map[key];
  if (!n) return "";
  if (!n.IsScalar()) {
    Fail(n, key, "must be a string");
    return "";
  }
  return n.Scalar();
}

std::vector<std::string> YamlFieldReader::List(const YAML::Node& map, const std::string& key,
                                               const std::string& path) {
  std::vector<std::string> out;
  const YAML::Node n = map[key];
  if (!n) return out;
  if (!n.IsSequence()) {
    Fail(n, path, "must be a list of strings");
    return out;
  }
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar()) {
      Fail(n[i], IndexKey(path, i), "must be a string");
      continue;
    }
    out.push_back(n[i].Scalar());
  }
  return out;
}

int YamlFieldReader::IntegerAt(const YAML::Node& n, const std::string& path, int lo, int hi) {
  const std::optional<int64_t> value = n.IsScalar() ? DecimalInteger(n.Scalar()) : std::nullopt;
  if (!value || *value < lo || *value > hi) {
    Fail(n, path,
         "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
             (n.IsScalar() ? ", got '" + n.Scalar() + "'" : ""));
    return lo;
  }
  return static_cast<int>(*value);
}

}  // namespace faultline
