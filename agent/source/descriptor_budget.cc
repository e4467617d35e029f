#include "agent/source/descriptor_budget.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace faultline {

size_t DescriptorBudget::ForLimit(size_t descriptor_limit, size_t configured) {
  const size_t ceiling = descriptor_limit > 2 * kReserve ? descriptor_limit - kReserve
                                                         : descriptor_limit / 2;
  if (configured == 0) return std::max<size_t>(1, descriptor_limit / 2);
  if (configured > ceiling) {
    spdlog::warn(
        "limits.max_open_files is {} but the descriptor limit is {}; using {} so that {} stay "
        "for HTTP connections and the agent itself",
        configured, descriptor_limit, ceiling, descriptor_limit - ceiling);
    return std::max<size_t>(1, ceiling);
  }
  return configured;
}

void DescriptorBudget::Register(Holder* holder) { holders_.push_back(holder); }

void DescriptorBudget::Unregister(Holder* holder) {
  holders_.erase(std::remove(holders_.begin(), holders_.end(), holder), holders_.end());
}

bool DescriptorBudget::Acquire(Holder* requester, bool force) {
  if (in_use_ >= limit_ && !force) {
    bool released = requester != nullptr && requester->ReleaseOne();
    for (size_t i = 0; !released && i < holders_.size(); ++i) {
      if (holders_[i] != requester) released = holders_[i]->ReleaseOne();
    }
    if (!released) return false;
  }
  ++in_use_;
  return true;
}

void DescriptorBudget::Release() {
  if (in_use_ > 0) --in_use_;
}

size_t RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    spdlog::warn("cannot read the descriptor limit: {}", std::strerror(errno));
    return 1024;
  }
  rlim_t target = limit.rlim_max;
  // An unlimited hard limit still stops at the kernel's per-process ceiling.
  rlim_t nr_open = 0;
  if (std::ifstream("/proc/sys/fs/nr_open") >> nr_open && nr_open > 0) {
    target = std::min(target, nr_open);
  }
  if (target > limit.rlim_cur) {
    const rlim_t before = limit.rlim_cur;
    limit.rlim_cur = target;
    if (setrlimit(RLIMIT_NOFILE, &limit) == 0) {
      spdlog::info("descriptor limit raised from {} to {}", before, target);
    } else {
      spdlog::warn("cannot raise the descriptor limit from {} to {}: {}", before, target,
                   std::strerror(errno));
      limit.rlim_cur = before;
    }
  }
  return static_cast<size_t>(limit.rlim_cur);
}

}  // namespace faultline
