// The TDM MoE descriptor scheduler (hypothetical hardware, machine YAML
// `tdm:`): software rings a doorbell for a sequence of MoE descriptors; the
// unit fetches each descriptor from memory, decodes it, places its tile jobs
// into time slots by policy and dispatches them to CUs, with no host kernel
// launch. Up to `queue_depth` descriptors are held at once, so the next
// descriptor's fetch and decode overlap the current one's execution.
//
// Placement (docs/moe-timing.md "TDM path"): a time slot holds one machine
// wave of jobs (CUs x workgroups per CU) and opens `slot_length` after the
// previous used slot (empty slots are skipped). Policies order the jobs:
//   custom          the descriptor's own table order (what software wrote)
//   capacity_first  busiest expert first; inside an expert, N tile by N tile
//                   across its token blocks, so concurrent jobs share weight tiles
//   load_balance    experts interleaved job by job (busiest first), each in
//                   the capacity_first order, spreading weight streams over time
//   low_latency     least busy expert first, no time slicing (all released at once)
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "isa/tile_program.h"
#include "sim/core/sim_time.h"
#include "sim/core/stats.h"
#include "sim/core/trace.h"
#include "sim/mem/mem_access.h"
#include "sim/platform/dispatcher.h"
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

  // Where the jobs of `k` go: order and slot release times, for `per_slot`
  // jobs per time slot. Exposed for tests.
  DispatchPlan place(const isa::KernelLaunch& k, std::uint32_t per_slot) const;

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
  std::size_t next_ = 0;
  Tick doorbell_ = 0;
  Tick fetch_free_ = 0;  // the fetch/decode engine is in order
  std::uint64_t descriptors_ = 0, fetch_bytes_ = 0, slots_used_ = 0, workgroups_ = 0,
                decode_wait_ps_ = 0;
};

}  // namespace tdmsim::sim
