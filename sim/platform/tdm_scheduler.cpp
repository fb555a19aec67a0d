#include "sim/platform/tdm_scheduler.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>

#include "sim/cu/compute_unit.h"

namespace tdmsim::sim {

TdmScheduler::TdmScheduler(sc_core::sc_module_name name, const MachineSpec& machine,
                           Dispatcher& dispatcher, StatRegistry& stats, TraceWriter* trace)
    : sc_module(name), mem("mem"), machine_(machine), spec_(*machine.tdm), dispatcher_(dispatcher),
      trace_(trace) {
  const std::string me = this->name();
  if (trace_ != nullptr) {
    trace_pid_ = trace_->process(me);
    trace_->thread_name(trace_pid_, 0, "descriptors");
    trace_->thread_name(trace_pid_, 1, "time slots");
  }
  stats.add(me, "descriptors", &descriptors_, "count", "MoE descriptors fetched and run");
  stats.add(me, "fetch_bytes", &fetch_bytes_, "bytes", "descriptor bytes read from memory");
  stats.add(me, "slots_used", &slots_used_, "count", "non-empty time slots dispatched");
  stats.add(me, "workgroups", &workgroups_, "count", "tile jobs dispatched to CUs");
  stats.add(me, "decode_wait_time", &decode_wait_ps_, "ps",
            "time the CUs waited for a descriptor to be fetched and decoded");
}

void TdmScheduler::ring(std::vector<const isa::KernelLaunch*> kernels) {
  queue_ = std::move(kernels);
  const std::size_t n = queue_.size();
  ready_.assign(n, 0);
  end_.assign(n, 0);
  prepared_.assign(n, false);
  plans_.assign(n, {});
  next_ = 0;
  doorbell_ = sc_core::sc_time_stamp().value();
  fetch_free_ = std::max(fetch_free_, doorbell_);
  // Descriptors that fit in the queue are fetched and decoded right away;
  // later ones as entries free up (finished()).
  const std::size_t depth = std::max(1u, spec_.queue_depth);
  for (std::size_t d = 0; d < n && d < depth; ++d) prepare(d);
}

void TdmScheduler::prepare(std::size_t d) {
  const isa::KernelLaunch& k = *queue_[d];
  const std::uint32_t depth = std::max(1u, spec_.queue_depth);
  // In order, and only once a queue entry is free (descriptor d - depth done).
  Tick start = std::max(doorbell_, fetch_free_);
  if (d >= depth) start = std::max(start, end_[d - depth]);
  Tick fetched = start;
  if (k.hardware->descriptor_bytes > 0) {
    MemAccess a;
    a.addr = k.hardware->descriptor_addr;
    a.row_bytes = k.hardware->descriptor_bytes;
    const Tick now = sc_core::sc_time_stamp().value();
    start = std::max(start, now);  // never issue into the past
    const Tick read = port_.send(mem, a, start, now);
    fetched = std::max(start + ticks(spec_.descriptor_fetch_latency), read);
    fetch_bytes_ += a.bytes();
    ++descriptors_;
  }
  ready_[d] = fetched + ticks(spec_.decode_latency);
  fetch_free_ = ready_[d];
  if (trace_ != nullptr) {
    trace_->slice(trace_pid_, 0, k.name + " fetch+decode", start, ready_[d]);
  }
  const Occupancy occ = occupancy(machine_.compute, k.program(0));
  plans_[d] = place(k, machine_.compute.total_cus() * std::max(1u, occ.workgroups));
  prepared_[d] = true;
}

KernelTiming TdmScheduler::execute_next() {
  if (next_ >= queue_.size()) throw std::logic_error("TDM scheduler: no descriptor queued");
  const std::size_t d = next_++;
  if (!prepared_[d]) throw std::logic_error("TDM scheduler: descriptor not fetched");
  const Tick now = sc_core::sc_time_stamp().value();
  const Tick could_start = d == 0 ? doorbell_ : end_[d - 1];
  if (ready_[d] > now) {
    decode_wait_ps_ += ready_[d] - std::max(now, could_start);
    wait(to_sc_time(ready_[d] - now));
  }
  const DispatchPlan& plan = plans_[d];
  const Tick start = sc_core::sc_time_stamp().value();
  KernelTiming t = dispatcher_.launch(*queue_[d], &plan);
  t.launch = could_start;
  workgroups_ += queue_[d]->workgroups;
  std::uint64_t used = 0;
  for (std::size_t i = 0; i < plan.release.size(); ++i) {
    if (i == 0 || plan.release[i] != plan.release[i - 1]) {
      ++used;
      if (trace_ != nullptr) {
        const Tick open = start + plan.release[i];
        trace_->slice(trace_pid_, 1, queue_[d]->name + " slot " + std::to_string(used - 1), open,
                      open + ticks(spec_.slot_length));
      }
    }
  }
  slots_used_ += used;
  return t;
}

void TdmScheduler::finished(Tick end) {
  if (next_ == 0) throw std::logic_error("TDM scheduler: finished() before execute_next()");
  end_[next_ - 1] = end;
  // Its queue entry is free: the descriptor `depth` places on can be fetched.
  const std::size_t e = next_ - 1 + std::max(1u, spec_.queue_depth);
  if (e < queue_.size() && !prepared_[e]) prepare(e);
}

DispatchPlan TdmScheduler::place(const isa::KernelLaunch& k, std::uint32_t per_slot) const {
  const isa::HardwareDispatch& hw = *k.hardware;
  const std::uint32_t n = k.workgroups;
  DispatchPlan plan;
  plan.start_delay = 0;
  plan.workgroup_dispatch = ticks(spec_.dispatch_latency);
  plan.order.resize(n);
  std::iota(plan.order.begin(), plan.order.end(), 0u);
  if (hw.policy != TdmPolicy::custom) {
    // Jobs per expert, each list N tile by N tile across the expert's blocks.
    std::map<std::uint32_t, std::vector<std::uint32_t>> by_expert;
    for (std::uint32_t wg = 0; wg < n; ++wg) by_expert[hw.expert[wg]].push_back(wg);
    std::vector<std::vector<std::uint32_t>> lists;
    for (auto& [e, jobs] : by_expert) {
      std::stable_sort(jobs.begin(), jobs.end(), [&](std::uint32_t a, std::uint32_t b) {
        return hw.n_tile[a] != hw.n_tile[b] ? hw.n_tile[a] < hw.n_tile[b] : hw.block[a] < hw.block[b];
      });
      lists.push_back(std::move(jobs));
    }
    const bool small_first = hw.policy == TdmPolicy::low_latency;
    std::stable_sort(lists.begin(), lists.end(), [&](const auto& a, const auto& b) {
      return small_first ? a.size() < b.size() : a.size() > b.size();
    });
    plan.order.clear();
    if (hw.policy == TdmPolicy::load_balance) {
      for (std::size_t i = 0; plan.order.size() < n; ++i) {
        for (const auto& l : lists) {
          if (i < l.size()) plan.order.push_back(l[i]);
        }
      }
    } else {
      for (const auto& l : lists) plan.order.insert(plan.order.end(), l.begin(), l.end());
    }
  }
  plan.release.resize(n);
  const bool sliced = hw.policy != TdmPolicy::low_latency;
  const std::uint32_t per = std::max(1u, per_slot);
  const std::uint32_t last = std::max(1u, spec_.slots) - 1;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t slot = sliced ? std::min(i / per, last) : 0;
    plan.release[i] = slot * ticks(spec_.slot_length);
  }
  return plan;
}

}  // namespace tdmsim::sim
