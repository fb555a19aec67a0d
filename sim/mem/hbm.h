// HBM: stacks x channels x pseudo-channels behind one address map. Each
// pseudo-channel serves its share of an access in order (busy-until) at its
// share of the peak bandwidth, paying row-buffer misses, read/write bus
// turnarounds and periodic refreshes, so achievable bandwidth and channel
// conflicts emerge from the access pattern.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "sim/core/divisor.h"
#include "sim/core/sim_time.h"
#include "sim/core/stats.h"
#include "sim/core/trace.h"
#include <map>
#include <utility>
#include "sim/mem/mem_access.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

// Address -> pseudo-channel, bank and row.
struct HbmAddressMap {
  HbmAddressMap() = default;
  HbmAddressMap(std::uint64_t interleave_bytes, std::uint32_t channel_count, std::uint32_t bank_count,
                std::uint64_t row_buffer_bytes)
      : interleave(interleave_bytes), channels(channel_count), banks(bank_count),
        row_bytes(row_buffer_bytes), il_(interleave_bytes), ch_(channel_count), bk_(bank_count),
        row_(row_buffer_bytes) {}

  std::uint64_t interleave = 256;
  std::uint32_t channels = 1;
  std::uint32_t banks = 16;
  std::uint64_t row_bytes = 1024;

  // Interleave blocks are renumbered by a bijective XOR-fold of their index
  // with several shifted copies of itself (as GPU address hashes XOR many
  // address bits): sequential blocks still walk the channels, and
  // power-of-two strides (a weight tile's rows, kilobytes apart) spread over
  // all of them instead of a fraction. The renumbered block gives the
  // channel (its remainder) and the block's place inside the channel (its
  // quotient), so every address keeps exactly one home.
  static std::uint64_t mix(std::uint64_t blk) {
    return blk ^ (blk >> 3) ^ (blk >> 7) ^ (blk >> 11) ^ (blk >> 17);
  }
  std::uint32_t channel(std::uint64_t addr) const {
    return static_cast<std::uint32_t>(ch_.mod(mix(il_.div(addr))));
  }
  // Address inside the channel (its blocks packed densely).
  std::uint64_t local(std::uint64_t addr) const {
    return ch_.div(mix(il_.div(addr))) * interleave + il_.mod(addr);
  }
  // Address inside a group of `per_group` consecutive channels (one MALL
  // slice's), the group's blocks packed densely.
  std::uint64_t group_local(std::uint64_t addr, const Divisor& per_group) const {
    const std::uint64_t m = mix(il_.div(addr));
    const std::uint64_t in_group = per_group.mod(ch_.mod(m));
    return (ch_.div(m) * per_group.value() + in_group) * interleave + il_.mod(addr);
  }
  // Bytes from `addr` to the end of its interleave block.
  template <bool Pow2 = false>
  std::uint64_t to_block_end(std::uint64_t addr) const { return interleave - il_.mod_as<Pow2>(addr); }
  // Whether every divisor of the map is a power of two (every shipped
  // machine): decodes with Pow2 true then shift and mask without checks.
  bool pow2() const { return il_.pow2() && ch_.pow2() && bk_.pow2() && row_.pow2(); }
  std::uint32_t bank(std::uint64_t addr) const {
    return static_cast<std::uint32_t>(bk_.mod(row_.div(local(addr))));
  }
  std::uint64_t row(std::uint64_t addr) const { return bk_.div(row_.div(local(addr))); }
  // channel(), bank() and row() together (one decode of the address).
  struct Place {
    std::uint32_t channel, bank;
    std::uint64_t row;
  };
  template <bool Pow2 = false>
  Place place(std::uint64_t addr) const {
    const std::uint64_t m = mix(il_.div_as<Pow2>(addr));
    const std::uint64_t in_row = row_.div_as<Pow2>(ch_.div_as<Pow2>(m) * interleave + il_.mod_as<Pow2>(addr));
    return {static_cast<std::uint32_t>(ch_.mod_as<Pow2>(m)), static_cast<std::uint32_t>(bk_.mod_as<Pow2>(in_row)),
            bk_.div_as<Pow2>(in_row)};
  }
  // Shift counts of a map whose divisors are all powers of two (pow2()).
  unsigned interleave_shift() const { return static_cast<unsigned>(std::countr_zero(interleave)); }
  unsigned channel_shift() const { return static_cast<unsigned>(std::countr_zero(std::uint64_t{channels})); }
  unsigned bank_shift() const { return static_cast<unsigned>(std::countr_zero(std::uint64_t{banks})); }
  unsigned row_shift() const { return static_cast<unsigned>(std::countr_zero(row_bytes)); }
  // channel() and group_local() together.
  template <bool Pow2 = false>
  std::pair<std::uint32_t, std::uint64_t> channel_and_group_local(std::uint64_t addr,
                                                                  const Divisor& per_group) const {
    const std::uint64_t m = mix(il_.div_as<Pow2>(addr));
    const std::uint64_t ch = ch_.mod_as<Pow2>(m);
    return {static_cast<std::uint32_t>(ch),
            (ch_.div_as<Pow2>(m) * per_group.value() + per_group.mod_as<Pow2>(ch)) * interleave +
                il_.mod_as<Pow2>(addr)};
  }

