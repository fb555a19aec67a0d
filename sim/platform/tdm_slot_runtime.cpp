#include "sim/platform/tdm_slot_runtime.h"

#include <algorithm>
#include <stdexcept>

namespace tdmsim::sim {

TdmSlotRuntime::TdmSlotRuntime(std::vector<Job> jobs, const Params& params)
    : jobs_(std::move(jobs)), p_(params) {
  p_.per_slot = std::max(1u, p_.per_slot);
  p_.slots = std::max(1u, p_.slots);
  p_.poll = std::max<Tick>(1, p_.poll);
  std::uint32_t max_wg = 0;
  for (const Job& j : jobs_) max_wg = std::max(max_wg, j.wg);
  wave_of_.assign(jobs_.empty() ? 0 : max_wg + 1, 0);
  job_of_.assign(wave_of_.size(), 0);
  if (p_.dynamic) {
    for (std::uint32_t i = 0; i < jobs_.size(); ++i) {
      const std::uint32_t g = jobs_[i].group;
      if (g >= groups_.size()) groups_.resize(g + 1);
      groups_[g].jobs.push_back(i);
    }
  }
}

std::uint32_t TdmSlotRuntime::choose() const {
  if (!p_.dynamic) return handed_;
  // The group with the most estimated remaining work per job in flight (the
  // first of equals, then the one with more jobs left).
  const double mean_all = finished_ > 0 ? run_ps_ / finished_ : 1.0;
  std::size_t best = groups_.size();
  double best_score = -1;
  std::size_t best_left = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const Group& gr = groups_[g];
    const std::size_t left = gr.jobs.size() - gr.next;
    if (left == 0) continue;
    const double est = gr.finished > 0 ? gr.run_ps / gr.finished : mean_all;
    const double score = static_cast<double>(left) * est / (gr.in_flight + 1.0);
    if (score > best_score || (score == best_score && left > best_left)) {
      best = g;
      best_score = score;
      best_left = left;
    }
  }
  if (best == groups_.size()) throw std::logic_error("TDM slot runtime: no job left to choose");
  return groups_[best].jobs[groups_[best].next];
}

TdmSlotRuntime::Pick TdmSlotRuntime::pick(Tick kernel_start, Tick free_at, std::uint32_t& wg,
                                          Tick& at) {
  if (handed_ >= jobs_.size()) return Pick::none;
  const Tick free_rel = free_at > kernel_start ? free_at - kernel_start : 0;
  const bool waves = p_.timed && p_.model != TdmSlotModel::continuous;
  std::uint32_t w = 0;
  Tick open = 0;
  if (waves) {
    w = std::min(handed_ / p_.per_slot, p_.slots - 1);
    if (w == waves_.size()) {  // the first job of a new time slot
      Tick start = 0;
      if (w > 0) {
        Wave& prev = waves_.back();
        const Tick timer = prev.open + prev.length;
        start = timer;
        if (p_.model == TdmSlotModel::skip_drained) {
          if (prev.outstanding == 0) {
            // Drained: the rest of its length is skipped.
            start = std::min(timer, std::max(prev.open, prev.drained));
            if (start < timer) {
              prev.closed_early = true;
              ++counters_.drained_slots;
              counters_.skipped_ps += timer - start;
            }
          } else if (free_rel < timer) {
            // Still running and its length not up: look again a little later.
            at = kernel_start + std::min(timer, free_rel + p_.poll);
            ++counters_.retries;
            counters_.slot_wait_ps += at - free_at;  // the slot idles until it asks again
            return Pick::retry;
          }
        }
      }
      waves_.push_back({start, 0, 0, 0, false});
    }
    open = waves_[w].open;
  }
  const std::uint32_t i = choose();
  const Job& j = jobs_[i];
  if (p_.dynamic) {
    Group& g = groups_[j.group];
    ++g.next;
    ++g.in_flight;
  }
  ++handed_;
  if (waves) {
    Wave& wave = waves_[w];
    wave.length = std::max(wave.length, j.length);
    ++wave.outstanding;
  }
  wave_of_.at(j.wg) = w;
  job_of_.at(j.wg) = i;
  wg = j.wg;
  // The unit queues each CU's next job ahead of need: the dispatch latency
  // runs from when the job became dispatchable (the kernel's start, its time
  // slot's opening), not from when the CU slot frees, so back-to-back jobs
  // on a CU follow each other with no gap.
  at = kernel_start + open + p_.dispatch;
  ++counters_.jobs;
  const Tick wait = at > free_at ? at - free_at : 0;
  const Tick on_dispatch = std::min(wait, p_.dispatch);
  counters_.dispatch_ps += on_dispatch;
  counters_.slot_wait_ps += wait - on_dispatch;
  kernel_start_ = kernel_start;
  return Pick::job;
}

void TdmSlotRuntime::done(std::uint32_t wg, Tick start, Tick end) {
  if (wg >= wave_of_.size()) throw std::logic_error("TDM slot runtime: unknown workgroup finished");
  counters_.busy_ps += end > start ? end - start : 0;
  if (!waves_.empty()) {
    Wave& w = waves_[wave_of_[wg]];
    if (w.outstanding > 0) --w.outstanding;
    const Tick rel = end > kernel_start_ ? end - kernel_start_ : 0;
    w.drained = std::max(w.drained, rel);
  }
  if (p_.dynamic) {
    Group& g = groups_[jobs_[job_of_[wg]].group];
    if (g.in_flight > 0) --g.in_flight;
    ++g.finished;
    g.run_ps += static_cast<double>(end > start ? end - start : 0);
    ++finished_;
    run_ps_ += static_cast<double>(end > start ? end - start : 0);
  }
}

std::vector<TdmSlotRuntime::Opened> TdmSlotRuntime::opened() const {
  std::vector<Opened> out;
  if (waves_.empty()) {
    Tick longest = 0;
    for (const Job& j : jobs_) longest = std::max(longest, j.length);
    out.push_back({0, longest});
    return out;
  }
  for (std::size_t w = 0; w < waves_.size(); ++w) {
    const Wave& wave = waves_[w];
    const bool early = wave.closed_early && w + 1 < waves_.size();
    out.push_back({wave.open, early ? waves_[w + 1].open - wave.open : wave.length});
  }
  return out;
}

}  // namespace tdmsim::sim
