// A compute unit's reservations of channel time (the L2's, through its
// port's DeferredChannels view) for a K group of main-loop iterations:
// host-speed machinery beside the compute unit (compute_unit.h). The group's
// loads go out as one access whose lookup reserves no channel time
// (MemAccess::channel_time_later); each iteration's lines are then reserved
// when its loads would have gone out on their own. Rather than counting each
// iteration's lines when it is reserved (reserve_reference():
// DeferredChannels::count_for_reserve, load by load), the lines of kChunk
// iterations are counted per channel at once into a table
// (DeferredChannels::count_iterations, or once per group by hash term:
// DeferredChannels::add_terms), and an iteration's runs of loads are reserved
// from its rows in one call (DeferredChannels::reserve_runs). The same reservations and
// the same times (tests/sim/test_host_variants.cpp); no effect on any
// simulated time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "isa/tile_program.h"
#include "sim/core/sim_time.h"
#include "sim/mem/deferred_channels.h"
#include "sim/mem/mem_access.h"

namespace tdmsim::sim {

// Operand range `r` as loaded by iteration `iter` of its loop.
inline MemAccess access_at(const isa::MemRange& r, std::uint32_t iter) {
  MemAccess a;
  a.addr = r.addr + static_cast<std::uint64_t>(static_cast<std::int64_t>(iter) * r.iter_stride);
  a.row_bytes = r.row_bytes;
  a.rows = r.rows;
  a.row_stride = r.row_stride;
  a.gather = r.gather ? r.gather->data() : nullptr;
  return a;
}

class ReservationBatch {
 public:
  // Iterations of a K group whose L2 lines are counted at once (a table of
  // this many iterations x channels per run of loads, per slot: small enough
  // that the slots of 256 compute units stay in the host's caches).
  static constexpr std::uint32_t kChunk = 16;

  // Prepares the reservations of a new K group of `g` iterations of `loop`
  // from its iteration `first` (the loop outlives the group): its runs of
  // loads (consecutive loads that go out `offset(load)` after their
  // iteration's start), whether 16 bits hold the counts, and the loads
  // counted for the whole group at once.
  template <class Offset>
  void begin_group(const DeferredChannels& ch, const isa::Loop& loop, std::uint32_t first, std::uint32_t g, Offset offset) {
    run_at_.clear();
    run_of_.clear();
    for (const auto& r : loop.loads) {
      const Tick at = offset(r);
      if (run_at_.empty() || run_at_.back() != at) run_at_.push_back(at);
      run_of_.push_back(static_cast<std::uint32_t>(run_at_.size() - 1));
    }
    count_group(ch, loop, first, g);
  }
  // Reserves the L2 channel time of iteration `j` of the group (in order:
  // every iteration once, from 0), whose loads would have gone out at `at`;
  // returns when their data that hit is back. (Inline: it runs once per
  // main-loop iteration, where a call's set-up costs as much as its work.)
  Tick reserve(const DeferredChannels& ch, std::uint32_t j, Tick at) {
    if (!counted_) return reserve_reference(ch, j, at);
    const std::size_t channels = ch.channels();
    if (!chunk_counted_ || j - chunk_first_ >= kChunk) count_chunk(ch, j);
    const std::size_t row = j - chunk_first_;
    return ch.reserve_runs(&lines_[row * channels], kChunk * channels, run_at_.data(), run_at_.size(), at);
  }
  // The same, load by load (what reserve() does when the counts do not fit
  // 16 bits).
  Tick reserve_reference(const DeferredChannels& ch, std::uint32_t j, Tick at) const;

  // The host addresses of the table rows that reserving iteration `j` reads
  // (at most `room`, into `at`); returns how many. (For the CU's note of the
  // addresses it reads first when resumed: no effect on results.)
  std::size_t rows_read(std::uint32_t j, std::size_t channels, const void** at, std::size_t room) const {
    if (!chunk_counted_ || lines_.empty()) return 0;
    const std::size_t row = j - chunk_first_;
    if (row >= kChunk) return 0;
    std::size_t k = 0;
    for (std::size_t run = 0; run < run_at_.size() && k < room; ++run) {
      at[k++] = &lines_[(run * kChunk + row) * channels];
    }
    return k;
  }
  // Keeps `old`'s storage (its contents are not used).
  void take_storage(ReservationBatch& old) {
    lines_.swap(old.lines_);
    run_at_.swap(old.run_at_);
    run_of_.swap(old.run_of_);
    terms_.swap(old.terms_);
    in_terms_.swap(old.in_terms_);
  }
  // The bytes from its start that every reservation reads.
  static const std::size_t kHotBytes;

 private:
  void count_group(const DeferredChannels& ch, const isa::Loop& loop, std::uint32_t first, std::uint32_t g);
  // Counts the lines of the group's iterations from j0 (kChunk of them at most) into lines_.
  void count_chunk(const DeferredChannels& ch, std::uint32_t j0);

  // (What every reservation reads comes first.)
  // The lines of the group, per iteration and channel, counted kChunk
  // iterations at a time: one table per run of loads, in load order.
  // Without it (`counted_` false: a group too large for 16-bit counts) each
  // iteration counts its own lines (reserve_reference).
  std::vector<std::uint16_t> lines_;  // [run][iteration - chunk_first_][channel]
  std::vector<Tick> run_at_;          // per run: its loads' issue offset
  std::uint32_t chunk_first_ = 0;     // the table's first iteration in the group
  bool chunk_counted_ = false;        // the table holds the group's chunk_first_..
  bool counted_ = false;
  // (The rest is read once per K group or chunk.)
  const isa::Loop* loop_ = nullptr;
  std::uint32_t first_ = 0;  // the group's first iteration in loop_
  std::uint32_t g_ = 0;
  std::vector<std::uint32_t> run_of_;  // per load of the loop: its run
  // Per run: its loads of one line per row and iteration, counted once for
  // the whole group (DeferredChannels::add_terms); per load: whether it is counted
  // there (else count_chunk counts it chunk by chunk).
  std::vector<DeferredChannels::LineTerms> terms_;
  std::vector<std::uint8_t> in_terms_;
};

constexpr std::size_t ReservationBatch::kHotBytes = offsetof(ReservationBatch, loop_);

}  // namespace tdmsim::sim