 private:
  Divisor il_{256}, ch_{1}, bk_{16}, row_{1024};
};

class Hbm : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Hbm> target;

  // `time`: the GPU's global time (its socket's requests).
  Hbm(sc_core::sc_module_name name, const HbmSpec& spec, StatRegistry& stats, const SimClock& time);

  // Serves an access arriving at absolute tick `arrive`; returns when its last
  // byte is back (timing only). Used by the socket and directly by tests.
  Tick serve(const MemAccess& a, Tick arrive);

  // What the target socket's b_transport does, called directly by the
  // block above where the simulator connected it (Fabric::connect,
  // Mall::connect): serves `ext`'s access (a batch's runs in turn) arriving
  // at `arrive` (global time `now`), writes its unloaded round trip and
  // wait into `ext` and returns when its last byte is back.
  Tick transport(MemAccessExt& ext, Tick arrive, Tick now);

  // Records HBM traffic for the trace: bytes per `bucket` of simulated time,
  // emitted as read/write bandwidth counters by emit_trace().
  void enable_trace(TraceWriter* trace, Tick bucket);
  void emit_trace();

  // Walks every access chunk by chunk with a full decode of each (the
  // reference of the whole-chunk walk, hbm_walk.h; for tests).
  void set_reference_walk(bool on) { reference_walk_ = on; }
  // The longest queueing wait of the last access serve() served.
  Tick last_wait() const { return last_wait_; }

  const HbmAddressMap& map() const { return map_; }
  std::uint32_t channels() const { return map_.channels; }
  std::uint64_t channel_bytes(std::uint32_t ch) const { return channels_[ch].bytes; }
  // Bytes read and written so far (the clock governor's HBM activity).
  std::uint64_t bytes() const { return read_bytes_ + write_bytes_; }

 private:
  struct Bank {
    std::uint64_t open_row = ~0ull;  // ~0 = closed
    Tick free = 0;                   // done with its last access
  };
  // A channel's state that every chunk on it reads and writes, in one host
  // cache line, its banks' records right after it (ChannelRecords).
  struct alignas(64) Channel {
    BusyUntil bus;
    Tick next_refresh = 0;
    std::uint64_t bytes = 0;
    std::uint64_t row_hits = 0;
    std::uint64_t row_misses = 0;
    std::uint64_t refreshes = 0;
    bool last_write = false;
  };
  static_assert(sizeof(Channel) == 64 && sizeof(Bank) == 16);
  // Every channel's state in one 64-byte-aligned allocation: channel c's
  // record at bytes() x c, its Channel (one host cache line) and then its
  // banks' records, bank b at bank_at_[b]. A chunk then touches two host
  // cache lines, where the channel with a vector of banks inside took two
  // (its fields across a line boundary) and a third for the bank; and both
  // lie a multiple of one stride from one base (the walks touch every
  // channel in turn, 256 on MI355X: more than the host's first-level cache
  // holds). Host layout only.
  class ChannelRecords {
   public:
    ChannelRecords() = default;
    ChannelRecords(std::uint32_t channels, std::uint32_t banks);
    ChannelRecords(const ChannelRecords&) = delete;
    ChannelRecords& operator=(const ChannelRecords&) = delete;
    ChannelRecords(ChannelRecords&& o) noexcept : base_(o.base_), bytes_(o.bytes_), count_(o.count_) {
      o.base_ = nullptr;
    }
    ChannelRecords& operator=(ChannelRecords&& o) noexcept {
      std::swap(base_, o.base_);
      bytes_ = o.bytes_;
      count_ = o.count_;
      return *this;
    }
    ~ChannelRecords();
    std::byte* base() const { return base_; }
    std::size_t bytes() const { return bytes_; }  // one channel's record
    std::size_t size() const { return count_; }
    // The Channel at the start of `record` (a channel's record), and the
    // bank record at byte `at` of it (bank_at_).
    static Channel& channel(std::byte* record) { return *std::launder(reinterpret_cast<Channel*>(record)); }
    static Bank& bank(std::byte* record, std::size_t at) { return *std::launder(reinterpret_cast<Bank*>(record + at)); }
    Channel& operator[](std::size_t c) const { return channel(base_ + c * bytes_); }

   private:
    std::byte* base_ = nullptr;
    std::size_t bytes_ = 0, count_ = 0;
  };
  // The timing serve_chunk() works with, as locals of serve_rows(): read
  // through `this`, they were reloaded after every chunk's stores.
  struct ChunkTiming {
    Tick row_miss = 0, refresh_time = 0, refresh_interval = 0, turnaround = 0;
    std::uint64_t interleave = 0;
    Tick chunk_ticks = 0;  // one full interleave chunk (the common case)
    units::Bandwidth channel_bw{};
    // transfer_ticks(bytes, channel_bw) of part of a chunk, for bytes a
    // multiple of kPartGrain: part_ticks[bytes / kPartGrain] (a gathered
    // row's pieces; the same values, without a 128-bit division each).
    const Tick* part_ticks = nullptr;
    std::uint64_t part_count = 0;
    Tick transfer(std::uint64_t bytes) const {
      if (bytes == interleave) return chunk_ticks;
      if (bytes % kPartGrain == 0 && bytes / kPartGrain < part_count) return part_ticks[bytes / kPartGrain];
      return transfer_ticks(bytes, channel_bw);
    }
  };
  static constexpr std::uint64_t kPartGrain = 32;
  ChunkTiming timing() const;
  // Serves `bytes` of one interleave chunk at `at` on channel `ch`; returns
  // when they are moved, and keeps the longest queueing wait in `wait`.
  // (Whole: `bytes` is a whole interleave chunk, its transfer t.chunk_ticks.)
  template <bool Whole = false>
  static Tick serve_chunk(Channel& ch, Bank& bank, std::uint64_t row, std::uint64_t bytes, bool write, Tick arrive,
                          const ChunkTiming& t, Tick& wait);
  // bank_at_[b]: where bank b's record lies in its channel's record (bytes
  // from the record's start). Its place among the banks is the bank number
  // rotated right by r bits (within the bank bits), 2^r the rows a whole
  // interleave block spans (4 KiB blocks of 1 KiB rows: r = 2): the banks
  // whole blocks start in are the multiples of 2^r, and rotated they are
  // the first records, one host cache line (banks 0, 4, 8, 12 of 16 at
  // places 0-3, where they were 64 bytes apart). A bijection on the banks:
  // only where a bank's state is kept changes. (A bank count that is no
  // power of two: r = 0, the bank number itself.) A table, as the decode
  // gives the bank number: one load instead of the rotation's shifts.
  std::vector<std::uint32_t> bank_at_;
  Tick last_wait_ = 0;  // longest queueing wait of the access being served (serve())
  bool reference_walk_ = false;
  // serve()'s walk over the access's chunks (Pow2: map_.pow2()) with the
  // map and timing `map` and `t` (this object's, copied by the caller); the
  // longest wait in `wait`.
  template <bool Pow2>
  Tick serve_rows(const HbmAddressMap& map, const ChunkTiming& t, const MemAccess& a, Tick arrive, Tick& wait);
  // serve_rows<true>() with each row's whole chunks walked by HbmBlockWalk
  // (hbm_walk.h): the same chunks in the same order, the same state.
  Tick walk_rows(const HbmAddressMap& map, const ChunkTiming& t, const MemAccess& a, Tick arrive, Tick& wait);
  // The walk of walk_rows() over the runs `runs` hands out (runs(f) calls
  // f(addr, bytes) for each), all of access kind `write`.
  template <class Runs>
  Tick walk_runs(const HbmAddressMap& map, const ChunkTiming& t, bool write, Tick arrive, Tick& wait, Runs runs);
  // b_transport()'s serve_with() of each run of batch `b` and their fold,
  // in one walk (pow2 maps, no trace): the same answer, stats and state.
  Tick walk_batch(const HbmAddressMap& map, const ChunkTiming& t, const MemAccess& b, Tick arrive, Tick& wait);
  // serve() of single access `a` with the map and timing given; the stats
  // and trace as serve() keeps them. (A batch's runs, one set-up for all.)
  Tick serve_with(const HbmAddressMap& map, const ChunkTiming& t, const MemAccess& a, Tick arrive, Tick& wait);
  void b_transport(int id, tlm::tlm_generic_payload& p, sc_core::sc_time& delay);

  const SimClock& time_;
  HbmSpec spec_;
  HbmAddressMap map_;
  units::Bandwidth channel_bw_;
  Tick chunk_ticks_ = 0;  // one full interleave chunk (the common case)
  std::vector<Tick> part_ticks_;  // ChunkTiming::part_ticks
  ChannelRecords channels_;
  std::uint64_t reads_ = 0, writes_ = 0, read_bytes_ = 0, write_bytes_ = 0;
  TraceWriter* trace_ = nullptr;  // null when tracing is off
  Tick bucket_ = 0;
  std::map<Tick, std::pair<std::uint64_t, std::uint64_t>> traffic_;  // bucket -> (read, write) bytes
};

}  // namespace tdmsim::sim
