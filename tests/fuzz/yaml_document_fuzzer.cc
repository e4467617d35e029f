// Fuzzes the shared YAML parser: ParseYamlDocuments on arbitrary bytes must return without
// crashing or hanging, and what it accepts must be safe to walk: a full walk with every alias
// followed visits at most kMaxYamlNodes nodes (no cycles, no alias blow-up) and goes no deeper
// than kMaxYamlDepth collections.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/core/yaml_document.h"

namespace {

// Visits `node` and everything under it; aborts past the limits instead of running away.
void Walk(const YAML::Node& node, int depth, size_t& visited) {
  // A scalar inside kMaxYamlDepth collections is one level deeper than they are.
  if (++visited > faultline::kMaxYamlNodes || depth > faultline::kMaxYamlDepth + 1) std::abort();
  if (node.IsSequence()) {
    for (const YAML::Node& child : node) Walk(child, depth + 1, visited);
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      Walk(entry.first, depth + 1, visited);
      Walk(entry.second, depth + 1, visited);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  faultline::Result<std::vector<YAML::Node>> docs = faultline::ParseYamlDocuments(text, "f.yaml");
  if (!docs.ok()) {
    if (docs.errors().empty()) std::abort();
    return 0;
  }
  size_t visited = 0;
  for (const YAML::Node& doc : docs.value()) Walk(doc, 1, visited);
  return 0;
}
