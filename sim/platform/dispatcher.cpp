#include "sim/platform/dispatcher.h"

#include <algorithm>
#include <stdexcept>

namespace tdmsim::sim {

Dispatcher::Dispatcher(sc_core::sc_module_name name, Tick launch_overhead,
                       Tick workgroup_dispatch, std::uint32_t dies, std::uint32_t cus_per_die,
                       WorkgroupOrder order, StatRegistry& stats)
    : sc_module(name), launch_overhead_(launch_overhead), workgroup_dispatch_(workgroup_dispatch),
      cus_(dies * cus_per_die), dies_(std::max(1u, dies)), order_(order), next_of_die_(dies_, 0) {
  // `vendor` is the machine's to resolve (effective_workgroup_order): taken
  // here it would read as a per-die order on any machine.
  if (order == WorkgroupOrder::vendor) {
    throw std::logic_error("internal error: the dispatcher was given workgroup_order vendor unresolved");
  }
  stats.add(this->name(), "kernels", &kernels_, "count", "kernels launched");
  stats.add(this->name(), "workgroups", &workgroups_, "count", "workgroups dispatched");
}

KernelTiming Dispatcher::launch(const isa::KernelLaunch& kernel, const DispatchPlan* plan) {
  kernel_ = &kernel;
  plan_ = plan;
  const Tick delay = plan != nullptr ? plan->start_delay : launch_overhead_;
  timing_ = {};
  timing_.name = kernel.name;
  timing_.workgroups = kernel.workgroups;
  timing_.launch = sc_core::sc_time_stamp().value();
  timing_.start = timing_.launch + delay;
  timing_.end = timing_.start;
  next_wg_ = 0;
  std::fill(next_of_die_.begin(), next_of_die_.end(), 0u);
  cus_running_ = cus_;
  ++generation_;
  ++kernels_;
  wait(to_sc_time(delay));
  kernel_started.notify(sc_core::SC_ZERO_TIME);
  wait(all_done_);
  // CUs run ahead of global time; the kernel is over when its last workgroup is.
  const Tick now = sc_core::sc_time_stamp().value();
  if (timing_.end > now) wait(to_sc_time(timing_.end - now));
  kernel_ = nullptr;
  plan_ = nullptr;
  return timing_;
}

// Host launches on a machine whose dies take their own share of the grid
// (die_round_robin, die_chunked); plans, the TDM unit's, keep their own order.
static bool per_die(WorkgroupOrder order, std::uint32_t dies, const DispatchPlan* plan) {
  return order != WorkgroupOrder::index && dies > 1 && plan == nullptr;
}

// Workgroups of a grid of `total` that die `d` of `dies` runs: an even share,
// the first total % dies dies one more.
static std::uint32_t die_share(std::uint32_t d, std::uint32_t dies, std::uint32_t total) {
  return total / dies + (d < total % dies ? 1 : 0);
}

bool Dispatcher::next(std::uint32_t die, std::uint32_t& wg, Tick& not_before, Tick free_at) {
  if (kernel_ == nullptr || next_wg_ >= kernel_->workgroups) return false;
  if (plan_ != nullptr && plan_->runtime != nullptr) {
    // The hardware scheduler decides now, from what has run so far.
    switch (plan_->runtime->pick(timing_.start, std::max(free_at, timing_.start), wg, not_before)) {
      case RuntimeDispatch::Pick::none: return false;
      case RuntimeDispatch::Pick::retry: wg = kRetry; return true;
      case RuntimeDispatch::Pick::job: break;
    }
  } else {
    std::uint32_t pos = next_wg_;
    if (per_die(order_, dies_, plan_)) {
      // The hardware sends flat workgroup i to XCD i mod 8 on MI300 and MI350
      // (ROCm/composable_kernel PR 3652, XCD remapping; iree-org/wave PR 1001;
      // Modular's chiplet_transform_chunked); each die runs its own in order.
      // Kernels that remap their workgroup index (die_chunked: CK's RemapXCD,
      // composable_kernel PR 3161 for its MoE flatmm) give each XCD a
      // contiguous run of the grid instead, so that neighbouring tiles, which
      // share operands, share that XCD's L2.
      const std::uint32_t d = die % dies_, total = kernel_->workgroups;
      std::uint64_t i;
      if (order_ == WorkgroupOrder::die_chunked) {
        if (next_of_die_[d] >= die_share(d, dies_, total)) return false;
        i = std::uint64_t{d} * (total / dies_) + std::min(d, total % dies_) + next_of_die_[d];
      } else {
        i = std::uint64_t{next_of_die_[d]} * dies_ + d;
        if (i >= total) return false;
      }
      ++next_of_die_[d];
      pos = static_cast<std::uint32_t>(i);
    }
    wg = plan_ != nullptr ? plan_->order[pos] : pos;
    not_before = timing_.start + (plan_ != nullptr ? plan_->release[pos] : 0);
  }
  ++next_wg_;
  if (progress_) {
    const std::uint32_t total = kernel_->workgroups;
    const std::uint32_t step = std::max(1u, total / 100);
    if (next_wg_ % step == 0 || next_wg_ == total) progress_(kernel_->name, next_wg_, total);
  }
  ++workgroups_;
  return true;
}

std::uint32_t Dispatcher::first_claims(std::uint32_t die, std::uint32_t cu, std::uint32_t slots) {
  if (kernel_ == nullptr || order_ == WorkgroupOrder::index || dies_ <= 1) return slots;
  const std::uint32_t d = die % dies_;
  const std::uint32_t share = die_share(d, dies_, kernel_->workgroups);
  const std::uint32_t per_die = std::max(1u, cus_ / dies_);
  // An even spread: every CU of the die one workgroup before any takes a
  // second, the first share % CUs of them one more than the rest.
  const std::uint32_t even = share / per_die + (cu % per_die < share % per_die ? 1 : 0);
  const std::uint32_t claims = std::min(slots, even);
  if (plan_ == nullptr) return claims;  // next() keeps each die to its share
  // A plan's jobs go in its order to whichever slot asks: each die's CUs
  // claim its share (the even spread above sums to it), so a first wave
  // smaller than the CUs' slots spreads over every die (each a contiguous
  // run of the plan) instead of filling die 0's CUs first. (When it is
  // larger, every CU claims all its slots.) `left` only guards the count.
  const std::uint32_t left = share - std::min(share, next_of_die_[d]);
  next_of_die_[d] += std::min(claims, left);
  return std::min(claims, left);
}

double Dispatcher::mean_atomic_bytes() {
  if (atomic_mean_generation_ == generation_ || kernel_ == nullptr) return mean_atomic_bytes_;
  atomic_mean_generation_ = generation_;
  double total = 0;
  isa::TileProgram p;
  for (std::uint32_t wg = 0; wg < kernel_->workgroups; ++wg) {
    kernel_->build(wg, p);
    total += static_cast<double>(p.atomic_store_bytes());
  }
  mean_atomic_bytes_ = kernel_->workgroups > 0 ? total / kernel_->workgroups : 0.0;
  return mean_atomic_bytes_;
}

void Dispatcher::cu_done(Tick end) {
  timing_.end = std::max(timing_.end, end);
  if (--cus_running_ == 0) all_done_.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace tdmsim::sim
