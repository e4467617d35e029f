#include "agent/framing/framing_options.h"

namespace faultline {

std::optional<LineFormat> ParseLineFormat(std::string_view name) {
  if (name == "auto") return LineFormat::kAuto;
  if (name == "plain") return LineFormat::kPlain;
  if (name == "cri") return LineFormat::kCri;
  if (name == "docker") return LineFormat::kDocker;
  return std::nullopt;
}

std::string_view LineFormatName(LineFormat format) {
  switch (format) {
    case LineFormat::kAuto:
      return "auto";
    case LineFormat::kPlain:
      return "plain";
    case LineFormat::kCri:
      return "cri";
    case LineFormat::kDocker:
      return "docker";
  }
  return "auto";
}

}  // namespace faultline
