// DescriptorBudget: how many file descriptors the file tailers of one agent may hold together, so
// that a glob over 10,000 files never takes the descriptors the HTTP listener, its connections
// and the state store need (EMFILE on accept() would make /metrics unreachable).
//
// Holders (the tailers) register themselves; when the budget is spent, Acquire asks holders, the
// requester first, to close their least recently used descriptor. A holder can always reopen that
// file later (the tailer rechecks its identity), so closing one loses nothing. A descriptor that
// must stay open (a rotated file still being drained, which has no path to reopen it by) is
// acquired with `force`, which may exceed the budget: such files are few and short-lived.
//
// Not thread-safe: every holder runs on the one event-loop thread. Holders must unregister before
// they are destroyed.
#ifndef FAULTLINE_SOURCE_DESCRIPTOR_BUDGET_H_
#define FAULTLINE_SOURCE_DESCRIPTOR_BUDGET_H_

#include <cstddef>
#include <vector>

namespace faultline {

class DescriptorBudget {
 public:
  class Holder {
   public:
    virtual ~Holder() = default;
    // Closes one descriptor that can be reopened later (calling Release); false if none.
    virtual bool ReleaseOne() = 0;
  };

  explicit DescriptorBudget(size_t limit) : limit_(limit == 0 ? 1 : limit) {}

  // The budget an agent gets from its descriptor limit (RLIMIT_NOFILE's soft limit, already
  // raised): `configured`, or half the limit when 0 (auto), leaving the other half to HTTP
  // connections, the state store and inotify; a configured value that leaves fewer than
  // kReserve descriptors is lowered, with a warning.
  static size_t ForLimit(size_t descriptor_limit, size_t configured);
  static constexpr size_t kReserve = 64;

  void Register(Holder* holder);
  void Unregister(Holder* holder);

  // Counts one descriptor about to be opened by `requester`; false when the budget is spent and
  // no holder could close one.
  bool Acquire(Holder* requester, bool force = false);
  void Release();

  size_t limit() const { return limit_; }
  size_t in_use() const { return in_use_; }

 private:
  const size_t limit_;
  size_t in_use_ = 0;
  std::vector<Holder*> holders_;
};

// Raises the soft RLIMIT_NOFILE to the hard limit (capped by fs.nr_open) and returns the soft
// limit now in force. Logs what it did; a failure to raise keeps the old limit and is logged.
size_t RaiseDescriptorLimit();

}  // namespace faultline

#endif  // FAULTLINE_SOURCE_DESCRIPTOR_BUDGET_H_
