#include "sim/platform/tdm_scheduler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <variant>

#include "descriptors/format/descriptor_file.h"
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
  for (std::size_t d = 0; d < kStatDescriptors; ++d) {
    register_stats(stats, me + ".desc[" + std::to_string(d) + "]", per_desc_[d]);
  }
}

void TdmScheduler::register_stats(StatRegistry& stats, const std::string& owner, DescStats& s) {
  stats.add(owner, "jobs", &s.slots.jobs, "count", "tile jobs the unit dispatched");
  stats.add(owner, "dispatch_time", &s.slots.dispatch_ps, "ps",
            "CU-slot time spent on tdm.dispatch_latency, summed over jobs");
  stats.add(owner, "slot_wait_time", &s.slots.slot_wait_ps, "ps",
            "CU-slot time a free slot waited for its next job's time slot to open (beyond the "
            "dispatch latency), summed over jobs");
  stats.add(owner, "job_busy_time", &s.slots.busy_ps, "ps", "jobs' run time, start to end, summed");
  stats.add(owner, "idle_cu_time", &s.idle_cu_ps, "ps",
            "CU-slot time with no job between the first job's dispatch and the last job's end "
            "(bubbles: CU slots x span - job_busy_time)");
  stats.add(owner, "span", &s.span_ps, "ps", "from the descriptor's dispatch start to its last job's end");
  stats.add(owner, "slot_retries", &s.slots.retries, "count",
            "skip_drained: free CU slots told to look again for a drained time slot");
  stats.add(owner, "drained_slots", &s.slots.drained_slots, "count",
            "skip_drained: time slots opened early because the previous one drained");
  stats.add(owner, "skipped_slot_time", &s.slots.skipped_ps, "ps",
            "skip_drained: slot length skipped that way (wall time)");
}

void TdmScheduler::ring(std::vector<const isa::KernelLaunch*> kernels) {
  queue_ = std::move(kernels);
  const std::size_t n = queue_.size();
  ready_.assign(n, 0);
  end_.assign(n, 0);
  prepared_.assign(n, false);
  plans_.assign(n, {});
  decoded_.assign(n, std::nullopt);
  runtimes_.clear();
  runtimes_.resize(n);
  per_slot_.assign(n, 1);
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
  const std::vector<std::byte>& bytes = k.hardware->descriptor;
  if (!bytes.empty()) {
    MemAccess a;
    a.addr = k.hardware->descriptor_addr;
    a.row_bytes = static_cast<std::uint32_t>(bytes.size());
    const Tick now = sc_core::sc_time_stamp().value();
    start = std::max(start, now);  // never issue into the past
    const Tick read = port_.send(mem, a, start, now);
    fetched = std::max(start + ticks(spec_.descriptor_fetch_latency), read);
    fetch_bytes_ += a.bytes();
    ++descriptors_;
    // What the unit's decoder makes of the fetched bytes: the same decoder
    // `tdmsim describe` runs. The CLI checks a user's stream before the run
    // (exit 2 with the offset), so a failure here is an internal error.
    auto decoded = format::decode_any(bytes);
    if (!decoded || !std::holds_alternative<format::MoeDescriptor>(decoded.value())) {
      throw std::runtime_error(
          "TDM unit: the descriptor of " + k.name + " does not decode: " +
          (decoded ? std::string("not a MoE descriptor") : decoded.error().to_string()));
    }
    decoded_[d] = std::get<format::MoeDescriptor>(std::move(decoded).value());
  }
  ready_[d] = fetched + ticks(spec_.decode_latency);
  fetch_free_ = ready_[d];
  if (trace_ != nullptr) {
    trace_->slice(trace_pid_, 0, k.name + " fetch+decode", start, ready_[d]);
  }
  const Occupancy occ = occupancy(machine_.compute, k.program(0));
  const format::MoeDescriptor* desc = decoded_[d] ? &*decoded_[d] : nullptr;
  const std::uint32_t per_slot = machine_.compute.total_cus() * std::max(1u, occ.workgroups);
  Jobs placed = order_jobs(k, desc);
  TdmSlotRuntime::Params rp;
  rp.model = spec_.slot_model;
  rp.dynamic = placed.dynamic;
  rp.timed = placed.timed;
  rp.per_slot = per_slot;
  rp.slots = spec_.slots;
  rp.dispatch = ticks(spec_.dispatch_latency);
  // A CU slot waiting for a drained time slot looks again once a dispatch
  // latency (the unit's own dispatch cycle), at least every nanosecond.
  rp.poll = std::max<Tick>(rp.dispatch, 1000);
  runtimes_[d] = std::make_unique<TdmSlotRuntime>(std::move(placed.jobs), rp);
  per_slot_[d] = per_slot;
  plans_[d] = {};
  plans_[d].workgroup_dispatch = 0;  // in the runtime's release times (pipelined dispatch)
  plans_[d].runtime = runtimes_[d].get();
  prepared_[d] = true;
}

