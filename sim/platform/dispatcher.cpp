#include "sim/platform/dispatcher.h"

#include <algorithm>

namespace tdmsim::sim {

Dispatcher::Dispatcher(sc_core::sc_module_name name, Tick launch_overhead,
                       Tick workgroup_dispatch, std::uint32_t cus, StatRegistry& stats)
    : sc_module(name), launch_overhead_(launch_overhead), workgroup_dispatch_(workgroup_dispatch),
      cus_(cus) {
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

bool Dispatcher::next(std::uint32_t& wg, Tick& not_before) {
  if (kernel_ == nullptr || next_wg_ >= kernel_->workgroups) return false;
  const std::uint32_t pos = next_wg_++;
  if (progress_) {
    const std::uint32_t total = kernel_->workgroups;
    const std::uint32_t step = std::max(1u, total / 100);
    if (next_wg_ % step == 0 || next_wg_ == total) progress_(kernel_->name, next_wg_, total);
  }
  wg = plan_ != nullptr ? plan_->order[pos] : pos;
  not_before = timing_.start + (plan_ != nullptr ? plan_->release[pos] : 0);
  ++workgroups_;
  return true;
}

void Dispatcher::cu_done(Tick end) {
  timing_.end = std::max(timing_.end, end);
  if (--cus_running_ == 0) all_done_.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace tdmsim::sim
