#include "sim/mem/mall_streak.h"

#include <type_traits>

#include "sim/mem/hbm_walk.h"

namespace tdmsim::sim {

namespace {
// (Blocks: Pow2, and each chunk is one interleave block, so the chunks are
// decoded one from the last, HbmGroupBlockWalk.)
template <bool Pow2, bool Blocks>
[[gnu::always_inline]] inline ChunkStreak chunk_streak_loop(const HbmAddressMap& map_in, const Divisor& per_stack_in,
                                                            const CacheTags::Walker& tags_in,
                                                            std::uint32_t* const* records, std::uint64_t addr,
                                                            std::uint64_t count) {
  // Copies in locals: the lookups' stores could alias the originals as far
  // as the compiler knows (and the count too: the result goes back through memory).
  const HbmAddressMap map = map_in;
  const Divisor per_stack = per_stack_in;
  const CacheTags::Walker tags = tags_in;
  const std::uint64_t chunk = tags.block_bytes();
  // The tag set of the chunk kAhead chunks on is asked for while this one is
  // looked up, so that their host cache misses overlap (a stream's chunks
  // fall on sets all over the tags, and these lookups waited on the host's
  // memory for most of their time; no effect on results).
  constexpr std::uint64_t kAhead = 4;
  if constexpr (Blocks) {
    // The chunks decoded one from the last twice over, kAhead chunks apart
    // (HbmGroupBlockWalk): a lead that asks for the sets, and the chunk
    // looked up. (Cheaper than keeping each decode in a ring until its
    // lookup: the ring's stores and loads cost more than a second walk.)
    const HbmGroupBlockWalk blocks(map, per_stack);
    std::uint64_t blk = addr >> map.interleave_shift();  // the looked-up chunk's block
    HbmGroupBlockWalk::Place at = blocks.at(blk);
    HbmGroupBlockWalk::Place lead = at;
    const std::uint64_t ahead = count < kAhead ? count : kAhead;
    for (std::uint64_t n = 0; n < ahead; ++n) {
      tags.prefetch(records[lead.group], lead.local);
      if (n + 1 < count) lead = blocks.next(lead, blk + n + 1);
    }
    const auto walk = [&](auto common) __attribute__((always_inline)) {
      for (std::uint64_t n = 0; n < count; ++n, ++blk) {
        if (n + kAhead < count) {
          tags.prefetch(records[lead.group], lead.local);
          if (n + kAhead + 1 < count) lead = blocks.next(lead, blk + kAhead + 1);
        }
        // (Reads only: writes pass the MALL by, so its lines are never dirty.)
        if (!tags.miss_whole<false, decltype(common)::value>(records[at.group], at.local, false)) {
          return ChunkStreak{n, true, at.group, tags.read_block_never_written(records[at.group], at.local)};
        }
        if (n + 1 < count) at = blocks.next(at, blk + 1);
      }
      return ChunkStreak{count, false, 0, {}};
    };
    return tags.common_shape() ? walk(std::true_type{}) : walk(std::false_type{});
  }
  // Otherwise each chunk is decoded once, when it is asked for, and kept in
  // a ring until its lookup.
  struct Place {
    std::uint32_t slice;
    std::uint64_t local;
  };
  Place ring[kAhead];
  const auto ask = [&](std::uint64_t n) __attribute__((always_inline)) {
    const auto [channel, group_local] = map.channel_and_group_local<Pow2>(addr + n * chunk, per_stack);
    const auto slice = static_cast<std::uint32_t>(per_stack.div_as<Pow2>(channel));
    tags.prefetch(records[slice], group_local);
    ring[n % kAhead] = {slice, group_local};
  };
  for (std::uint64_t n = 0; n < kAhead && n < count; ++n) ask(n);
  const auto walk = [&](auto common) __attribute__((always_inline)) {
    for (std::uint64_t n = 0; n < count; ++n) {
      const Place at = ring[n % kAhead];
      if (n + kAhead < count) ask(n + kAhead);
      // (Reads only: writes pass the MALL by, so its lines are never dirty.)
      if (!tags.miss_whole<false, decltype(common)::value>(records[at.slice], at.local, false)) {
        return ChunkStreak{n, true, at.slice, tags.read_block_never_written(records[at.slice], at.local)};
      }
    }
    return ChunkStreak{count, false, 0, {}};
  };
  return tags.common_shape() ? walk(std::true_type{}) : walk(std::false_type{});
}

}  // namespace

// (Out of line, as the caller's run loop needs: see the declaration.)
template <bool Pow2>
[[gnu::noinline]] ChunkStreak chunk_streak_base(const HbmAddressMap& map, const Divisor& per_stack, const CacheTags::Walker& tags,
                              std::uint32_t* const* records, std::uint64_t addr, std::uint64_t count) {
  if constexpr (Pow2) {
    if (tags.block_bytes() == map.interleave) {
      return chunk_streak_loop<true, true>(map, per_stack, tags, records, addr, count);
    }
  }
  return chunk_streak_loop<Pow2, false>(map, per_stack, tags, records, addr, count);
}
#if TDMSIM_X86_VARIANTS
template <bool Pow2>
[[gnu::noinline]] __attribute__((target("bmi2"))) ChunkStreak chunk_streak_bmi2(const HbmAddressMap& map, const Divisor& per_stack,
                                                              const CacheTags::Walker& tags,
                                                              std::uint32_t* const* records, std::uint64_t addr,
                                                              std::uint64_t count) {
  if constexpr (Pow2) {
    if (tags.block_bytes() == map.interleave) {
      return chunk_streak_loop<true, true>(map, per_stack, tags, records, addr, count);
    }
  }
  return chunk_streak_loop<Pow2, false>(map, per_stack, tags, records, addr, count);
}
#endif

template <bool Pow2>
ChunkStreak chunk_streak_reference(const HbmAddressMap& map, const Divisor& per_stack, const CacheTags::Walker& tags,
                                   std::uint32_t* const* records, std::uint64_t addr, std::uint64_t count) {
  const std::uint64_t chunk = tags.block_bytes();
  const std::uint32_t block_lines = tags.lines_to_block_end(0);
  const std::uint32_t whole = block_lines >= 32 ? ~0u : (1u << block_lines) - 1;
  for (std::uint64_t n = 0; n < count; ++n, addr += chunk) {
    const auto [channel, local] = map.channel_and_group_local<Pow2>(addr, per_stack);
    const auto slice = static_cast<std::uint32_t>(per_stack.div_as<Pow2>(channel));
    const CacheTags::Run r = tags.read_block_never_written(records[slice], local);
    if (r.missed != whole) return ChunkStreak{n, true, slice, r};
  }
  return ChunkStreak{count, false, 0, {}};
}

template ChunkStreak chunk_streak_base<true>(const HbmAddressMap&, const Divisor&, const CacheTags::Walker&,
                                             std::uint32_t* const*, std::uint64_t, std::uint64_t);
template ChunkStreak chunk_streak_base<false>(const HbmAddressMap&, const Divisor&, const CacheTags::Walker&,
                                              std::uint32_t* const*, std::uint64_t, std::uint64_t);
#if TDMSIM_X86_VARIANTS
template ChunkStreak chunk_streak_bmi2<true>(const HbmAddressMap&, const Divisor&, const CacheTags::Walker&,
                                             std::uint32_t* const*, std::uint64_t, std::uint64_t);
template ChunkStreak chunk_streak_bmi2<false>(const HbmAddressMap&, const Divisor&, const CacheTags::Walker&,
                                              std::uint32_t* const*, std::uint64_t, std::uint64_t);
#endif
template ChunkStreak chunk_streak_reference<true>(const HbmAddressMap&, const Divisor&, const CacheTags::Walker&,
                                                  std::uint32_t* const*, std::uint64_t, std::uint64_t);
template ChunkStreak chunk_streak_reference<false>(const HbmAddressMap&, const Divisor&, const CacheTags::Walker&,
                                                   std::uint32_t* const*, std::uint64_t, std::uint64_t);

}  // namespace tdmsim::sim
