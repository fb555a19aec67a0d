// The command processor / workgroup dispatcher: launches one kernel at a time
// (after the launch overhead), hands workgroups to CUs as their slots free
// up (in index order, or with launch.workgroup_order die_round_robin or
// die_chunked from one queue per die: workgroup i on die i mod dies, or die d
// a contiguous run of the grid), and knows when the last one has finished.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <systemc>

#include "isa/tile_program.h"
#include "sim/core/sim_time.h"
#include "sim/core/slot_time.h"
#include "sim/core/stats.h"
#include "workloads/specs/enums.h"

namespace tdmsim::sim {

struct KernelTiming {
  std::string name;
  Tick launch = 0;  // when the host launched it
  Tick start = 0;   // launch + launch overhead: first workgroup may start
  Tick end = 0;     // last workgroup finished
  std::uint32_t workgroups = 0;
  double clock_hz = 0;  // the engine clock it ran at (sim/platform/power.h)
  double hbm_bytes = 0;  // read and written at HBM from its launch to its write-back's end
  // For the attribution of its time (slot_time.h): its last workgroup's end
  // (`end` less the write-back), its CUs' slot time by cause and slots per CU.
  Tick work_end = 0;
  // launch.kernel_boundary, the last part of `end` (host-launched kernels only):
  // a fixed per-kernel cost, attributed with the launch, not the write-back.
  Tick boundary = 0;
  SlotTime slots;
  // The CUs' slots (workgroups a CU holds); for a kernel without workgroups
  // (the TDM unit's routing), the last kernel's: the attribution divides
  // this kernel's slot time by it (apps/tdmsim/attribution.cpp).
  std::uint32_t slots_per_cu = 0;
  // What limited slots_per_cu: "waves", "lds" or "registers"
  // (ComputeSpec::occupancy); empty for a stage without workgroups.
  std::string occupancy_limiter;
  // The workgroups a CU holds of this kernel, as outputs report it: 0 for a
  // kernel without workgroups, whose slots_per_cu is the last kernel's.
  std::uint32_t workgroups_per_cu() const { return workgroups > 0 ? slots_per_cu : 0; }
};

// A hardware scheduler that decides at run time which workgroup a free CU
// slot gets and when it may start (the TDM unit's slot models and dynamic
// policy, sim/platform/tdm_slot_runtime.h). The CUs report each finished
// workgroup back, so its choices can follow completions.
class RuntimeDispatch {
 public:
  enum class Pick : std::uint8_t { job, retry, none };
  virtual ~RuntimeDispatch() = default;
  // A CU slot of the kernel that started at `kernel_start` is free at
  // `free_at` (both absolute). job: run workgroup `wg`, not before `at`;
  // retry: nothing may start yet, ask again at `at` (> free_at); none: every
  // workgroup is handed out.
  virtual Pick pick(Tick kernel_start, Tick free_at, std::uint32_t& wg, Tick& at) = 0;
  // Workgroup `wg` ran from `start` to `end`.
  virtual void done(std::uint32_t wg, Tick start, Tick end) = 0;
};

// How a hardware scheduler wants a kernel's workgroups handed out: in
// `order`, none before its release time (relative to the kernel's start);
// or, with `runtime`, as that object decides while the kernel runs.
struct DispatchPlan {
  std::vector<std::uint32_t> order;  // workgroup ids, each once
  std::vector<Tick> release;         // per position in `order`
  Tick start_delay = 0;              // replaces the host launch overhead
  Tick workgroup_dispatch = 0;       // replaces the per-workgroup dispatch latency
  RuntimeDispatch* runtime = nullptr;  // not owned; replaces order and release
};

class Dispatcher : public sc_core::sc_module {
 public:
  // `dies` x `cus_per_die` CUs; `order`: launch.workgroup_order with `vendor`
  // resolved (effective_workgroup_order, machine_spec.h).
  Dispatcher(sc_core::sc_module_name name, Tick launch_overhead, Tick workgroup_dispatch,
             std::uint32_t dies, std::uint32_t cus_per_die, WorkgroupOrder order, StatRegistry& stats);

