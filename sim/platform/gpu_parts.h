// The parts a GPU is built of, shared by the whole GPU (gpu.cpp) and a
// partitioned one running several tenants at once (partitioned_gpu.cpp): the
// host thread that runs one kernel stream through one dispatcher, and one die
// (XCD) of CUs with its L2 and fabric link; and the steps of a run (start a
// host's stream, simulate, collect its timings, the governor's clocks).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <systemc>

#include "isa/tile_program.h"
#include "sim/core/sim_time.h"
#include "sim/core/stats.h"
#include "sim/core/trace.h"
#include "sim/cu/compute_unit.h"
#include "sim/mem/fabric.h"
#include "sim/mem/hbm.h"
#include "sim/mem/iod_links.h"
#include "sim/mem/l1_cache.h"
#include "sim/mem/l2_cache.h"
#include "sim/platform/dispatcher.h"
#include "sim/platform/gpu.h"
#include "sim/platform/tdm_routing_if.h"
#include "sim/platform/tdm_scheduler.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

// Named, not anonymous: GpuModule (declared in gpu.h, so of external linkage)
// has members of these types.
namespace gpu_parts {

// The host side: a SystemC thread that launches the queued kernels in order.
struct Host : sc_core::sc_module {
  Dispatcher& dispatcher;
  const MachineSpec& machine;
  const std::vector<isa::KernelLaunch>* kernels = nullptr;
  // Each kernel's engine clock (the governor's, from the probe run); empty:
  // compute.clock.
  std::vector<double> clocks;
  std::vector<KernelTiming> timings;
  const Hbm* hbm = nullptr;
  std::vector<L2Cache*> l2s;
  std::vector<L1Cache*> l1s;  // invalidated at each kernel's start
  std::vector<const ComputeUnit*> cus;  // for each kernel's slot time by cause
  TdmScheduler* tdm = nullptr;  // null on machines without a TDM MoE unit
  TdmRoutingIf* router = nullptr;  // the unit's routing stage (the same machines)
  sc_core::sc_event go;
  bool pending = false;  // run() asked for work before this thread first waited

  Host(sc_core::sc_module_name n, Dispatcher& d, const MachineSpec& m)
      : sc_module(n), dispatcher(d), machine(m) {
    SC_HAS_PROCESS(Host);
    SC_THREAD(main);
  }
  void main() {
    while (true) {
      if (!pending) wait(go);
      pending = false;
      if (tdm != nullptr) tdm->reset_signals();  // a new layer: its descriptors' ids start afresh
      for (std::size_t i = 0; i < kernels->size(); ++i) {
        const isa::KernelLaunch& k = (*kernels)[i];
        const bool hardware = k.hardware != nullptr;
        const bool routing = k.routing != nullptr;
        for (auto* l1 : l1s) l1->invalidate();
        if ((hardware && tdm == nullptr) || (routing && router == nullptr)) {
          throw std::runtime_error("kernel " + k.name + " needs a TDM MoE unit; machine has none");
        }
        if (hardware && (i == 0 || (*kernels)[i - 1].hardware == nullptr)) {
          // Doorbell: the run of descriptors starting here is handed to the unit.
          std::vector<const isa::KernelLaunch*> run;
          for (std::size_t j = i; j < kernels->size() && (*kernels)[j].hardware; ++j) {
            run.push_back(&(*kernels)[j]);
          }
          tdm->ring(std::move(run));
        }
        // The clock this kernel holds under the board's power limit.
        dispatcher.set_clock(i < clocks.size() ? clocks[i] : static_cast<double>(machine.compute.clock.hz));
        const std::uint64_t hbm_before = hbm->bytes();
        const SlotTime slots_before = slot_time();
        KernelTiming t = hardware ? tdm->execute_next() : routing ? router->route(k) : dispatcher.launch(k);
        t.clock_hz = dispatcher.clock_hz();
        t.work_end = t.end;
        t.slots = slot_time();
        t.slots -= slots_before;
        t.slots_per_cu = cus.empty() ? 0 : static_cast<std::uint32_t>(cus.front()->slots());
        // (A stage without workgroups, the TDM unit's routing, leaves the
        // CUs' slots as the last kernel set them: no limiter of its own.)
        if (t.workgroups > 0 && !cus.empty()) t.occupancy_limiter = cus.front()->occupancy_limiter();
        // A kernel is complete when its writes are in memory: the L2s write
        // their dirty lines back (AMD does so between kernels, hardware.md
        // 2.1; without it a copy smaller than L2 would "beat" the HBM peak,
        // which no measurement shows).
        const Tick now = sc_core::sc_time_stamp().value();
        Tick done = now;
        for (auto* l2 : l2s) done = std::max(done, l2->flush(now));
        // The command processor's fixed work at the kernel's boundaries (its
        // cache acquire and release, the completion signal), which a
        // profiler's kernel duration holds: host launches only (the TDM unit
        // starts its stages itself, its routing stage among them).
        if (!hardware && !routing) {
          t.boundary = ticks(machine.launch.kernel_boundary);
          done += t.boundary;
        }
        wait(to_sc_time(done - now));
        t.end = std::max(t.end, done);
        t.hbm_bytes = static_cast<double>(hbm->bytes() - hbm_before);
        if (hardware) tdm->finished(t.end);
        timings.push_back(t);
      }
      // Nothing left to do: sc_start() returns by starvation, and a later
      // run() continues the same simulation where it stopped.
    }
  }
  // Every CU's slot time by cause so far.
  SlotTime slot_time() const {
    SlotTime sum;
    for (const auto* cu : cus) sum += cu->slot_time();
    return sum;
  }
};

// One die (XCD): its CUs (each with its L1, where the machine has one), its
// L2 and its fabric link. A CU reaches memory through its port: the `mem`
// socket, bound to the first level below it, and the channel time of the
// level that looks up its K-grouped loads (the L2: the L1 passes those on).
struct Die : sc_core::sc_module {
  std::unique_ptr<Fabric> fabric;
  std::unique_ptr<L2Cache> l2;
  std::vector<std::unique_ptr<L1Cache>> l1s;
  std::vector<std::unique_ptr<ComputeUnit>> cus;

