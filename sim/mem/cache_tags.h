// A sectored set-associative tag array with true LRU, shared by the L2 and
// the MALL models. Timing-free: it answers which lines hit and which dirty
// lines an eviction writes back, so the caches' hit rates emerge from real
// addresses.
//
// One tag covers a block of `block_lines` consecutive lines (a sector block,
// as in NVIDIA's L2 and AMD's MALL, where one tag covers several lines),
// with a valid and a dirty bit per line: hits and misses are per line,
// replacement (LRU) is per block. The caches hand whole runs of consecutive
// lines to one lookup, so a tile row streamed through the hierarchy costs one
// tag operation per block instead of one per line. With block_lines = 1 it is
// a plain per-line cache.
//
// Host layout: each set is a record of 32-bit keys, compared four at a time,
// then the valid and dirty masks, then the set's recency order, one 64-bit
// word up to 16 ways (an array whose blocks are never written, the MALL's,
// keeps no dirty masks: see Writes): nibble k is the way k places from the most recent. A
// block stays in its way for as long as it is cached; a miss takes the least
// recent way and rotates the word by one nibble, a hit moves its way's nibble
// to the front with a few shifts and masks (lru_order.h). The ways' order is
// a permutation, so there are no ties: exactly true LRU, as the ring of ways
// the records kept before 2026-12-03 was (tests/sim/test_lru_order.cpp runs
// both on random streams and compares every answer). The set index keeps
// consecutive blocks in neighbouring sets.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/mem/lru_order.h"
#include "sim/mem/run_merge.h"
#include "sim/mem/tag_search.h"

namespace tdmsim::sim {

class CacheTags {
 public:
  // `block_lines` (a power of two, at most 32) lines share a tag. If the
  // lines per way are not a multiple of it, the sets are rounded down (at
  // least kMinSetsForFloor of them, so under 1/64 of the capacity is lost);
  // a smaller cache halves the block until it divides evenly.
  //
  // Writes::never: no access will write the array's blocks (the MALL's:
  // writes pass it by), so its set records keep no dirty masks: 16 ways take
  // 136 bytes (3 host cache lines) instead of 200 (4), and a walk over
  // neighbouring sets (the MALL's chunk streaks) touches a third fewer host
  // cache lines. Such an array is looked up only through the lookups for
  // arrays never written (read_block_never_written, read_never_written,
  // miss_whole<false>), the others only through the rest: a layout is fixed
  // at construction, and each lookup has its record's layout compiled in.
  // The same answers and keys, valid masks and orders as the lookups of an
  // array with dirty masks that is only read (tests/sim/test_cache_tags.cpp).
  enum class Writes : bool { never, some };
  CacheTags(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways,
            std::uint32_t block_lines = 1, Writes writes = Writes::some);

  static constexpr std::uint64_t kNoVictim = ~0ull;
  static constexpr std::uint64_t kMinSetsForFloor = 64;
  // What one run lookup did. Masks are bit i = line i.
  struct Run {
    std::uint32_t missed = 0;        // lines of the run that were absent (now allocated)
    std::uint64_t victim = kNoVictim;  // first line address of an evicted block with dirty lines
    std::uint32_t victim_dirty = 0;  // its dirty lines, relative to the block's first line
    bool dirty_victim() const { return victim != kNoVictim; }
  };

  // The shape of the array: what a lookup computes with besides the records.
  struct Geometry {
    std::uint32_t ways = 0;
    std::uint32_t block_lines = 1;
    std::uint32_t line_shift = 0;
    std::uint32_t block_shift = 0;  // log2(block_lines)
    std::uint32_t set_bits = 0;     // bits needed to number the sets
    std::uint64_t sets = 0;
    std::uint64_t set_mask = 0;     // sets - 1 when sets is a power of two, else 0
    bool dirty_masks = true;        // Writes::some: the records keep dirty masks
    std::uint64_t record = 0;       // words per set record: 3 (2 without dirty masks) x ways + the order's (lru_order.h)
    LruOrder order;                 // the recency word's operations for `ways` ways
    std::size_t record_bytes = 0;
    // The host has BMI2 (checked at run time: the build targets baseline
    // x86-64): the stream loops then take their version compiled for it,
    // whose shifts by a count in a register need no move to CL first (a
    // tenth of a lookup's instructions).
    bool bmi2 = false;
  };

