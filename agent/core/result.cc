#include "agent/core/result.h"

namespace faultline {

std::string Error::ToString() const {
  std::string out;
  if (!file.empty()) {
    out += file;
    if (line > 0) out += ":" + std::to_string(line);
    out += ": ";
  }
  if (!rule_id.empty()) out += "rule '" + rule_id + "': ";
  if (!key.empty()) out += "key '" + key + "': ";
  out += message;
  return out;
}

std::string FormatErrors(const ErrorList& errors) {
  std::string out;
  for (const Error& e : errors) {
    out += "error: " + e.ToString() + "\n";
  }
  return out;
}

}  // namespace faultline
