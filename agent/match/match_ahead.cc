#include "agent/match/match_ahead.h"

#include <algorithm>
#include <system_error>
#include <utility>

namespace faultline {

MatchAhead::MatchAhead(const PatternSet& patterns, size_t depth) : patterns_(patterns) {
  for (size_t i = 0; i < depth; ++i) {
    slots_.push_back(std::make_unique<Slot>());
    free_.push_back(slots_.back().get());
  }
}

std::unique_ptr<MatchAhead> MatchAhead::Start(const PatternSet& patterns, size_t threads,
                                              size_t depth) {
  threads = std::max<size_t>(threads, 1);
  std::unique_ptr<MatchAhead> ahead(new MatchAhead(patterns, std::max(depth, threads + 1)));
  try {
    for (size_t i = 0; i < threads; ++i)
      ahead->workers_.emplace_back([a = ahead.get()] { a->Work(); });
  } catch (const std::system_error&) {
    return nullptr;  // the destructor stops the workers that did start
  }
  return ahead;
}

MatchAhead::~MatchAhead() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

MatchAhead::Slot* MatchAhead::Acquire() {
  if (free_.empty()) return nullptr;
  Slot* slot = free_.back();
  free_.pop_back();
  return slot;
}

void MatchAhead::Submit(Slot* slot) {
  submitted_.push_back(slot);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot->matched = false;
    queue_.push_back(slot);
  }
  work_ready_.notify_one();
}

MatchAhead::Slot* MatchAhead::Oldest() {
  if (submitted_.empty()) return nullptr;
  Slot* slot = submitted_.front();
  submitted_.pop_front();
  std::unique_lock<std::mutex> lock(mutex_);
  matched_.wait(lock, [slot] { return slot->matched; });
  return slot;
}

void MatchAhead::Release(Slot* slot) {
  // A slot keeps the buffers of an ordinary batch; one that held huge lines gives them back, so
  // idle slots never hold more than a few ordinary batches' worth.
  if (slot->batch.capacity_bytes() > kRetainedSlotBytes) {
    slot->batch = LineBatch();
    std::vector<PatternSet::Hit>().swap(slot->hits);
  }
  slot->batch.Clear();
  free_.push_back(slot);
}

void MatchAhead::Work() {
  MatchScratch scratch(patterns_);
  while (true) {
    Slot* slot = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      slot = queue_.front();
      queue_.pop_front();
    }
    patterns_.Match(slot->batch, scratch, slot->hits);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slot->matched = true;
    }
    // Every waiter checks its own slot; the stream's thread is the only one.
    matched_.notify_all();
  }
}

}  // namespace faultline
