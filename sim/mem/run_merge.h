// Runs of lines, as the caches hand them on: the runs of set bits of a tag
// lookup's line mask, the mask's bit count, and misses merged into runs of
// consecutive bytes as a cache's walk finds them. Host-speed shortcuts, each
// beside a plain reference that gives the same result
// (tests/sim/test_host_variants.cpp); no effect on any simulated time.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace tdmsim::sim {

// A run of consecutive bytes (whole lines, as the caches move them).
struct ByteRun {
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;
};

// Appends a run, merging it into the last one when they touch: the caches
// collect their misses and write-backs this way, in address order.
inline void append_run(std::vector<ByteRun>& runs, std::uint64_t addr, std::uint64_t bytes) {
  if (!runs.empty() && runs.back().addr + runs.back().bytes == addr) {
    runs.back().bytes += bytes;
  } else {
    runs.push_back({addr, bytes});
  }
}

// Calls f(first, length) for each run of consecutive set bits of `mask`, low
// bits first: the runs of lines a tag lookup reports.
template <class F>
void for_each_bit_run(std::uint32_t mask, F f) {
  // One run from bit 0 (a run lookup that missed whole: the common case).
  if ((mask & (mask + 1)) == 0) {
    if (mask != 0) f(0u, static_cast<std::uint32_t>(std::countr_one(mask)));
    return;
  }
  while (mask != 0) {
    const auto first = static_cast<std::uint32_t>(std::countr_zero(mask));
    const auto len = static_cast<std::uint32_t>(std::countr_one(mask >> first));
    f(first, len);
    mask = len + first >= 32 ? 0 : mask & ~(((1u << len) - 1) << first);
  }
}

// for_each_bit_run, bit by bit.
template <class F>
void for_each_bit_run_reference(std::uint32_t mask, F f) {
  for (std::uint32_t i = 0; i < 32;) {
    if ((mask >> i & 1u) == 0) {
      ++i;
      continue;
    }
    std::uint32_t len = 0;
    while (i + len < 32 && (mask >> (i + len) & 1u) != 0) ++len;
    f(i, len);
    i += len;
  }
}

// Set bits of a mask (lines of a run). Without relying on the host's popcnt
// instruction (the baseline x86-64 target has none, and the library call
// shows in profiles); inline, as it runs once per run lookup.
inline std::uint32_t count_bits(std::uint32_t m) {
  // A run's lines from bit 0 (all missed, the common case), or none.
  if ((m & (m + 1)) == 0) return static_cast<std::uint32_t>(std::countr_one(m));
  m = m - ((m >> 1) & 0x55555555u);
  m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
  return (((m + (m >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24;
}

inline std::uint32_t count_bits_reference(std::uint32_t m) {
  std::uint32_t n = 0;
  for (; m != 0; m >>= 1) n += m & 1u;
  return n;
}

// Runs of bytes added to `out` with the last run kept out of the vector
// while it grows: a cache's run loop extends it block after block without
// reading the vector back. The same vector once flush() is called.
//   IntoOut true (RunAppender): as append_run (mem_access.h) would append
//     them, so the first run may merge into the one `out` held before.
//   IntoOut false (RunCollector): as append_run would append them to an
//     empty list, never merged into a run `out` held before: every run goes
//     through add(), so a run pushed never touches the next and flush()
//     pushes without reading the vector back. A MALL batch's runs each
//     collect their own misses onto the one list (Mall::look_up;
//     tests/sim/test_host_variants.cpp).
template <bool IntoOut>
class RunBuilder {
 public:
  explicit RunBuilder(std::vector<ByteRun>& out) : out_(out) {}
  [[gnu::always_inline]] void add(std::uint64_t addr, std::uint64_t bytes) {
    if (bytes_ != 0 && addr_ + bytes_ == addr) {
      bytes_ += bytes;
      return;
    }
    if (bytes_ != 0) push();
    addr_ = addr;
    bytes_ = bytes;
  }
  // Adds the run kept back (call before appending to `out` otherwise).
  void flush() {
    if (bytes_ != 0) push();
    bytes_ = 0;
  }

 private:
  [[gnu::always_inline]] void push() {
    if constexpr (IntoOut) {
      append_run(out_, addr_, bytes_);
    } else {
      out_.push_back({addr_, bytes_});
    }
  }

  std::vector<ByteRun>& out_;
  std::uint64_t addr_ = 0, bytes_ = 0;
};
using RunAppender = RunBuilder<true>;
using RunCollector = RunBuilder<false>;

}  // namespace tdmsim::sim
