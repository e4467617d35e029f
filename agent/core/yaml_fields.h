// YamlFieldReader: the one reader of YAML fields behind faultline's loaders (the config,
// agent/config/, and rule files, agent/rules/rule_loader.cc). It turns nodes parsed by
// yaml_document.h into values and records every problem as an Error naming the file, the
// 1-based line, the key as a dotted path (`sources[0].start_at`, `context.within_lines`) and,
// in a rule file, the rule's id.
//
// A load never stops at its first problem: a read that fails records an Error and answers nullopt
// (or an empty value), and the caller goes on, so one load reports everything wrong at once.
// A map is read in one of two ways, with the same unknown-key check:
// - Fields() walks it in file order (the config: every key is one setting, duplicates are errors);
// - Lookup reads (Required, Optional, List, IntegerAt) take keys by name from a map checked once
//   with UnknownKeys() (a rule: keys depend on one another, and a missing one is an error at the
//   map's line).
// Errors of a config setting point at the line of its key, those of a rule at the value's line:
// both are kept as the tests and users know them.
//
// The reader appends to an ErrorList the caller owns and keeps the file name; it is used on one
// thread at a time (a rule load parses files on several threads, one reader each). It never
// throws: every node is checked for its kind before it is read.
#ifndef FAULTLINE_CORE_YAML_FIELDS_H_
#define FAULTLINE_CORE_YAML_FIELDS_H_

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/result.h"

namespace faultline {

// The 1-based line of `node`, 0 when it has none (a node made by the program).
int YamlLine(const YAML::Node& node);
// "nothing", "a single value", "a list", "a map": for "expected X, got Y".
std::string YamlKindName(const YAML::Node& node);
// `path.name` (`name` alone at the top) and `path[i]`: the key paths errors name.
std::string JoinKey(const std::string& path, std::string_view name);
std::string IndexKey(const std::string& path, std::size_t i);
// "a, b, c".
std::string ListNames(std::initializer_list<std::string_view> names);

// One `key: value` of a YAML map, with the nodes kept for their line numbers.
struct YamlField {
  std::string name;
  YAML::Node key;
  YAML::Node value;
};

class YamlFieldReader {
 public:
  YamlFieldReader(std::string file, ErrorList* errors) : file_(std::move(file)), errors_(errors) {}

  const std::string& file() const { return file_; }
  // Errors recorded from now on name this rule (empty: none).
  void set_rule_id(std::string id) { rule_id_ = std::move(id); }
  // How many errors the list holds: a caller compares before and after to know whether a part
  // it read was right.
  std::size_t error_count() const { return errors_->size(); }
  // The list errors go to (a reader of another file, such as the config's fixes file, adds to it).
  ErrorList* errors() const { return errors_; }

  void Fail(int line, std::string key, std::string message);
  void Fail(const YAML::Node& at, std::string key, std::string message) {
    Fail(YamlLine(at), std::move(key), std::move(message));
  }

  // --- Walking a map (errors at the key's line) ---

  // The entries of a map in file order. Reports keys outside `allowed`, duplicate keys, and
  // non-map values; a null value (`http:` with nothing under it) is an empty map.
  std::vector<YamlField> Fields(const YAML::Node& node, const std::string& path,
                                std::initializer_list<std::string_view> allowed);
  std::optional<std::string> Scalar(const YamlField& f, const std::string& path);
  // A decimal integer in [min, max] (DecimalInteger: no hex, octal or wrapped values).
  std::optional<int64_t> Integer(const YamlField& f, const std::string& path, int64_t min,
                                 int64_t max);
  std::optional<std::string> Choice(const YamlField& f, const std::string& path,
                                    std::initializer_list<std::string_view> allowed);
  // `true` or `false`.
  std::optional<bool> Bool(const YamlField& f, const std::string& path);
  // A list of non-empty strings, itself non-empty unless `allow_empty`.
  std::optional<std::vector<std::string>> StringList(const YamlField& f, const std::string& path,
                                                     bool allow_empty = false);

  // --- Looking keys up (errors at the value's line) ---

  // Reports every key of `map` outside `allowed`, as `prefix` + key.
  void UnknownKeys(const YAML::Node& map, std::initializer_list<std::string_view> allowed,
                   const std::string& prefix);
  // map[key]: a non-empty string; "" (reported) when missing or not one.
  std::string Required(const YAML::Node& map, const std::string& key);
  // map[key]: a string; "" when missing, "" (reported) when not a string.
  std::string Optional(const YAML::Node& map, const std::string& key);
  // map[key]: a list of strings; empty when missing, reported item by item under `path`.
  std::vector<std::string> List(const YAML::Node& map, const std::string& key,
                                const std::string& path);
  // `node`: a decimal integer in [lo, hi]; `lo` (reported) when not.
  int IntegerAt(const YAML::Node& node, const std::string& path, int lo, int hi);

 private:
  const std::string file_;
  ErrorList* const errors_;
  std::string rule_id_;
};

}  // namespace faultline

#endif  // FAULTLINE_CORE_YAML_FIELDS_H_