KernelTiming TdmScheduler::execute_next() {
  if (next_ >= queue_.size()) throw std::logic_error("TDM scheduler: no descriptor queued");
  const std::size_t d = next_++;
  if (!prepared_[d]) throw std::logic_error("TDM scheduler: descriptor not fetched");
  const Tick now = sc_core::sc_time_stamp().value();
  const Tick could_start = d == 0 ? doorbell_ : end_[d - 1];
  // The descriptor's wait. The unit runs descriptors one at a time in stream
  // order, so a wait that earlier descriptors meet is met by now; one they do
  // not would never be (the CLI refuses such a stream before the run).
  if (decoded_[d]) {
    if (!wait_met(*decoded_[d])) {
      throw std::runtime_error("TDM unit: the wait of " + queue_[d]->name +
                               "'s descriptor is never met (no earlier descriptor signals it)");
    }
  }
  if (ready_[d] > now) {
    decode_wait_ps_ += ready_[d] - std::max(now, could_start);
    wait(to_sc_time(ready_[d] - now));
  }
  const DispatchPlan& plan = plans_[d];
  const Tick start = sc_core::sc_time_stamp().value();
  KernelTiming t = dispatcher_.launch(*queue_[d], &plan);
  t.launch = could_start;
  workgroups_ += queue_[d]->workgroups;
  const TdmSlotRuntime& rt = *runtimes_[d];
  const auto opened = rt.opened();
  for (std::size_t i = 0; i < opened.size(); ++i) {
    if (trace_ != nullptr) {
      const Tick open = start + opened[i].open;
      trace_->slice(trace_pid_, 1, queue_[d]->name + " slot " + std::to_string(i), open,
                    open + opened[i].length);
    }
  }
  slots_used_ += opened.size();
  // The counters the attribution reads: the descriptor's own and the totals.
  DescStats run;
  run.slots = rt.counters();
  run.span_ps = t.end > start ? t.end - start : 0;
  const std::uint64_t capacity = std::uint64_t{per_slot_[d]} * run.span_ps;
  run.idle_cu_ps = capacity > run.slots.busy_ps ? capacity - run.slots.busy_ps : 0;
  const auto add = [](DescStats& to, const DescStats& from) {
    to.slots.jobs += from.slots.jobs;
    to.slots.dispatch_ps += from.slots.dispatch_ps;
    to.slots.slot_wait_ps += from.slots.slot_wait_ps;
    to.slots.busy_ps += from.slots.busy_ps;
    to.slots.retries += from.slots.retries;
    to.slots.drained_slots += from.slots.drained_slots;
    to.slots.skipped_ps += from.slots.skipped_ps;
    to.span_ps += from.span_ps;
    to.idle_cu_ps += from.idle_cu_ps;
  };
  add(per_desc_[std::min(d, kStatDescriptors - 1)], run);
  return t;
}

void TdmScheduler::finished(Tick end) {
  if (next_ == 0) throw std::logic_error("TDM scheduler: finished() before execute_next()");
  end_[next_ - 1] = end;
  // Its completion signals its id (a counter: the number of such signals).
  const auto& done = decoded_[next_ - 1];
  if (done && done->sync.signal_id != 0) signals_[done->sync.signal_id].push_back(end);
  // Its queue entry is free: the descriptor `depth` places on can be fetched.
  const std::size_t e = next_ - 1 + std::max(1u, spec_.queue_depth);
  if (e < queue_.size() && !prepared_[e]) prepare(e);
}

std::optional<Tick> TdmScheduler::wait_met(const format::MoeDescriptor& d) const {
  const format::SyncInfo& s = d.sync;
  // The time of the n-th signal of `id` (n >= 1), if it came.
  const auto nth = [&](std::uint32_t id, std::uint32_t n) -> std::optional<Tick> {
    const auto it = signals_.find(id);
    if (it == signals_.end() || it->second.size() < n) return std::nullopt;
    return it->second[n - 1];
  };
  Tick met = 0;
  switch (s.wait_mode) {
    case format::WaitMode::none: break;
    case format::WaitMode::all_of:
      for (const std::uint32_t id : s.wait_ids) {
        const auto t = nth(id, 1);
        if (!t) return std::nullopt;
        met = std::max(met, *t);
      }
      break;
    case format::WaitMode::counter: {
      const auto t = nth(s.wait_ids.at(0), s.counter_target);
      if (!t) return std::nullopt;
      met = *t;
      break;
    }
  }
  return met;
}

Tick TdmScheduler::slot_ps(const format::MoeDescriptor& d, const format::TimeSlot& s) const {
  if (d.slot_unit == format::SlotUnit::ns) return Tick{s.length} * 1000;
  // Cycles of the unit's clock: the machine's engine clock (compute.clock).
  const auto hz = static_cast<double>(machine_.compute.clock.hz);
  return static_cast<Tick>(std::llround(static_cast<double>(s.length) * 1e12 / hz));
}

