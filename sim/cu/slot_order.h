// A compute unit's slots in the order it runs their steps: by time, the
// lower index first among equal times (ComputeUnit::resume steps the first).
// Only the first slot's time changes between two looks at the order (the
// unit steps it, or refills it), so the order is kept rather than scanned
// for the earliest every step: a list linked in that order, the first slot
// taken off its front and put back after the slots now before it, one
// comparison each (a unit has a handful of slots), or at once behind the
// last. The same slot comes first as from a scan for the earliest time with
// the first of equals (tests/sim/test_compute_unit_order.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/core/sim_time.h"

namespace tdmsim::sim {

class SlotOrder {
 public:
  struct Entry {
    Tick time = 0;
    std::uint32_t slot = 0;
  };
  // The slots' times, slot i at times[i] (idle ones at a time after every
  // busy one's, ~0).
  void reset(const std::vector<Tick>& times) {
    const auto count = static_cast<std::uint32_t>(times.size());
    // The slots, then an end mark after every slot (the last time, the
    // last index) that the walk in requeue_first stops at.
    time_.assign(times.begin(), times.end());
    time_.push_back(~Tick{0});
    next_.assign(count + 1, count);
    // Slots in index order, each put after those earlier or equal.
    head_ = count;
    tail_ = count;
    for (std::uint32_t i = 0; i < count; ++i) {
      if (!before(i, head_)) {
        std::uint32_t cur = head_;
        while (!before(i, next_[cur])) cur = next_[cur];
        next_[i] = next_[cur];
        next_[cur] = i;
      } else {
        next_[i] = head_;
        head_ = i;
      }
    }
    for (std::uint32_t cur = head_; cur != count; cur = next_[cur]) tail_ = cur;
  }
  // The slot to step next and its time (size() > 0).
  Entry first() const { return Entry{time_[head_], head_}; }
  // The first slot's time is now `t`: it moves back behind the slots now
  // before it (earlier, or equal and of a lower index).
  [[gnu::always_inline]] void requeue_first(Tick t) {
    const std::uint32_t n = head_;
    time_[n] = t;
    std::uint32_t cur = next_[n];
    if (before(n, cur)) return;  // still the first
    head_ = cur;
    // Behind the last slot (where a slot that ran or waited mostly goes):
    // no walk. (n is not the last: another slot comes after it.)
    if (!before(n, tail_)) {
      next_[n] = next_[tail_];
      next_[tail_] = n;
      tail_ = n;
      return;
    }
    while (!before(n, next_[cur])) cur = next_[cur];
    next_[n] = next_[cur];
    next_[cur] = n;
  }
  std::size_t size() const { return next_.size() - 1; }
  // The k-th slot in order (k < size()).
  Entry at(std::size_t k) const {
    std::uint32_t cur = head_;
    for (std::size_t i = 0; i < k; ++i) cur = next_[cur];
    return Entry{time_[cur], cur};
  }
  // Where the order is kept (to ask the host's caches for it).
  const void* data() const { return time_.data(); }

 private:
  // Whether slot a comes before slot b (the end mark comes after every slot).
  bool before(std::uint32_t a, std::uint32_t b) const {
    return time_[a] < time_[b] || (time_[a] == time_[b] && a < b);
  }
  std::vector<Tick> time_;            // per slot, then the end mark's
  std::vector<std::uint32_t> next_;   // the slot after each in order (the end mark: size())
  std::uint32_t head_ = 0;            // the first slot
  std::uint32_t tail_ = 0;            // the last (the end mark when there are none)
};

}  // namespace tdmsim::sim
