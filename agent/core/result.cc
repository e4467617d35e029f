#include "agent/core/result.h"

namespace faultline {

// Built with append rather than operator+ chains: g++ 12 at -O3 reports a false -Wrestrict inside
// std::string concatenation of temporaries.
std::string Error::ToString() const {
  std::string out;
  if (!file.empty()) {
    out.append(file);
    if (line > 0) out.append(":").append(std::to_string(line));
    out.append(": ");
  }
  if (!rule_id.empty()) out.append("rule '").append(rule_id).append("': ");
  if (!key.empty()) out.append("key '").append(key).append("': ");
  out.append(message);
  return out;
}

std::string FormatErrors(const ErrorList& errors) {
  std::string out;
  for (const Error& e : errors) out.append("error: ").append(e.ToString()).append("\n");
  return out;
}

std::string JoinErrors(const ErrorList& errors) {
  std::string out;
  for (const Error& e : errors) {
    if (!out.empty()) out.append("; ");
    out.append(e.ToString());
  }
  return out;
}

}  // namespace faultline
