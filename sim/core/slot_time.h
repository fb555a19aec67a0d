// Where the time of a CU's workgroup slots goes, cause by cause: the counts
// behind `tdmsim run`'s attribution of a layer's time (docs/moe-timing.md,
// "Where the time goes"). Every picosecond of every slot of a CU, from a
// kernel's start to that CU's last workgroup end, is in exactly one cause,
// so the causes of a kernel add up to slots x that window, in whole
// picoseconds.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace tdmsim::sim {

enum class SlotCause : std::uint8_t {
  dispatch,   // the dispatch latency before each workgroup starts in the slot
  slot_wait,  // a workgroup held back until its release time (TDM time slots)
  compute,    // main-loop iterations' matrix and vector work, epilogue work
  memory,     // waiting for operands, the prologue's loads and the stores
  gather,     // waiting for operands whose last to arrive are gathered token rows
  idle,       // nothing left to run in the slot before the CU's last workgroup ends
};
inline constexpr std::size_t kSlotCauses = 6;

struct SlotTime {
  // Per cause: picoseconds summed over slots (slot-ps).
  std::array<std::uint64_t, kSlotCauses> ps{};
  // Per CU: kernel start to its last workgroup's end, summed over CUs (not
  // over slots): the window the slots' causes partition.
  std::uint64_t window_ps = 0;

  std::uint64_t& operator[](SlotCause c) { return ps[static_cast<std::size_t>(c)]; }
  std::uint64_t operator[](SlotCause c) const { return ps[static_cast<std::size_t>(c)]; }
  std::uint64_t total() const {
    std::uint64_t t = 0;
    for (const auto v : ps) t += v;
    return t;
  }
  SlotTime& operator+=(const SlotTime& o) {
    for (std::size_t i = 0; i < kSlotCauses; ++i) ps[i] += o.ps[i];
    window_ps += o.window_ps;
    return *this;
  }
  // Counts only grow, so a later total minus an earlier one is what happened between.
  SlotTime& operator-=(const SlotTime& o) {
    for (std::size_t i = 0; i < kSlotCauses; ++i) ps[i] -= o.ps[i];
    window_ps -= o.window_ps;
    return *this;
  }
};

}  // namespace tdmsim::sim
