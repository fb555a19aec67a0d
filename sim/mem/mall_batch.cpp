// Mall::serve_batch: a batch of runs (run_batch.h) served as Mall::serve_one
// serves them one after another, without serve_one's set-up, slice
// reservations and call to HBM per run. Host-speed machinery beside the
// MALL; serve_one run by run is the reference (Mall::set_runs_one_by_one,
// tests/sim/test_run_batch.cpp compares answers, stats and later state).
//
// Why it is the same. Every run of a batch arrives at one time `arrive`.
// - Slice buses: run k reserves d_k on a slice from max(arrive, free), so
//   after the first the runs follow each other: the bus ends at
//   max(arrive, free) + sum d_k, the same as one reservation of the sum, and
//   the longest queueing wait is the last run's, (end - d_last) - arrive.
//   The durations are summed run by run (transfer_ticks of each run's
//   lines, from a table for short runs), so rounding is unchanged.
// - HBM: its state and the slices' are separate, and the runs' misses reach
//   it in the same order at the same time, each run's merged as send_runs
//   merged them (never across runs), so one call serves the same runs in
//   turn. Its answer is the max over runs, as the runs' answers were folded.
// - Tags: looked up run by run in the batch's order (look_up), as before,
//   in one walk whose set-up is made once for the batch. Each run's misses
//   are collected straight onto the list sent to HBM, merged among
//   themselves as append_run and send_runs merged them; a read that missed
//   whole and line-aligned is sent on whole by serve_one, which is that
//   same one run.
#include <algorithm>

#include "sim/mem/mall.h"
#include "sim/mem/run_batch.h"

namespace tdmsim::sim {

void Mall::serve_batch(const MemAccess& b, Tick arrive, Tick now, BatchAnswer& answer) {
  const std::size_t slices = slice_bus_.size();
  slice_sum_.assign(slices, 0);
  slice_last_.resize(slices);
  slice_used_.assign(slices, 0);
  below_.clear();
  // Each run looked up and counted in turn, in one walk (look_up).
  look_up(b, true);
  Tick done = arrive;
  Tick unloaded = 0, wait = 0;
  const Tick hit_latency = ticks(spec_.hit_latency);
  for (std::size_t sl = 0; sl < slices; ++sl) {
    if (slice_used_[sl] == 0) continue;
    const Tick end = slice_bus_[sl].reserve(arrive, slice_sum_[sl]);
    done = std::max(done, end + hit_latency);
    unloaded = hit_latency;
    wait = std::max(wait, end - slice_last_[sl] - arrive);
  }
  if (!below_.empty()) {
    done = std::max(done, port_.send(hbm_link_, batch_access(below_, b.write, b.die), arrive, now));
    unloaded = std::max(unloaded, port_.unloaded());
    wait = std::max(wait, port_.wait());
  }
  answer.fold(done, unloaded, wait);
}

}  // namespace tdmsim::sim