  // The lookups, on the geometry held by value and the array's records. A
  // cache running many lookups takes one (walker()) into a local first: its
  // geometry can then stay in registers, where read from the CacheTags it
  // was reloaded after every lookup, since the lookups' stores into the
  // records might (for all the compiler knows) change it. Valid until the
  // array is destroyed.
  class Walker {
   public:
    Walker(const Geometry& g, std::uint32_t* records) : g_(g), rec_(records) {}
    // Looks up `lines` consecutive lines starting at the line holding
    // `addr`, all inside one block (see lines_to_block_end), allocating the
    // absent ones (the block's LRU victim goes if the block itself is
    // absent). `write` marks the run's lines dirty.
    [[gnu::always_inline]] Run access(std::uint64_t addr, std::uint32_t lines, bool write) {
      return access_with<true, false, true>(addr, lines, write);
    }
    // access(addr, lines, false) in an array no access ever wrote
    // (Writes::never: the MALL's), in its records without dirty masks.
    [[gnu::always_inline]] Run read_never_written(std::uint64_t addr, std::uint32_t lines) {
      return access_with<true, false, false>(addr, lines, false);
    }
    // access() without asking the host's caches for the rest of the set
    // record first: for arrays small enough to stay in the host's caches
    // (resident(): an L1's, an MI355X L2's), where the request is only
    // instructions. The same lookup.
    [[gnu::always_inline]] Run access_resident(std::uint64_t addr, std::uint32_t lines, bool write) {
      return access_with<false, false, true>(addr, lines, write);
    }
    // access_resident() in an array of the common shape (common_shape(),
    // below), with its constants compiled in: the L2's part-blocks of
    // gathered token rows (a 7168-byte row starts off a block boundary).
    [[gnu::always_inline]] Run access_common(std::uint64_t addr, std::uint32_t lines, bool write) {
      return access_with<false, true, true>(addr, lines, write);
    }
    // access(addr, block lines, write) for `addr` the first byte of a block
    // (a whole block of a stream), without access()'s request for the rest
    // of the set record and its cases for part of a block. With `records`:
    // in that array of the same geometry (records()) instead of this one's.
    Run access_block(std::uint64_t addr, bool write) { return access_block(rec_, addr, write); }
    Run access_block(std::uint32_t* records, std::uint64_t addr, bool write) const {
      return access_block<true>(records, addr, write);
    }
    // access_block(records, addr, false) in an array no access ever wrote
    // (Writes::never: the MALL's), in its records without dirty masks.
    Run read_block_never_written(std::uint32_t* records, std::uint64_t addr) const {
      return access_block<false>(records, addr, false);
    }
    // access_block(addr, write) in an array of the common shape
    // (common_shape(), below), with its constants compiled in, inlined into
    // the caller's loop (the L2's gathered rows read again: a whole block
    // that hits).
    [[gnu::always_inline]] Run access_block_common(std::uint64_t addr, bool write) const {
      return lookup_block<true, true>(rec_, addr, write);
    }
    // If the block whose first byte is `addr` is absent and the least recent
    // way of its set holds no dirty lines, allocates it there as
    // access_block(records, addr, write) would (it misses whole and evicts
    // nothing to write back) and returns true; otherwise changes nothing and
    // returns false. The case of nearly every block of a stream the cache has
    // not seen (a weight tile), for tight loops over a stream's blocks: no
    // result record, no victim. With Dirty false, as read_block_never_written
    // (an array of Writes::never, without dirty masks).
    // With Common, for the common shape only (below), with its constants
    // compiled in.
    template <bool Dirty, bool Common = false>
    [[gnu::always_inline]] bool miss_whole(std::uint32_t* records, std::uint64_t addr, bool write) const;
    // The shape of every shipped cache's tags: kCommonWays ways, a power of
    // two of sets (more than one) and 32-line blocks. The stream loops take
    // their version of miss_whole for it (a fifth fewer instructions a block
    // than with the shape read at run time).
    static constexpr std::uint32_t kCommonWays = 16;
    bool common_shape() const {
      return g_.ways == kCommonWays && g_.set_mask != 0 && g_.set_bits > 0 && g_.set_bits < 32 &&
             g_.block_lines == 32;
    }
    // access_block() on whole blocks from `addr` (block-aligned) on, at most
    // `count` of them, for as long as each misses whole and evicts no dirty
    // lines (miss_whole). `missed_whole` of them did; if it `stopped` before
    // `count`, the block after them was looked up too, with result `next`,
    // for the caller's general case. (A loop of its own, not inlined: inside
    // a cache's run loop the geometry and the counters did not fit the
    // registers and were reloaded from the stack for every block.)
    struct Streak {
      std::uint64_t missed_whole = 0;
      bool stopped = false;
      Run next;
    };
    [[gnu::noinline]] Streak miss_streak(std::uint64_t addr, std::uint64_t count, bool write) const;
    // miss_streak() as compiled for the baseline target and (where the
    // build has it: TDMSIM_X86_VARIANTS, and the host runs it) for BMI2, which
    // miss_streak() takes where the host has it; and the same, block by block
    // through access_block(). The same results and records
    // (tests/sim/test_host_variants.cpp).
    [[gnu::noinline]] Streak miss_streak_base(std::uint64_t addr, std::uint64_t count, bool write) const;
#if defined(__x86_64__) && defined(__GNUC__)
    __attribute__((target("bmi2"))) Streak miss_streak_bmi2(std::uint64_t addr, std::uint64_t count,
                                                             bool write) const;
#endif
    Streak miss_streak_reference(std::uint64_t addr, std::uint64_t count, bool write) const;
    bool bmi2() const { return g_.bmi2; }
    // Lines from the one holding `addr` to the end of its block.
    std::uint32_t lines_to_block_end(std::uint64_t addr) const {
      return g_.block_lines - static_cast<std::uint32_t>((addr >> g_.line_shift) & (g_.block_lines - 1));
    }
    std::uint64_t block_bytes() const { return std::uint64_t{1} << (g_.line_shift + g_.block_shift); }
    // The same geometry over another array's records (caches of several
    // arrays of one shape: the MALL's slices).
    Walker with_records(std::uint32_t* records) const { return Walker(g_, records); }
    std::uint32_t* records() const { return rec_; }
    // Asks the host's caches for the set record that access(addr, ...) will
    // read (no effect on the tags): callers walking many blocks issue it a
    // few lookups ahead, so that the records' cache misses overlap. (Always
    // inlined: GCC finds a call that only prefetches pure, and drops it.)
    [[gnu::always_inline]] void prefetch(std::uint64_t addr) const { prefetch(rec_, addr); }
    [[gnu::always_inline]] void prefetch(const std::uint32_t* records, std::uint64_t addr) const {
      const std::uint64_t s = set_of(fold(addr >> g_.line_shift >> g_.block_shift));
      prefetch_record(reinterpret_cast<const char*>(records + s * g_.record), 0);
    }

