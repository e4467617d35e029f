#include "agent/daemon/source_set.h"

#include <spdlog/spdlog.h>

#include <set>
#include <tuple>

namespace faultline {
namespace {

// One section of `base` (a Config with no sources) per entry of `list`, by id.
template <typename Section>
void AddSections(const Config& base, const std::vector<Section>& list,
                 std::vector<Section> Config::*member, std::map<std::string, Config>& out) {
  for (const Section& section : list) {
    Config one = base;
    (one.*member).push_back(section);
    out.emplace(section.id, std::move(one));
  }
}

}  // namespace

// Both walk every registered source type (kSourceLists, config.h), never a named list.
std::map<std::string, Config> SourceSections(const Config& config) {
  Config base = config;
  ForEachSourceList(base, [](auto& list) { list.clear(); });
  std::map<std::string, Config> sections;
  std::apply([&](auto... member) { (AddSections(base, config.*member, member, sections), ...); },
             kSourceLists);
  return sections;
}

bool SameSourceSection(const Config& a, const Config& b) {
  return std::apply([&](auto... member) { return ((a.*member == b.*member) && ...); },
                    kSourceLists);
}

Result<SourceSet::Running> SourceSet::Start(Config section) {
  Running running;
  running.section = std::make_unique<Config>(std::move(section));
  std::vector<std::unique_ptr<Source>> built = BuildSources(context_(*running.section));
  // A section holds one source, so one builder made it.
  if (!built.empty()) {
    if (Result<void> opened = built.front()->Open(); !opened.ok()) return opened.errors();
    running.source = std::move(built.front());
    running.source->Start();
  }
  return running;
}

SourceSet::Changes SourceSet::Apply(const Config& config) {
  Changes changes;
  std::map<std::string, Config> next = SourceSections(config);
  // Every source that changed or went is stopped before any starts, so that a socket address or
  // file one of them releases is free for the one that takes it over.
  std::set<std::string> changed;
  for (auto it = running_.begin(); it != running_.end();) {
    const auto wanted = next.find(it->first);
    if (wanted != next.end() && SameSourceSection(*it->second.section, wanted->second)) {
      next.erase(wanted);  // unchanged: keeps running
      ++it;
      continue;
    }
    if (it->second.source != nullptr) it->second.source->Stop();
    if (wanted == next.end()) {
      changes.stopped.push_back(it->first);
    } else {
      changed.insert(it->first);
    }
    it = running_.erase(it);
  }
  for (auto& [id, section] : next) {
    Result<Running> started = Start(std::move(section));
    if (!started.ok()) {
      changes.failed.emplace_back(id, JoinErrors(started.errors()));
      continue;
    }
    running_.emplace(id, std::move(started).value());
    (changed.count(id) != 0 ? changes.restarted : changes.started).push_back(id);
  }
  for (const std::string& id : changes.stopped) spdlog::info("source {} stopped", id);
  for (const std::string& id : changes.restarted) spdlog::info("source {} restarted", id);
  for (const auto& [id, error] : changes.failed) {
    spdlog::error("source {} not started: {}", id, error);
  }
  return changes;
}

void SourceSet::Stop() {
  for (auto& [id, running] : running_) {
    if (running.source != nullptr) running.source->Stop();
  }
  running_.clear();
}

std::vector<std::pair<std::string, SourceStatus>> SourceSet::Status() const {
  std::vector<std::pair<std::string, SourceStatus>> status;
  for (const auto& [id, running] : running_) {
    status.emplace_back(id, running.source != nullptr ? running.source->Status() : SourceStatus{});
  }
  return status;
}

std::string SourceSet::NotReadyReason() const {
  for (const auto& [id, running] : running_) {
    if (running.source == nullptr) continue;
    std::string reason = running.source->NotReadyReason();
    if (!reason.empty()) return "source " + id + ": " + reason;
  }
  return "";
}

}  // namespace faultline
