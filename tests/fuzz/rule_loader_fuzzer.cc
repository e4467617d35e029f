// Fuzzes the rule loader: ParseRules on arbitrary bytes must return (rules or errors) without
// crashing, hanging or exhausting memory, and a load either yields rules or says why not.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/rules/rule_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  faultline::Result<std::vector<faultline::Rule>> rules = faultline::ParseRules(text, "fuzz.yaml");
  if (rules.ok()) {
    for (const faultline::Rule& rule : rules.value()) {
      if (rule.id.empty() || (rule.match_lines.empty() && rule.sequences.empty())) std::abort();
    }
  } else if (rules.errors().empty()) {
    std::abort();
  }
  return 0;
}