    // For callers that look up a run of neighbouring whole blocks
    // (mall_streak.cpp): with a power of two of sets, block b ^ j for j
    // under 2^set_bits lies in set s ^ j of b's set s, under b's key (fold()
    // is linear over XOR, and j's shifted copies are zero), so one where()
    // serves them all. xor_sets(bits): whether that holds for every j under
    // 2^bits. set_record(): the record of set `s`. miss_whole_at(): miss_whole
    // of the block of set record `set` and key `key` (the same lookup).
    struct Where {
      std::uint64_t s;
      std::uint32_t* set;
      std::uint32_t key;
    };
    [[gnu::always_inline]] Where where(std::uint32_t* records, std::uint64_t block, std::uint64_t addr) const {
      const std::uint64_t h = fold(block);
      const std::uint64_t s = set_of(h);
      const std::uint64_t key64 = g_.set_mask != 0 ? h >> g_.set_bits : h / g_.sets;
      if (key64 >= kEmpty) beyond_range(addr);
      return {s, records + s * g_.record, static_cast<std::uint32_t>(key64)};
    }
    bool xor_sets(unsigned bits) const { return g_.set_mask != 0 && g_.set_bits >= bits; }
    std::uint32_t* set_record(std::uint32_t* records, std::uint64_t s) const { return records + s * g_.record; }
    template <bool Dirty, bool Common = false>
    [[gnu::always_inline]] bool miss_whole_at(std::uint32_t* set, std::uint32_t key, bool write) const {
      const bool present = Common ? has_key16(set, key) : find(set, key) != g_.ways;
      return !present && claim_absent<Dirty, Common>(set, key, write);
    }
    // prefetch_sets(): prefetch() of `Records` consecutive set records from
    // record `set` on (with Common, of the common shape: their size compiled
    // in, with dirty masks or, Dirty false, without).
    template <std::size_t Records, bool Common = false, bool Dirty = true>
    [[gnu::always_inline]] void prefetch_sets(const std::uint32_t* set) const {
      const std::size_t bytes = Records * (Common ? common_record<Dirty>() * 4 : g_.record_bytes);
      const char* const rec = reinterpret_cast<const char*>(set);
#pragma GCC unroll 32
      for (std::size_t b = 0; b < bytes; b += 64) __builtin_prefetch(rec + b);
      __builtin_prefetch(rec + bytes - 1);
    }