DispatchPlan TdmScheduler::place(const isa::KernelLaunch& k, const format::MoeDescriptor* d,
                                 std::uint32_t per_slot) const {
  // The wave-synchronous schedule, worked out ahead: what TdmSlotRuntime
  // hands out when nothing is decided by completions.
  const Jobs placed = order_jobs(k, d);
  const std::uint32_t n = static_cast<std::uint32_t>(placed.jobs.size());
  DispatchPlan plan;
  plan.order.resize(n);
  plan.release.assign(n, 0);
  for (std::uint32_t i = 0; i < n; ++i) plan.order[i] = placed.jobs[i].wg;
  if (!placed.timed) return plan;
  // Machine waves of `per` jobs (the last of tdm.slots takes the rest); a wave
  // opens when the previous one has been open for the longest slot length among
  // the slot records it started jobs of.
  const std::uint32_t per = std::max(1u, per_slot);
  const std::uint32_t last = std::max(1u, spec_.slots) - 1;
  Tick open = 0;
  for (std::uint32_t i = 0; i < n;) {
    const std::uint32_t wave = std::min(i / per, last);
    const std::uint32_t end = wave == last ? n : std::min(n, (wave + 1) * per);
    Tick longest = 0;
    for (std::uint32_t j = i; j < end; ++j) {
      plan.release[j] = open;
      longest = std::max(longest, placed.jobs[j].length);
    }
    open += longest;
    i = end;
  }
  return plan;
}

TdmScheduler::Jobs TdmScheduler::order_jobs(const isa::KernelLaunch& k,
                                            const format::MoeDescriptor* d) const {
  const isa::HardwareDispatch& hw = *k.hardware;
  const std::uint32_t n = k.workgroups;
  Jobs out;
  out.jobs.reserve(n);
  if (d == nullptr) {
    // No descriptor of its own (the split-K reduction inside the gate/up
    // descriptor): grid order, every slot tdm.slot_length long.
    for (std::uint32_t i = 0; i < n; ++i) out.jobs.push_back({i, 0, ticks(spec_.slot_length)});
    return out;
  }
  if (hw.block.size() != n || hw.n_tile.size() != n) {
    throw std::logic_error("TDM unit: " + k.name + " has no grid map for its workgroups");
  }
  // The kernel's workgroups of each token block, in grid order.
  std::map<std::uint32_t, std::vector<std::uint32_t>> of_block;
  for (std::uint32_t wg = 0; wg < n; ++wg) of_block[hw.block[wg]].push_back(wg);
  // Jobs in slot-table order, each with its slot record; empty slots are skipped.
  struct Job {
    std::uint32_t wg, slot;
  };
  std::vector<Job> table;
  table.reserve(n);
  for (std::uint32_t s = 0; s < d->slots.size(); ++s) {
    const format::TimeSlot& slot = d->slots[s];
    if (slot.valid_rows == 0) continue;
    const auto it = of_block.find(slot.block);
    if (it == of_block.end()) {
      throw std::runtime_error("TDM unit: slot " + std::to_string(s) + " of " + k.name +
                               "'s descriptor names token block " + std::to_string(slot.block) +
                               ", which the kernel has no workgroups for (or another slot took)");
    }
    for (const std::uint32_t wg : it->second) table.push_back({wg, s});
    of_block.erase(it);
  }
  if (!of_block.empty()) {
    throw std::runtime_error("TDM unit: " + k.name + "'s descriptor has no slot for token block " +
                             std::to_string(of_block.begin()->first));
  }
  const TdmPolicy policy = d->layer.policy;
  out.timed = policy != TdmPolicy::low_latency;  // low_latency: every job at once
  out.dynamic = policy == TdmPolicy::dynamic;
  const auto job = [&](const Job& j, std::uint32_t group) {
    return TdmSlotRuntime::Job{j.wg, group, slot_ps(*d, d->slots[j.slot])};
  };
  if (policy == TdmPolicy::custom) {
    for (const Job& j : table) out.jobs.push_back(job(j, 0));
    return out;
  }
  // Jobs per expert, each list N tile by N tile across the expert's blocks.
  std::map<std::uint32_t, std::vector<Job>> by_expert;
  for (const Job& j : table) by_expert[d->slots[j.slot].expert].push_back(j);
  std::vector<std::vector<Job>> lists;
  for (auto& [e, list] : by_expert) {
    std::stable_sort(list.begin(), list.end(), [&](const Job& a, const Job& b) {
      return hw.n_tile[a.wg] != hw.n_tile[b.wg] ? hw.n_tile[a.wg] < hw.n_tile[b.wg]
                                                : hw.block[a.wg] < hw.block[b.wg];
    });
    lists.push_back(std::move(list));
  }
  const bool small_first = policy == TdmPolicy::low_latency;
  std::stable_sort(lists.begin(), lists.end(), [&](const auto& a, const auto& b) {
    return small_first ? a.size() < b.size() : a.size() > b.size();
  });
  if (policy == TdmPolicy::load_balance) {
    for (std::size_t i = 0; out.jobs.size() < n; ++i) {
      for (const auto& l : lists) {
        if (i < l.size()) out.jobs.push_back(job(l[i], 0));
      }
    }
  } else {
    // capacity_first, low_latency; dynamic: each expert its own group (busiest
    // first), chosen among at run time.
    for (std::uint32_t g = 0; g < lists.size(); ++g) {
      for (const Job& j : lists[g]) out.jobs.push_back(job(j, out.dynamic ? g : 0));
    }
  }
  return out;
}

}  // namespace tdmsim::sim
