#include "sim/mem/mall_streak.h"

#include <algorithm>
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
    const unsigned il = map.interleave_shift();
    if (tags.common_shape() && blocks.run_bits() == 3 && tags.xor_sets(3)) {
      // The chunks in aligned runs of 8 (every shipped machine's): a run's
      // chunks lie in one slice, their tag blocks are the first's XOR j, so
      // their sets are its set XOR j, eight neighbouring records, under its
      // key (CacheTags::Walker::where). One decode and one hash a run, and
      // the next run's records asked for in one go while this one is looked
      // up, instead of a decode step and a hash for each chunk twice over
      // (the lookup's and its prefetch's).
      constexpr std::uint64_t kRun = 8, low = kRun - 1;
      struct Run {
        std::uint32_t* records;  // the slice's
        std::uint64_t s;         // the set of the run's first chunk
        std::uint32_t key;
      };
      const auto run_of = [&](std::uint64_t first) __attribute__((always_inline)) {
        const HbmGroupBlockWalk::Place p = blocks.at(first);
        const CacheTags::Walker::Where w = tags.where(records[p.group], p.local >> il, p.local);
        return Run{records[p.group], w.s, w.key};
      };
      const auto ask = [&](const Run& r) __attribute__((always_inline)) {
        tags.prefetch_sets<kRun, true, false>(tags.set_record(r.records, r.s & ~low));
      };
      const std::uint64_t first = addr >> il, end = first + count;
      std::uint64_t blk = first;  // the looked-up chunk's block
      Run at = run_of(blk & ~low);
      ask(at);
      while (blk < end) {
        const std::uint64_t stop = std::min(end, (blk | low) + 1);
        Run next{};
        if (stop < end) {
          next = run_of(stop);
          ask(next);
        }
        for (; blk < stop; ++blk) {
          // (Reads only: writes pass the MALL by, so its lines are never dirty.)
          if (!tags.miss_whole_at<false, true>(tags.set_record(at.records, at.s ^ (blk & low)), at.key, false)) {
            const HbmGroupBlockWalk::Place p = blocks.at(blk);
            return ChunkStreak{blk - first, true, p.group, tags.read_block_never_written(records[p.group], p.local)};
          }
        }
        at = next;
      }
      return ChunkStreak{count, false, 0, {}};
    }
    std::uint64_t blk = addr >> il;  // the looked-up chunk's block
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
