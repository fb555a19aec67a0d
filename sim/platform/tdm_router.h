// The TDM MoE unit's routing stage (hypothetical hardware, machine YAML
// `tdm.routing_*`): after the gate GEMM the unit dispatched to the CUs has
// written the router logits, the stage streams them in from memory, scores
// them (softmax or sigmoid), adds the selection bias, picks the groups and
// the top-k, and sorts the routed rows into the padded block layout (the task
// table the descriptors' tile jobs read), all in a pipeline that takes
// tdm.routing_scores_per_clock items a cycle, plus tdm.routing_latency to
// fill and drain. When the scenario gives the router's output
// (routing.router_stage: given) it reads the top-k ids and only sorts.
//
// Time of a routing launch starting at t0 with `items` through the pipeline:
//   scored = max(t0 + items / rate cycles, reads complete) + routing_latency
//   end    = max(scored, the task table's writes complete, issued at scored)
// (the reads stream in while the pipeline works; the table is written once
// every row's place is known). docs/moe-timing.md "Routing".
#pragma once

#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "isa/tile_program.h"
#include "sim/core/sim_time.h"
#include "sim/core/stats.h"
#include "sim/core/trace.h"
#include "sim/mem/mem_access.h"
#include "sim/platform/dispatcher.h"
#include "sim/platform/tdm_routing_if.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

class TdmRouter : public sc_core::sc_module, public TdmRoutingIf {
 public:
  tlm_utils::simple_initiator_socket<TdmRouter> mem;  // logits in, task table out

  // `dispatcher` gives the engine clock the stage runs at (compute.clock, or
  // the power governor's for this launch).
  TdmRouter(sc_core::sc_module_name name, const TdmSpec& spec, const Dispatcher& dispatcher,
            StatRegistry& stats, TraceWriter* trace);

  KernelTiming route(const isa::KernelLaunch& k) override;

  // The pipeline's time for `items` at `clock_hz`, without memory: items /
  // routing_scores_per_clock cycles (rounded up) plus routing_latency.
  Tick pipeline_ps(std::uint64_t items, double clock_hz) const;

 private:
  TdmSpec spec_;
  const Dispatcher& dispatcher_;
  TraceWriter* trace_;
  std::uint32_t trace_pid_ = 0;
  MemPort port_;
  std::uint64_t launches_ = 0, items_ = 0, read_bytes_ = 0, write_bytes_ = 0, busy_ps_ = 0;
};

}  // namespace tdmsim::sim
