#include "agent/daemon/sources.h"

namespace faultline {

std::vector<std::unique_ptr<Source>> BuildSources(const SourceContext& context) {
  // Every registered source type (kSourceLists), each section through its type's BuildSource.
  std::vector<std::unique_ptr<Source>> sources;
  ForEachSourceList(context.config, [&](const auto& sections) {
    for (const auto& section : sections) sources.push_back(BuildSource(context, section));
  });
  return sources;
}

}  // namespace faultline
