#include "sim/cu/reservation_batch.h"

#include <algorithm>
#include <cstddef>

namespace tdmsim::sim {

void ReservationBatch::count_group(const DeferredChannels& ch, const isa::Loop& loop, std::uint32_t first, std::uint32_t g) {
  loop_ = &loop;
  first_ = first;
  g_ = g;
  // Whether each run's counts fit 16 bits (a table cell counts one
  // iteration's lines on one channel, at most the run's lines per iteration).
  std::uint64_t most = 0, run_lines = 0;
  for (std::size_t k = 0; k < loop.loads.size(); ++k) {
    if (k == 0 || run_of_[k] != run_of_[k - 1]) run_lines = 0;
    run_lines += ch.iteration_lines(access_at(loop.loads[k], first));
    most = std::max(most, run_lines);
  }
  counted_ = most <= 0xFFFF;
  chunk_counted_ = false;
  if (!counted_) return;
  if (terms_.size() < run_at_.size()) terms_.resize(run_at_.size());
  for (std::size_t run = 0; run < run_at_.size(); ++run) ch.reset_terms(terms_[run], g);
  in_terms_.resize(loop.loads.size());
  for (std::size_t k = 0; k < loop.loads.size(); ++k) {
    const auto& r = loop.loads[k];
    in_terms_[k] = ch.add_terms(access_at(r, first), r.iter_stride, terms_[run_of_[k]]) ? 1 : 0;
  }
}

void ReservationBatch::count_chunk(const DeferredChannels& ch, std::uint32_t j0) {
  const std::uint32_t iter = first_ + j0;
  const std::size_t channels = ch.channels();
  const std::uint32_t n = std::min(kChunk, g_ - j0);
  lines_.assign(run_at_.size() * kChunk * channels, 0);
  for (std::size_t k = 0; k < loop_->loads.size(); ++k) {
    if (in_terms_[k] != 0) continue;  // counted for the group, below
    const auto& r = loop_->loads[k];
    ch.count_iterations(access_at(r, iter), r.iter_stride, n, &lines_[run_of_[k] * kChunk * channels]);
  }
  for (std::size_t run = 0; run < run_at_.size(); ++run) {
    if (terms_[run].offsets > 0) ch.terms_rows(terms_[run], j0, n, &lines_[run * kChunk * channels]);
  }
  chunk_first_ = j0;
  chunk_counted_ = true;
}

Tick ReservationBatch::reserve_reference(const DeferredChannels& ch, std::uint32_t j, Tick at) const {
  // Loads issued at the same time are reserved at once: one reservation per
  // channel of all their lines ends where one per load would, and their data
  // is back when the last is. Loads issued at another time, in load order.
  Tick back = at;
  Tick counted_at = 0;
  bool counted = false;
  for (std::size_t k = 0; k < loop_->loads.size(); ++k) {
    const Tick issued = at + run_at_[run_of_[k]];
    if (counted && issued != counted_at) back = std::max(back, ch.reserve_counted(counted_at));
    ch.count_for_reserve(access_at(loop_->loads[k], first_ + j));
    counted = true;
    counted_at = issued;
  }
  if (counted) back = std::max(back, ch.reserve_counted(counted_at));
  return back;
}

}  // namespace tdmsim::sim
