// Reserving an L2's channels (and their miss-status registers) for counts of
// lines per channel (channel_count.h): every channel with lines is busy from
// max(arrival, its free time) for its lines x the line time, as
// BusyUntil::reserve. Host-speed machinery beside the L2 (l2_cache.h): a
// scalar reference and an AVX2 version (four channels at a time, chosen at
// run time where the host has it and avx2_fits()), with the same results
// (tests/sim/test_host_variants.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/core/host_isa.h"
#include "sim/core/sim_time.h"

namespace tdmsim::sim::channel_reserve {

// Channel ch with lines[ch] > 0 lines (16-bit counts) is busy from
// max(arrive, free) for lines x line_time; returns the latest end, or
// `arrive` when no channel has lines.
Tick lines_scalar(const std::uint16_t* lines, Tick arrive, Tick line_time, BusyUntil* busy, std::size_t channels);
// lines_scalar() for `runs` rows in turn, row k at rows + k x stride arriving
// at at + offsets[k]; returns the latest of every row's result (`at` when
// there are none).
Tick runs_scalar(const std::uint16_t* rows, std::size_t stride, const Tick* offsets, std::size_t runs, Tick at,
                 Tick line_time, BusyUntil* busy, std::size_t channels);
// Channel ch with n = per_channel[ch] + every > 0 misses holds its MSHRs from
// max(arrive, free) for n x hold; returns the latest such start, or `arrive`.
Tick mshrs_scalar(const std::uint32_t* per_channel, std::uint64_t every, Tick hold, Tick arrive, BusyUntil* busy,
                  std::size_t channels);

// Whether the AVX2 versions apply: the channels come in fours and the line
// time (or MSHR hold) fits 32 bits (their products are 32 x 32 -> 64 bits).
inline bool avx2_fits(std::size_t channels, Tick per_line) {
  return channels % 4 == 0 && per_line <= 0xFFFFFFFFull;
}

#if TDMSIM_X86_VARIANTS
// The same, four channels at a time (host_runs(Simd::avx2) and avx2_fits();
// mshrs_avx2 also needs every channel's misses below 2^32).
__attribute__((target("avx2"))) Tick lines_avx2(const std::uint16_t* lines, Tick arrive, Tick line_time,
                                                BusyUntil* busy, std::size_t channels);
__attribute__((target("avx2"))) Tick runs_avx2(const std::uint16_t* rows, std::size_t stride, const Tick* offsets,
                                               std::size_t runs, Tick at, Tick line_time, BusyUntil* busy,
                                               std::size_t channels);
__attribute__((target("avx2"))) Tick mshrs_avx2(const std::uint32_t* per_channel, std::uint64_t every, Tick hold,
                                                Tick arrive, BusyUntil* busy, std::size_t channels);
#endif

// mshrs_*() by `simd` (Simd::avx2 where the host has it and the counts fit:
// at most `most` misses on a channel).
inline Tick mshrs(Simd simd, const std::uint32_t* per_channel, std::uint64_t every, Tick hold, std::uint64_t most,
                  Tick arrive, BusyUntil* busy, std::size_t channels) {
#if TDMSIM_X86_VARIANTS
  if (simd == Simd::avx2 && avx2_fits(channels, hold) && most <= 0xFFFFFFFFull) {
    return mshrs_avx2(per_channel, every, hold, arrive, busy, channels);
  }
#endif
  (void)simd;
  (void)most;
  return mshrs_scalar(per_channel, every, hold, arrive, busy, channels);
}

}  // namespace tdmsim::sim::channel_reserve
