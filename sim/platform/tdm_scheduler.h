// The TDM MoE descriptor scheduler (hypothetical hardware, machine YAML
// `tdm:`): software rings a doorbell for a sequence of MoE descriptors; the
// unit fetches each descriptor from memory, decodes it, places its tile jobs
// into time slots by policy and dispatches them to CUs, with no host kernel
// launch. Up to `queue_depth` descriptors are held at once, so the next
// descriptor's fetch and decode overlap the current one's execution.
//
// The unit schedules from the descriptor bytes it fetches: they are decoded
// with the decoder `tdmsim describe` uses (format::decode_any), and the slot
// table, per-slot lengths, policy and sync section of the result decide the
// placement (docs/moe-timing.md "TDM path"). A slot record names one token
// block of one expert; its jobs are the kernel's workgroups for that block
// (the kernel's grid, isa::HardwareDispatch). A time slot of the machine
// holds one machine wave of jobs (CUs x workgroups per CU) by default; what a
// time slot means at run time is tdm.slot_model (TdmSlotRuntime: wave
// synchronous, continuous, skip_drained). Policies order the jobs:
//   custom          the slot table's order (what software wrote; a nonzero
//                   callback id names the routing callback that produced it)
//   capacity_first  busiest expert first; inside an expert, N tile by N tile
//                   across its token blocks, so concurrent jobs share weight tiles
//   load_balance    experts interleaved job by job (busiest first), each in
//                   the capacity_first order, spreading weight streams over time
//   low_latency     least busy expert first, no time slicing (all released at once)
//   dynamic         per expert in the capacity_first order; which expert's job
//                   a free CU slot gets is decided at run time from completions
// Sync: each finished descriptor signals its signal_id (a counter per id); a
// descriptor starts only when its wait (all_of: every listed id signalled;
// counter: id wait_ids[0] signalled counter_target times) is met.
#pragma once

#include <cstdint>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "descriptors/format/moe_descriptor.h"
#include "isa/tile_program.h"
#include "sim/core/sim_time.h"
#include "sim/core/stats.h"
#include "sim/core/trace.h"
#include "sim/mem/mem_access.h"
#include "sim/platform/dispatcher.h"
#include "sim/platform/tdm_slot_runtime.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

class TdmScheduler : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<TdmScheduler> mem;  // descriptor fetches

  TdmScheduler(sc_core::sc_module_name name, const MachineSpec& machine, Dispatcher& dispatcher,
               StatRegistry& stats, TraceWriter* trace);

  // The doorbell: `kernels` (hardware-dispatched, in order, each waiting for
  // the previous) are queued now. Call from a SystemC thread.
  void ring(std::vector<const isa::KernelLaunch*> kernels);
  // Runs the next queued descriptor to completion; its timing's `launch` is
  // when it could first have started (the doorbell, or the previous end).
  KernelTiming execute_next();
  // The previous descriptor's work is complete (written back) at `end`.
  void finished(Tick end);

  // A new layer starts: the signal counters are cleared.
  void reset_signals() { signals_.clear(); }

  // Where the jobs of `k` go under wave_synchronous slots: order and the
  // opening time of each job's time slot (the unit adds tdm.dispatch_latency
  // at run time), for `per_slot` jobs per time slot, from its decoded
  // descriptor `d` (null: a kernel with no descriptor of its own, run in grid
  // order). Policy dynamic: its experts' jobs one expert after the other (the
  // order at run time is TdmSlotRuntime's). Throws std::runtime_error if the
  // slot table does not cover the kernel's workgroups exactly once. Exposed
  // for tests.
  DispatchPlan place(const isa::KernelLaunch& k, const format::MoeDescriptor* d,
                     std::uint32_t per_slot) const;
  // The jobs of `k` in policy order, each with its expert group and slot
  // record length; `timed` false: no time slicing (low_latency).
  struct Jobs {
    std::vector<TdmSlotRuntime::Job> jobs;
    bool timed = true;
    bool dynamic = false;
  };
  Jobs order_jobs(const isa::KernelLaunch& k, const format::MoeDescriptor* d) const;
  // A slot record's length in ps (ns, or cycles of compute.clock).
  Tick slot_ps(const format::MoeDescriptor& d, const format::TimeSlot& s) const;
  // When the wait of `d` is met by the signals so far; nullopt: not yet.
  std::optional<Tick> wait_met(const format::MoeDescriptor& d) const;

 private:
  void prepare(std::size_t d);  // fetch and decode descriptor d

  const MachineSpec& machine_;
  TdmSpec spec_;
  Dispatcher& dispatcher_;
  TraceWriter* trace_;
  std::uint32_t trace_pid_ = 0;
  MemPort port_;
  std::vector<const isa::KernelLaunch*> queue_;
  std::vector<Tick> ready_, end_;
  std::vector<bool> prepared_;
  std::vector<DispatchPlan> plans_;
  std::vector<std::optional<format::MoeDescriptor>> decoded_;
  std::vector<std::unique_ptr<TdmSlotRuntime>> runtimes_;  // per descriptor: its run-time dispatch
  std::vector<std::uint32_t> per_slot_;  // per descriptor: jobs per time slot (CU slots it can fill)
  std::map<std::uint32_t, std::vector<Tick>> signals_;  // id -> when each signal came
  std::size_t next_ = 0;
  Tick doorbell_ = 0;
  Tick fetch_free_ = 0;  // the fetch/decode engine is in order
  std::uint64_t descriptors_ = 0, fetch_bytes_ = 0, slots_used_ = 0, workgroups_ = 0,
                decode_wait_ps_ = 0;
  // Slot-runtime counters per stream position in each ring (desc[0] is
  // gate_up or the 1-stage kernel, desc[1] down; the last one also takes
  // every later descriptor), for the TDM-vs-software attribution: the sum
  // over `<unit>.desc[*]` is the unit's total.
  static constexpr std::size_t kStatDescriptors = 4;
  struct DescStats {
    SlotCounters slots;
    std::uint64_t span_ps = 0;      // start of its jobs' dispatch to its last job's end
    std::uint64_t idle_cu_ps = 0;   // CU-slot time idle within that span (bubbles)
  };
  std::array<DescStats, kStatDescriptors> per_desc_{};
  void register_stats(StatRegistry& stats, const std::string& owner, DescStats& s);
};

}  // namespace tdmsim::sim
