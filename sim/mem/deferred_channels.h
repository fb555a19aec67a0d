// The channel time of a memory level that its requesters reserve later: a
// compute unit sends a K group of loop iterations' loads as one access with
// MemAccess::channel_time_later (the level looks the lines up and sends the
// misses on, but reserves no channel time for them), then reserves each
// iteration's lines on these channels when its loads would have gone out on
// their own (sim/cu/reservation_batch.h).
//
// Part of the compute unit's memory port: the unit reaches memory through its
// TLM socket and this view, both handed to it by the platform builder
// (sim/platform/gpu.cpp), never through the level's class. The view is
// concrete (the level's channel array, line time and hash, resolved once when
// the builder wires the unit), so the per-iteration reservation is an inline
// call, as fast as a direct one into the level (docs/performance.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/core/host_isa.h"
#include "sim/core/sim_time.h"
#include "sim/mem/channel_count.h"
#include "sim/mem/channel_reserve.h"
#include "sim/mem/mem_access.h"

namespace tdmsim::sim {

class DeferredChannels {
 public:
  // Lines counted per channel for a group's loads of one whole line per row
  // and iteration (ChannelCounter::LineTerms).
  using LineTerms = ChannelCounter::LineTerms;

  DeferredChannels() = default;
  // The level's channel hash `count`, its `channels` channels from `channel`,
  // the time a line holds a channel, the latency a hit adds, whether the
  // AVX2 steps apply (channel_reserve::avx2_fits on a host that has AVX2),
  // its line size, and scratch for count_for_reserve (`channels` counts and
  // one for lines on every channel alike). The pointers stay the level's.
  DeferredChannels(const ChannelCounter* count, BusyUntil* channel, std::size_t channels, Tick line_time,
                   Tick hit_latency, bool avx2, std::uint64_t line_bytes, std::uint32_t* reserve_count,
                   std::uint64_t* reserve_every)
      : count_(count), channel_(channel), channels_(channels), line_time_(line_time), hit_latency_(hit_latency),
        avx2_(avx2), line_bytes_(line_bytes), reserve_count_(reserve_count), reserve_every_(reserve_every) {}

  // Whether there is a level behind the view (a default-made one has none).
  bool valid() const { return channel_ != nullptr; }
  std::size_t channels() const { return channels_; }
  std::size_t channel_of(std::uint64_t line) const { return count_->channel_of(line); }
  // Lines of one iteration of `a` at most, on any channel (what keeps the
  // counts of a table in 16 bits).
  std::uint64_t iteration_lines(const MemAccess& a) const {
    return std::uint64_t{a.rows} * ((a.row_bytes + line_bytes_ - 1) / line_bytes_ + 1);
  }

  // The channels' time of a loop iteration's loads: count_for_reserve()
  // counts each load's lines per channel, then reserve_counted() reserves
  // what was counted, arriving at `arrive`, and returns when the data of the
  // lines that hit is back at the requester. A channel serves its lines one
  // after another from max(arrive, free), so loads arriving together may be
  // counted together: one reservation per channel of all their lines ends
  // where line-by-line reservations would, and their data is back when the
  // last is. (The counting and the reserving: channel_count.h, channel_reserve.h.)
  void count_for_reserve(const MemAccess& a) const { count_->count_rows(a, reserve_count_, *reserve_every_); }
  Tick reserve_counted(Tick arrive) const;
  // The same counts for a whole K group at once: adds the lines of `g`
  // iterations of a load, iteration j being `a` moved by j x iter_stride,
  // to table[j x channels() + channel]. reserve_lines() then reserves one
  // iteration's row of the table, as reserve_counted() would. Each entry
  // counts at most iteration_lines(a) lines.
  void count_iterations(const MemAccess& a, std::int64_t iter_stride, std::uint32_t g, std::uint16_t* table) const {
    count_->count_iterations(a, iter_stride, g, table);
  }
  Tick reserve_lines(const std::uint16_t* lines, Tick arrive) const;
  // reserve_lines() for `runs` rows in turn, row k at rows + k x stride
  // arriving at at + offsets[k] (an iteration's runs of loads); returns when
  // the data of them all is back (`at` when there are none).
  Tick reserve_runs(const std::uint16_t* rows, std::size_t stride, const Tick* offsets, std::size_t runs,
                    Tick at) const {
    if (runs == 0) return at;
#if TDMSIM_X86_VARIANTS
    // (Inline, and straight to the AVX2 steps: this runs once per main-loop
    // iteration, where one call more cost a fifth of the work.)
    if (avx2_) {
      return channel_reserve::runs_avx2(rows, stride, offsets, runs, at, line_time_, channel_, channels_) +
             hit_latency_;
    }
#endif
    return channel_reserve::runs_scalar(rows, stride, offsets, runs, at, line_time_, channel_, channels_) +
           hit_latency_;
  }

  // The same counts for loads of one whole line per row and iteration (a K
  // step of one line, the common fp8 case), made once per K group
  // (ChannelCounter::LineTerms). The loads of one run (reserved at once)
  // share one LineTerms.
  // Empties `t` for a group of `g` iterations.
  void reset_terms(LineTerms& t, std::uint32_t g) const { count_->reset_terms(t, g); }
  // Adds the rows of `a` to `t` if they are of that kind, else returns false
  // with `t` unchanged (ChannelCounter::add_terms).
  bool add_terms(const MemAccess& a, std::int64_t iter_stride, LineTerms& t) const {
    return count_->add_terms(a, iter_stride, t);
  }
  // Adds iterations j0 .. j0 + n - 1 of the group counted in `t` to table
  // rows 0 .. n - 1 (as count_iterations would for those loads).
  void terms_rows(const LineTerms& t, std::uint32_t j0, std::uint32_t n, std::uint16_t* table) const {
    count_->terms_rows(t, j0, n, table);
  }

 private:
  const ChannelCounter* count_ = nullptr;
  BusyUntil* channel_ = nullptr;
  std::size_t channels_ = 0;
  Tick line_time_ = 0;
  Tick hit_latency_ = 0;
  bool avx2_ = false;
  std::uint64_t line_bytes_ = 128;
  std::uint32_t* reserve_count_ = nullptr;
  std::uint64_t* reserve_every_ = nullptr;
};

}  // namespace tdmsim::sim
