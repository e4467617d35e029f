// ParseYamlDocuments / ParseYamlDocument: the one way faultline turns YAML text (rule files, the
// config) into yaml-cpp nodes, safe on any input.
//
// Why not call yaml-cpp directly: yaml-cpp 0.7.0, the version Debian 12 ships, never returns on
// some malformed input and allocates all the while (~100 MB/s). A document that starts with a
// token its parser has no case for (`,`, `,a`, `"a",`, `!x ,`, `&a ,`, `|` then `,`) leaves that
// token unconsumed; Load() reads such text as an empty document without a word, and LoadAll()
// comes back to the same token forever, adding one empty document per turn. Upstream fixed it
// after 0.7.0 (LoadAll stops on an empty root, later a progress check in
// Parser::HandleNextDocument); 0.7's public API cannot stop a LoadAll in progress. So a parse
// takes three steps:
//   1. libyaml (the reference C parser, fuzzed continuously by OSS-Fuzz) parses the text and stops
//      at the first syntax error with a line, a column and a reason. The same pass records the
//      stream's shape (documents, lists, maps, values, aliases in order) and bounds what yaml-cpp
//      would build: the text size, the number of nodes (yaml-cpp takes ~0.5 KB each) with aliases
//      counted as the nodes they name, the nesting depth, and aliases, which must name an anchor
//      defined before them and outside themselves (yaml-cpp builds `&a [*a]` as a cyclic graph
//      that a recursive walk follows forever).
//   2. yaml-cpp's own parser runs over the text with an event handler that checks each event
//      against that shape and throws at the first difference, so a parse that goes astray stops
//      there. libyaml alone is not enough: fuzzing found text both accept that yaml-cpp reads
//      differently, e.g. `&a?x, y` (libyaml: anchor `a` on "?x, y"; yaml-cpp: anchor `a?x`, then
//      the endless comma), text yaml-cpp splits into more documents than there are, and text where
//      the two resolve an alias to different anchors (`&a [&a\rx, *a]`: libyaml reads the lone
//      CR as a line break, yaml-cpp builds a list that contains itself), so the shape also
//      numbers the anchors each node defines and each alias names.
//   3. yaml-cpp's LoadAll builds the nodes the loaders read, with the line numbers their errors
//      need. It runs the same deterministic parse that step 2 saw end.
// Errors carry `file` and the 1-based line; the message says the column and what is wrong, e.g.
// "invalid YAML at column 1: did not find expected node content (while parsing a block node)".
// Throws nothing. No state; safe to call from any thread.
#ifndef FAULTLINE_CORE_YAML_DOCUMENT_H_
#define FAULTLINE_CORE_YAML_DOCUMENT_H_

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/result.h"

namespace faultline {

// Rule and config files are a few KiB; 4 MiB leaves room for generated packs.
inline constexpr size_t kMaxYamlBytes = size_t{4} << 20;
// ~100 MB of yaml-cpp nodes at most; a 4 MiB file of real rules has well under 100,000.
inline constexpr size_t kMaxYamlNodes = 200'000;
// Rules and config nest 5 levels at most; yaml-cpp itself recurses once per level.
inline constexpr int kMaxYamlDepth = 64;

// A whole number written in decimal (an optional '-', then digits), as every integer in
// faultline's YAML files is read: YAML 1.1's hex (0x10), octal (010, 0o10) and digit separators
// are not numbers here, so `010` is 10 and `0x10` is an error rather than 16. nullopt when `text`
// is not such a number or does not fit in 64 bits.
std::optional<int64_t> DecimalInteger(std::string_view text);

// The text of a YAML file (`what` names it in errors: "config file", "rule file"), read with a
// bound: a file over kMaxYamlBytes is an error after reading one byte more than the limit, never
// read whole, so a config path pointing at /dev/zero or a huge log fails at once.
Result<std::string> ReadYamlFile(const std::string& path, const std::string& what);

// Every document of a stream, in order (a rule file holds one rule per document); an empty
// document is a null node.
Result<std::vector<YAML::Node>> ParseYamlDocuments(std::string_view text, const std::string& file);

// A file of at most one document (the config): a null node when there is none, an error when
// there is more than one, since a second document would be silently ignored otherwise.
Result<YAML::Node> ParseYamlDocument(std::string_view text, const std::string& file);

}  // namespace faultline

#endif  // FAULTLINE_CORE_YAML_DOCUMENT_H_