  Die(sc_core::sc_module_name n, const MachineSpec& m, std::uint32_t index, Tick miss_latency,
      Dispatcher& dispatcher, CuScheduler& scheduler, const SimOptions& options, StatRegistry& stats,
      TraceWriter* trace, const SimClock& time)
      : sc_module(n) {
    fabric = std::make_unique<Fabric>("fabric", m.memory.fabric, m.compute.dies, stats, time);
    l2 = std::make_unique<L2Cache>("l2", m.memory.l2, m.compute.clock, miss_latency,
                                   m.memory.mall ? ticks(m.memory.fabric.latency) + ticks(m.memory.mall->hit_latency) : 0,
                                   stats, time);
    l2->connect(*fabric);  // (called directly: L2Cache::connect)
    const std::uint32_t pid = trace != nullptr ? trace->process(name()) : 0;
    for (std::uint32_t c = 0; c < m.compute.cus_per_die; ++c) {
      const std::string cu = "cu[" + std::to_string(c) + "]";
      cus.push_back(std::make_unique<ComputeUnit>(cu.c_str(), m, index, c, dispatcher,
                                                  options.quantum, stats, trace, pid, time));
      if (m.compute.l1_per_cu.bytes > 0) {
        const std::string l1 = "l1[" + std::to_string(c) + "]";
        l1s.push_back(std::make_unique<L1Cache>(l1.c_str(), m.compute, stats, time));
        cus.back()->mem.bind(l1s.back()->target);
        l1s.back()->connect(*l2);
      } else {
        cus.back()->mem.bind(l2->target);
      }
      cus.back()->set_scheduler(&scheduler);
    }
  }
};

// The links between the IODs of `m`'s memory pool, named "<prefix>[first..]"
// in `stats`; null where the machine states no IODs (memory.fabric.iods) or
// the pool lies on one IOD (nothing crosses).
inline std::unique_ptr<IodLinks> iod_links(const MachineSpec& m, StatRegistry& stats, const std::string& prefix,
                                           std::uint32_t first = 0) {
  const auto& iods = m.memory.fabric.iods;
  if (!iods || iods->count < 2) return nullptr;
  return std::make_unique<IodLinks>(iods->count, iods->link_bandwidth, stats, prefix, first);
}

// The IOD (in its pool) of the die `d`-th in the pool's dies of `m`.
inline std::uint32_t iod_of(const MachineSpec& m, std::uint32_t d) {
  const auto& iods = *m.memory.fabric.iods;
  const std::uint32_t per = iods.dies_per_iod != 0 ? iods.dies_per_iod : m.compute.dies / iods.count;
  return d / std::max(1u, per);
}

}  // namespace gpu_parts

// Hands `kernels` (kept by reference) to `host` for the next sc_start, each
// at its clock in `clocks` (empty: compute.clock).
void start_host(gpu_parts::Host& host, const std::vector<isa::KernelLaunch>& kernels, std::vector<double> clocks);
// Runs the SystemC simulation until everything submitted is done (or
// `time_limit` ticks from now, 0: none).
void simulate(Tick time_limit);
// The host's timings once its stream is done; throws SimulationStalled
// (naming the kernel) if it is not (`time`: the GPU's clock, `limit`: the
// run's time limit, for the message).
std::vector<KernelTiming> finish_host(gpu_parts::Host& host, const SimClock& time, Tick limit);
// The clock governor's choice for each of `kernels` on `m` from their probe
// run at the peak clock (sim/platform/power.h).
std::vector<double> governor_clocks(const MachineSpec& m, const std::vector<isa::KernelLaunch>& kernels,
                                    const std::vector<KernelTiming>& probed);

}  // namespace tdmsim::sim
