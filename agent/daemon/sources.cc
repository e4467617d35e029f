#include "agent/daemon/sources.h"

namespace faultline {

std::vector<std::unique_ptr<Source>> BuildSources(const SourceContext& context) {
  // One entry per source type; each reads its own section of the config.
  using Builder = void (*)(const SourceContext&, std::vector<std::unique_ptr<Source>>&);
  static constexpr Builder kSourceTypes[] = {
      &BuildFileSources,
      &BuildNetSources,
      &BuildStdinSources,
      &BuildFifoSources,
  };
  std::vector<std::unique_ptr<Source>> sources;
  for (Builder build : kSourceTypes) build(context, sources);
  return sources;
}

}  // namespace faultline