  // Runs one kernel to completion; call from a SystemC thread. Without a
  // plan: launched by the host (launch overhead, workgroups in index order).
  KernelTiming launch(const isa::KernelLaunch& kernel, const DispatchPlan* plan = nullptr);

  // The engine clock of the kernels launched from now on, in Hz (the clock
  // governor's choice, sim/platform/power.h); the CUs read it as a kernel starts.
  void set_clock(double hz) { clock_hz_ = hz; }
  double clock_hz() const { return clock_hz_; }

  // --- for the CUs ---
  sc_core::sc_event kernel_started;
  const isa::KernelLaunch& kernel() const { return *kernel_; }
  Tick kernel_start() const { return timing_.start; }
  std::uint64_t generation() const { return generation_; }
  // The next workgroup for a CU of `die` whose slot is free at `free_at`, and
  // the earliest time it may start, or false when all (all of that die's,
  // with a per-die order) are handed out. wg == kRetry: none may start yet;
  // the slot asks again at `not_before` (a plan with a runtime only).
  static constexpr std::uint32_t kRetry = ~0u;
  bool next(std::uint32_t die, std::uint32_t& wg, Tick& not_before, Tick free_at = 0);
  // A CU finished workgroup `wg` (started at `start`) at `end`: passed on to
  // the plan's runtime, if any.
  void workgroup_done(std::uint32_t wg, Tick start, Tick end) {
    if (plan_ != nullptr && plan_->runtime != nullptr) plan_->runtime->done(wg, start, end);
  }
  // How many of its `slots` CU `cu` (its index in the die) of `die` fills at
  // the kernel's start (the rest stay idle for this kernel): all of them, or
  // with a per-die order its share of the die's workgroups spread evenly over
  // the die's CUs, every CU one before any takes two (share / CUs each, the
  // first share % CUs one more), as the hardware's workgroup dispatcher
  // fills a die. The TDM unit's jobs (a plan) are spread so too, each die
  // taking its share of the first wave: the unit places its jobs at least as
  // well as the machine's own dispatcher does a host launch's
  // (docs/moe-timing.md).
  std::uint32_t first_claims(std::uint32_t die, std::uint32_t cu, std::uint32_t slots);
  std::uint32_t cus() const { return cus_; }
  // The running kernel's atomic store bytes (its stores marked atomic: a
  // combine's adds, split-K partials) per workgroup, averaged over its grid;
  // worked out by the first caller of each kernel (every workgroup's program
  // built once), for the round-robin atomic units (compute_unit.cpp).
  double mean_atomic_bytes();
  Tick dispatch_latency() const { return plan_ != nullptr ? plan_->workgroup_dispatch : workgroup_dispatch_; }
  // A CU has finished all its workgroups of this kernel, the last at `end`.
  void cu_done(Tick end);

  // Called as workgroups are handed out (about every 1% of a kernel, and at
  // its last one): kernel name, workgroups handed out, total. For progress
  // display on long runs; never affects timing.
  using Progress = std::function<void(const std::string&, std::uint32_t, std::uint32_t)>;
  void set_progress(Progress p) { progress_ = std::move(p); }

 private:
  Tick launch_overhead_;
  Tick workgroup_dispatch_;
  std::uint32_t cus_;
  std::uint32_t dies_;
  WorkgroupOrder order_;
  const isa::KernelLaunch* kernel_ = nullptr;
  const DispatchPlan* plan_ = nullptr;
  Progress progress_;
  std::uint32_t next_wg_ = 0;           // workgroups handed out
  // Per-die orders: handed out per die (host launches), or claimed per die
  // at the kernel's start (plans: first_claims).
  std::vector<std::uint32_t> next_of_die_;
  std::uint32_t cus_running_ = 0;
  std::uint64_t generation_ = 0;
  std::uint64_t atomic_mean_generation_ = 0;  // the kernel mean_atomic_bytes_ is of
  double mean_atomic_bytes_ = 0;
  double clock_hz_ = 0;
  KernelTiming timing_;
  sc_core::sc_event all_done_;
  std::uint64_t kernels_ = 0, workgroups_ = 0;
};

}  // namespace tdmsim::sim
