// UsableCpus: how many CPUs this process may run on, for sizing the worker threads of `scan` and
// of loading the rule pack. Reads the affinity mask, which taskset, cgroup cpusets and container
// runtimes (docker --cpuset-cpus, Kubernetes' static CPU manager) set; a CPU quota without a
// cpuset (docker --cpus) is not seen, and then the threads share the quota. At least 1; never
// fails; safe from any thread.
#ifndef FAULTLINE_CORE_USABLE_CPUS_H_
#define FAULTLINE_CORE_USABLE_CPUS_H_

#include <cstddef>

namespace faultline {

size_t UsableCpus();

}  // namespace faultline

#endif  // FAULTLINE_CORE_USABLE_CPUS_H_