   private:
    friend class CacheTags;
    // Words of a set record before its recency order: keys and valid masks,
    // and with Dirty, dirty masks (Writes).
    template <bool Dirty>
    static constexpr std::uint32_t masks_words(std::uint32_t ways) {
      return (Dirty ? 3 : 2) * ways;
    }
    // Words of a set record of the common shape (common_shape()).
    template <bool Dirty>
    static constexpr std::uint32_t common_record() {
      return masks_words<Dirty>(kCommonWays) + LruOrder::kWordWords;
    }
    // A block is identified by fold(block number) = set + sets * key: the set
    // is implied by where the key sits, so 32 bits of key cover addresses far
    // beyond any GPU's memory.
    std::uint64_t fold(std::uint64_t block) const {
      if (g_.set_bits == 0) return block;
      return block ^ (block >> g_.set_bits) ^ (block >> (2 * g_.set_bits));
    }
    // The set of a folded block number.
    [[gnu::always_inline]] std::uint64_t set_of(std::uint64_t h) const {
      return g_.set_mask != 0 ? h & g_.set_mask : h % g_.sets;
    }
    // (where(), above: where block number `block` (that of the line at
    // `addr`) lives: its set, the set's record in `records`, and its key.)
    // miss_whole()'s allocation of an absent block in its set's least
    // recent way, if that holds no dirty lines (else false, no change).
    template <bool Dirty, bool Common>
    [[gnu::always_inline]] bool claim_absent(std::uint32_t* set, std::uint32_t key, bool write) const;
    // For a block absent from set `s`: its least-recent way, which becomes
    // the most recent; with Dirty, that way's dirty lines go to r's victim.
    template <bool Dirty, bool Common = false>
    [[gnu::always_inline]] std::uint32_t take_lru(std::uint32_t* set, std::uint64_t s, Run& r) const;
    // Asks for the host cache lines of the set record at `rec` from byte
    // `from` (0 or 64) on: unrolled for records of up to 256 bytes (16
    // ways: 196 bytes), as the lookups run millions of times.
    [[gnu::always_inline]] void prefetch_record(const char* rec, std::size_t from) const {
      const std::size_t bytes = g_.record_bytes;
      if (from == 0) __builtin_prefetch(rec);
      __builtin_prefetch(rec + 64);
      __builtin_prefetch(rec + 128);
      if (bytes > 192) __builtin_prefetch(rec + 192);
      __builtin_prefetch(rec + bytes - 1);
      for (std::size_t b = 256; b < bytes; b += 64) __builtin_prefetch(rec + b);
    }
    // The way holding `key` in the set record `set`, or ways if none.
    std::uint32_t find(const std::uint32_t* set, std::uint32_t key) const;
    // access(), with Prefetch false for access_resident(), Common for the
    // common shape only (its constants compiled in), and Dirty false for
    // read_never_written() (records without dirty masks).
    template <bool Prefetch, bool Common, bool Dirty>
    [[gnu::always_inline]] Run access_with(std::uint64_t addr, std::uint32_t lines, bool write);
    // access_block(), with Dirty false for arrays no access ever wrote.
    template <bool Dirty>
    Run access_block(std::uint32_t* records, std::uint64_t addr, bool write) const;
    // Its body, with Common for the common shape only (its constants
    // compiled in), inlined where called.
    template <bool Dirty, bool Common>
    [[gnu::always_inline]] Run lookup_block(std::uint32_t* records, std::uint64_t addr, bool write) const;
    // miss_streak()'s loop, compiled into each version.
    [[gnu::always_inline]] Streak miss_streak_loop(std::uint64_t addr, std::uint64_t count, bool write) const;

