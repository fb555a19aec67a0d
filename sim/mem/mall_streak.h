// The MALL's loop over a stream of whole interleave chunks that miss (a
// weight tile the MALL has not seen): host-speed machinery beside the MALL
// (mall.cpp), in a baseline and a BMI2 version and a chunk-by-chunk
// reference, with the same results and tag records
// (tests/sim/test_host_variants.cpp). No effect on any simulated time.
#pragma once

#include <cstdint>

#include "sim/core/divisor.h"
#include "sim/core/host_isa.h"
#include "sim/mem/cache_tags.h"
#include "sim/mem/hbm.h"

namespace tdmsim::sim {

// What chunk_streak() found.
struct ChunkStreak {
  std::uint64_t missed_whole = 0;
  bool stopped = false;
  std::uint32_t slice = 0;  // of the chunk it stopped at
  CacheTags::Run next;      // that chunk's lookup
};

// Reads of whole interleave chunks, each one tag block, from `addr` on, at
// most `count`, each looked up in its slice's tags (`records[slice]`, all of
// the geometry of `tags`, arrays of CacheTags::Writes::never: the MALL's
// blocks are never written), for as long as each misses whole
// (CacheTags::Walker::miss_whole: nearly every chunk of a weight tile).
// `missed_whole` of them did; if it `stopped` before `count`, the chunk after
// them was looked up too (in slice `slice`, with result `next`) for the
// caller's general case. Pow2: the map's and per_stack's divisors are powers
// of two; then, where a chunk is one interleave block, each chunk's slice and
// address inside it come from the last one's (HbmGroupBlockWalk,
// hbm_walk.h). (A loop of its own, not inlined: inside the MALL's run loop the
// decode's shifts and the counters did not fit the registers and were
// reloaded from the stack for every chunk.)
template <bool Pow2>
ChunkStreak chunk_streak_base(const HbmAddressMap& map, const Divisor& per_stack, const CacheTags::Walker& tags,
                              std::uint32_t* const* records, std::uint64_t addr, std::uint64_t count);
#if TDMSIM_X86_VARIANTS
// The same loop compiled for BMI2 (its shifts by a count in a register need
// no move to CL first).
template <bool Pow2>
__attribute__((target("bmi2"))) ChunkStreak chunk_streak_bmi2(const HbmAddressMap& map, const Divisor& per_stack,
                                                              const CacheTags::Walker& tags,
                                                              std::uint32_t* const* records, std::uint64_t addr,
                                                              std::uint64_t count);
#endif
// The same, chunk by chunk: decode, look the whole block up, stop at the
// first that did not miss whole.
template <bool Pow2>
ChunkStreak chunk_streak_reference(const HbmAddressMap& map, const Divisor& per_stack, const CacheTags::Walker& tags,
                                   std::uint32_t* const* records, std::uint64_t addr, std::uint64_t count);

// The version the host runs best (CacheTags::Geometry::bmi2).
template <bool Pow2>
inline ChunkStreak chunk_streak(const HbmAddressMap& map, const Divisor& per_stack, const CacheTags::Walker& tags,
                                std::uint32_t* const* records, std::uint64_t addr, std::uint64_t count) {
#if TDMSIM_X86_VARIANTS
  if (tags.bmi2()) return chunk_streak_bmi2<Pow2>(map, per_stack, tags, records, addr, count);
#endif
  return chunk_streak_base<Pow2>(map, per_stack, tags, records, addr, count);
}

}  // namespace tdmsim::sim
