// Whole interleave blocks one after another, decoded incrementally: the
// walk HBM serves a run's whole chunks with (Hbm::walk_rows) instead of a
// full decode (HbmAddressMap::place) per chunk. Host-speed machinery, for
// maps whose divisors are all powers of two (every shipped machine but
// MI455X's 768 channels, which keep the chunk-by-chunk decode); the same
// places as place() for every block (tests/sim/test_hbm_walk.cpp). No effect
// on any simulated time.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "sim/core/divisor.h"
#include "sim/mem/hbm.h"

namespace tdmsim::sim {

// HbmAddressMap::mix is linear over XOR, so the mix of block b is the mix of
// block b - 1 XOR mix(b ^ (b - 1)); b ^ (b - 1) is under 2^k when b is not a
// multiple of 2^k, and under 8 mix leaves it as it is (its shifted copies are
// zero). So for seven blocks in eight only the mixed index's low bits change,
// by b ^ (b - 1), and with 2^k no more than the channel count those bits are
// the channel's alone: the quotient, so the bank and the row, stay. The
// eighth block (and every block of a map of fewer than 8 channels, as far as
// k falls short) is decoded in full.
class HbmBlockWalk {
 public:
  // `map`: pow2() true.
  explicit HbmBlockWalk(const HbmAddressMap& map)
      : ch_mask_(map.channels - 1ull), bk_mask_(map.banks - 1ull), ch_shift_(map.channel_shift()),
        il_shift_(map.interleave_shift()), row_shift_(map.row_shift()), bk_shift_(map.bank_shift()),
        low_((1ull << std::min(3u, ch_shift_)) - 1) {}

  // The interleave block holding `addr`.
  std::uint64_t block(std::uint64_t addr) const { return addr >> il_shift_; }
  // place() of block `blk`'s first byte, in full.
  [[gnu::always_inline]] HbmAddressMap::Place at(std::uint64_t blk) const {
    const std::uint64_t m = HbmAddressMap::mix(blk);
    const std::uint64_t in_row = ((m >> ch_shift_) << il_shift_) >> row_shift_;
    return {static_cast<std::uint32_t>(m & ch_mask_), static_cast<std::uint32_t>(in_row & bk_mask_),
            in_row >> bk_shift_};
  }
  // place() of block `blk`'s first byte from `prev`, block blk - 1's.
  [[gnu::always_inline]] HbmAddressMap::Place next(const HbmAddressMap::Place& prev, std::uint64_t blk) const {
    if ((blk & low_) != 0) return {prev.channel ^ static_cast<std::uint32_t>(blk ^ (blk - 1)), prev.bank, prev.row};
    return at(blk);
  }
  // The same in aligned runs: block b + j of an aligned run of
  // 2^run_bits() blocks from b (j under that) has b's bank and row and b's
  // channel XOR j (the XORs of next() from b add up to j).
  unsigned run_bits() const { return static_cast<unsigned>(std::popcount(low_)); }

 private:
  std::uint64_t ch_mask_, bk_mask_;
  unsigned ch_shift_, il_shift_, row_shift_, bk_shift_;
  std::uint64_t low_;  // blocks b with b & low_ nonzero change the channel only
};

// The same walk for HbmAddressMap::channel_and_group_local (the MALL's
// decode: a slice's `per_group` channels, its blocks packed densely): the
// group is the channel's quotient by per_group, the address inside it
// (quotient x per_group + channel mod per_group) x interleave. When only the
// channel's low bits under min(8, per_group) change, so does only the
// remainder, by the same XOR: the group stays and the address inside it
// changes by b ^ (b - 1) blocks, XORed in.
class HbmGroupBlockWalk {
 public:
  struct Place {
    std::uint32_t group;
    std::uint64_t local;
  };
  HbmGroupBlockWalk() = default;
  // `map` and `per_group`: powers of two (pow2()), per_group no more than
  // the map's channels.
  HbmGroupBlockWalk(const HbmAddressMap& map, const Divisor& per_group)
      : ch_mask_(map.channels - 1ull), pg_mask_(per_group.value() - 1), ch_shift_(map.channel_shift()),
        il_shift_(map.interleave_shift()),
        pg_shift_(static_cast<unsigned>(std::countr_zero(per_group.value()))),
        low_((1ull << std::min(3u, pg_shift_)) - 1) {}

  // channel_and_group_local() of block `blk`'s first byte, in full, with
  // the channel's group.
  [[gnu::always_inline]] Place at(std::uint64_t blk) const {
    const std::uint64_t m = HbmAddressMap::mix(blk);
    const std::uint64_t ch = m & ch_mask_;
    return {static_cast<std::uint32_t>(ch >> pg_shift_),
            (((m >> ch_shift_) << pg_shift_) + (ch & pg_mask_)) << il_shift_};
  }
  // That of block `blk` from `prev`, block blk - 1's.
  [[gnu::always_inline]] Place next(const Place& prev, std::uint64_t blk) const {
    if ((blk & low_) != 0) return {prev.group, prev.local ^ ((blk ^ (blk - 1)) << il_shift_)};
    return at(blk);
  }
  // The same in aligned runs: block b + j of an aligned run of
  // 2^run_bits() blocks from b (j under that) has b's group and b's local
  // address XOR j interleave blocks (the XORs of next() from b add up to j).
  unsigned run_bits() const { return static_cast<unsigned>(std::popcount(low_)); }

 private:
  std::uint64_t ch_mask_ = 0, pg_mask_ = 0;
  unsigned ch_shift_ = 0, il_shift_ = 0, pg_shift_ = 0;
  std::uint64_t low_ = 0;  // blocks b with b & low_ nonzero change the local address's remainder bits only
};

}  // namespace tdmsim::sim