    Geometry g_;
    std::uint32_t* rec_;  // sets records of g_.record words
  };
  Walker walker() { return Walker(g_, tags_.data()); }

  // The geometry an array of these parameters takes (as the constructor
  // makes it), or none where they do not form whole sets.
  static std::optional<Geometry> shape(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways,
                                       std::uint32_t block_lines, Writes writes);
  // The bytes of set records such an array allocates (sets x record, as the
  // constructor does; saturated at 2^64 - 1), 0 where it forms no whole
  // sets: for estimates of a run's host memory before anything is built.
  static std::uint64_t records_bytes(std::uint64_t size_bytes, std::uint32_t line_bytes, std::uint32_t ways,
                                     std::uint32_t block_lines, Writes writes);

  // The same one lookup at a time.
  [[gnu::always_inline]] Run access(std::uint64_t addr, std::uint32_t lines, bool write) { return walker().access(addr, lines, write); }
  std::uint32_t lines_to_block_end(std::uint64_t addr) const {
    return g_.block_lines - static_cast<std::uint32_t>((addr >> g_.line_shift) & (g_.block_lines - 1));
  }
  // Whether the line holding `addr` is present (no allocation, no LRU update).
  bool contains(std::uint64_t addr) const;
  std::uint64_t block_bytes() const { return std::uint64_t{line_} << g_.block_shift; }
  // Whether the records (every set's) take at most kResidentBytes, a
  // fraction of a host core's own cache: an array its owner looks up often
  // then stays in the host's caches, and asking for its records ahead is
  // only instructions (an L1's 3.5 KiB, an MI355X L2's 12.5 KiB; an H200
  // L2's 188 KiB and a MALL's are asked for).
  static constexpr std::uint64_t kResidentBytes = 64 * 1024;
  bool resident() const { return g_.sets * g_.record_bytes <= kResidentBytes; }
  // Marks every dirty line clean (they stay valid) and returns their
  // addresses, in ascending order, for the caller to write back.
  std::vector<std::uint64_t> clean();

  // Set bits of a mask (lines of a run): run_merge.h.
  static std::uint32_t count(std::uint32_t m) { return count_bits(m); }

  std::uint32_t line_bytes() const { return line_; }
  std::uint32_t block_lines() const { return g_.block_lines; }
  std::uint64_t sets() const { return g_.sets; }
  // 32-bit words of one set's record (3 x ways, 2 x without dirty masks,
  // and the recency order's).
  std::uint64_t record_words() const { return g_.record; }
  // The bytes its records take (what records_bytes() estimates).
  std::uint64_t allocated_bytes() const { return tags_.size() * sizeof(std::uint32_t); }
  // The set a line address maps to (exposed for tests of the spread).
  std::uint64_t set_of(std::uint64_t addr) const;
  // The inverse of Walker::fold (a victim's block number from its set and
  // key), in a few shifts; unfold_reference, by fixed-point rounds, is its
  // reference (tests/sim/test_cache_tags.cpp).
  static std::uint64_t unfold(const Geometry& g, std::uint64_t h);
  static std::uint64_t unfold_reference(const Geometry& g, std::uint64_t h);

 private:
  static constexpr std::uint32_t kEmpty = 0xFFFFFFFFu;  // never a valid key
  // Out of line and cold, so that access() needs no stack frame for the message.
  [[noreturn, gnu::cold, gnu::noinline]] static void beyond_range(std::uint64_t addr);

  std::uint32_t line_;
  Geometry g_;
  // g_.sets records of g_.record words: one lookup touches one contiguous
  // record. A set's record: keys, then valid masks, then (Writes::some)
  // dirty masks, ways each, then the recency order (lru_order.h).
  std::vector<std::uint32_t> tags_;
};

// Inlined into access(), where it runs for every lookup (a call there made
// the lookup save and restore its registers). The search: tag_search.h.
[[gnu::always_inline]] inline std::uint32_t CacheTags::Walker::find(const std::uint32_t* set,
                                                                    std::uint32_t key) const {
  return find_way(set, g_.ways, key);
}

template <bool Dirty, bool Common>
[[gnu::always_inline]] inline std::uint32_t CacheTags::Walker::take_lru(std::uint32_t* set, std::uint64_t s,
                                                                       Run& r) const {
  const std::uint32_t ways = Common ? kCommonWays : g_.ways;
  std::uint32_t* const order = set + masks_words<Dirty>(ways);
  std::uint32_t i;
  if constexpr (Common) {
    i = LruOrder::least_recent16(order);
    LruOrder::take_least_recent16(order);
  } else {
    i = g_.order.take_least_recent(order);
  }
  if constexpr (Dirty) {  // (an array never written has no dirty masks)
    const std::uint32_t dirty = set[2 * ways + i];
    if (dirty != 0) {
      r.victim = (unfold(g_, std::uint64_t{set[i]} * g_.sets + s) << g_.block_shift) << g_.line_shift;
      r.victim_dirty = dirty;
    }
  }
  return i;
}

// Inline (in the L2's and the MALL's run loops): a call made each lookup
// save and restore registers and return its result through memory.
template <bool Dirty>
[[gnu::always_inline]] inline CacheTags::Run CacheTags::Walker::access_block(std::uint32_t* records,
                                                                            std::uint64_t addr, bool write) const {
  return lookup_block<Dirty, false>(records, addr, write);
}

template <bool Dirty, bool Common>
[[gnu::always_inline]] inline CacheTags::Run CacheTags::Walker::lookup_block(std::uint32_t* records,
                                                                            std::uint64_t addr, bool write) const {
  const std::uint32_t ways = Common ? kCommonWays : g_.ways;
  const std::uint32_t want = Common || g_.block_lines >= 32 ? ~0u : (1u << g_.block_lines) - 1;
  std::uint64_t s;
  std::uint32_t* set;
  std::uint32_t key;
  if constexpr (Common) {  // where() with the shape's constants (as miss_whole's)
    const std::uint64_t block = addr >> (g_.line_shift + g_.block_shift);
    const std::uint64_t h = block ^ (block >> g_.set_bits) ^ (block >> (2 * g_.set_bits));
    const std::uint64_t key64 = h >> g_.set_bits;
    if (key64 >= kEmpty) beyond_range(addr);
    s = h & g_.set_mask;
    set = records + s * common_record<Dirty>();
    key = static_cast<std::uint32_t>(key64);
  } else {
    const auto w = where(records, addr >> g_.line_shift >> g_.block_shift, addr);
    s = w.s;
    set = w.set;
    key = w.key;
  }
  std::uint32_t* valid = set + ways;
  std::uint32_t* dirty = set + 2 * ways;
  Run r;
  std::uint32_t i = Common ? find_way(set, kCommonWays, key) : find(set, key);
  if (i == ways) {  // block absent: the least-recent way goes
    i = take_lru<Dirty, Common>(set, s, r);
    set[i] = key;
    if (Dirty) dirty[i] = write ? want : 0;
    valid[i] = want;
    r.missed = want;
    return r;
  }
  r.missed = want & ~valid[i];
  valid[i] = want;
  if (Dirty && write) dirty[i] |= want;
  if constexpr (Common) {  // LruOrder::touch for 16 ways
    std::uint32_t* const order = set + masks_words<Dirty>(ways);
    const std::uint64_t o = LruOrder::load(order);
    if ((o & 0xFu) != i) LruOrder::store(order, LruOrder::touched(o, i));
  } else {
    g_.order.touch(set + masks_words<Dirty>(ways), i);
  }
  return r;
}

template <bool Dirty, bool Common>
[[gnu::always_inline]] inline bool CacheTags::Walker::miss_whole(std::uint32_t* records, std::uint64_t addr,
                                                                bool write) const {
  const std::uint32_t ways = Common ? kCommonWays : g_.ways;
  std::uint32_t* set;
  std::uint32_t key;
  bool present;
  if constexpr (Common) {
    // where() and find() with the shape's constants.
    const std::uint64_t block = addr >> (g_.line_shift + g_.block_shift);
    const std::uint64_t h = block ^ (block >> g_.set_bits) ^ (block >> (2 * g_.set_bits));
    const std::uint64_t key64 = h >> g_.set_bits;
    if (key64 >= kEmpty) beyond_range(addr);
    set = records + (h & g_.set_mask) * common_record<Dirty>();
    key = static_cast<std::uint32_t>(key64);
    static_assert(kCommonWays == 16);
    present = has_key16(set, key);
  } else {
    const auto w = where(records, addr >> g_.line_shift >> g_.block_shift, addr);
    set = w.set;
    key = w.key;
    present = find(set, key) != ways;
  }
  if (present) return false;
  return claim_absent<Dirty, Common>(set, key, write);
}

template <bool Dirty, bool Common>
[[gnu::always_inline]] inline bool CacheTags::Walker::claim_absent(std::uint32_t* set, std::uint32_t key,
                                                                  bool write) const {
  const std::uint32_t ways = Common ? kCommonWays : g_.ways;
  std::uint32_t* const order = set + masks_words<Dirty>(ways);
  const std::uint32_t i = Common ? LruOrder::least_recent16(order) : g_.order.least_recent(order);  // take_lru's way
  if (Dirty && set[2 * ways + i] != 0) return false;
  const std::uint32_t want = Common || g_.block_lines >= 32 ? ~0u : (1u << g_.block_lines) - 1;
  if constexpr (Common) {
    LruOrder::take_least_recent16(order);
  } else {
    g_.order.take_least_recent(order);
  }
  set[i] = key;
  if (Dirty) set[2 * ways + i] = write ? want : 0;
  set[ways + i] = want;
  return true;
}

template <bool Prefetch, bool Common, bool Dirty>
[[gnu::always_inline]] inline CacheTags::Run CacheTags::Walker::access_with(std::uint64_t addr, std::uint32_t lines,
                                                                           bool write) {
  const std::uint32_t ways = Common ? kCommonWays : g_.ways;
  const std::uint32_t block_lines = Common ? 32 : g_.block_lines;
  const std::uint64_t line = addr >> g_.line_shift;
  const auto first = static_cast<std::uint32_t>(line & (block_lines - 1));
  const std::uint32_t n = std::min(lines, block_lines - first);
  const std::uint32_t want = (n >= 32 ? ~0u : (1u << n) - 1) << first;
  std::uint64_t s;
  std::uint32_t* set;
  std::uint32_t key;
  if constexpr (Common) {  // where() with the shape's constants (as lookup_block's)
    const std::uint64_t block = line >> 5;
    const std::uint64_t h = block ^ (block >> g_.set_bits) ^ (block >> (2 * g_.set_bits));
    const std::uint64_t key64 = h >> g_.set_bits;
    if (key64 >= kEmpty) beyond_range(addr);
    s = h & g_.set_mask;
    set = rec_ + s * common_record<Dirty>();
    key = static_cast<std::uint32_t>(key64);
  } else {
    const auto w = where(rec_, line >> g_.block_shift, addr);
    s = w.s;
    set = w.set;
    key = w.key;
  }
  // The record's keys, masks and order lie on several host cache lines, read
  // one after another below: ask for all of them at once.
  if constexpr (Prefetch) prefetch_record(reinterpret_cast<const char*>(set), 64);
  std::uint32_t* valid = set + ways;
  std::uint32_t* dirty = set + 2 * ways;
  Run r;
  std::uint32_t i = Common ? find_way(set, kCommonWays, key) : find(set, key);
  if (i == ways) {  // block absent: the least-recent way goes
    i = take_lru<Dirty, Common>(set, s, r);
    set[i] = key;
    valid[i] = want;
    if (Dirty) dirty[i] = write ? want : 0;
    r.missed = want >> first;
    return r;  // (already the most recent)
  }
  r.missed = (want & ~valid[i]) >> first;
  valid[i] |= want;
  if (Dirty && write) dirty[i] |= want;
  if constexpr (Common) {  // LruOrder::touch for 16 ways
    std::uint32_t* const order = set + masks_words<Dirty>(ways);
    const std::uint64_t o = LruOrder::load(order);
    if ((o & 0xFu) != i) LruOrder::store(order, LruOrder::touched(o, i));
  } else {
    g_.order.touch(set + masks_words<Dirty>(ways), i);
  }
  return r;
}

}  // namespace tdmsim::sim
