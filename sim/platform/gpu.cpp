#include "sim/platform/gpu.h"

#include <stdexcept>

#include <fmt/core.h>

#include "sim/core/sim_error.h"

#include "sim/cu/compute_unit.h"
#include "sim/mem/fabric.h"
#include "sim/mem/hbm.h"
#include "sim/mem/l1_cache.h"
#include "sim/mem/l2_cache.h"
#include "sim/mem/mall.h"
#include "sim/platform/power.h"
#include "sim/platform/tdm_router.h"
#include "sim/platform/tdm_scheduler.h"

namespace tdmsim::sim {

std::string die_kind(const MachineSpec& m) {
  return m.vendor == Vendor::amd && m.compute.dies > 1 ? "xcd" : "die";
}

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
        // starts its stages itself).
        if (!hardware) done += ticks(machine.launch.kernel_boundary);
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
    l2->initiator.bind(fabric->target);
    const std::uint32_t pid = trace != nullptr ? trace->process(name()) : 0;
    for (std::uint32_t c = 0; c < m.compute.cus_per_die; ++c) {
      const std::string cu = "cu[" + std::to_string(c) + "]";
      cus.push_back(std::make_unique<ComputeUnit>(cu.c_str(), m, index, c, dispatcher,
                                                  options.quantum, stats, trace, pid, time));
      if (m.compute.l1_per_cu.bytes > 0) {
        const std::string l1 = "l1[" + std::to_string(c) + "]";
        l1s.push_back(std::make_unique<L1Cache>(l1.c_str(), m.compute, stats, time));
        cus.back()->mem.bind(l1s.back()->target);
        l1s.back()->initiator.bind(l2->target);
      } else {
        cus.back()->mem.bind(l2->target);
      }
      cus.back()->set_deferred_channels(l2->deferred_channels());
      cus.back()->set_scheduler(&scheduler);
    }
  }
};

}  // namespace gpu_parts

using gpu_parts::Die;
using gpu_parts::Host;

struct GpuModule : sc_core::sc_module {
  // This GPU's global time (its blocks keep a reference: declared first).
  SimClock time;
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<CuScheduler> cu_scheduler;
  std::unique_ptr<Hbm> hbm;
  std::unique_ptr<Mall> mall;
  std::vector<std::unique_ptr<Die>> dies;
  std::unique_ptr<TdmScheduler> tdm;
  std::unique_ptr<TdmRouter> router;
  std::unique_ptr<Host> host;

  GpuModule(sc_core::sc_module_name n, const MachineSpec& m, const SimOptions& options,
            StatRegistry& stats, TraceWriter* trace)
      : sc_module(n) {
    dispatcher = std::make_unique<Dispatcher>("dispatcher", ticks(m.launch.kernel_launch),
                                              ticks(m.launch.workgroup_dispatch), m.compute.dies,
                                              m.compute.cus_per_die, m.launch.workgroup_order, stats);
    if (options.progress) dispatcher->set_progress(options.progress);
    cu_scheduler = std::make_unique<CuScheduler>("cu_scheduler", time);
    hbm = std::make_unique<Hbm>("hbm", m.memory.hbm, stats, time);
    if (m.memory.mall) {
      mall = std::make_unique<Mall>("mall", *m.memory.mall, hbm->map(), m.memory.hbm.stacks, stats,
                                    time);
      mall->initiator.bind(hbm->target);
    }
    const Tick miss_latency = ticks(m.memory.fabric.latency) + ticks(m.memory.hbm.latency);
    const std::string kind = die_kind(m);
    for (std::uint32_t d = 0; d < m.compute.dies; ++d) {
      const std::string die = kind + "[" + std::to_string(d) + "]";
      dies.push_back(std::make_unique<Die>(die.c_str(), m, d, miss_latency, *dispatcher,
                                           *cu_scheduler, options, stats, trace, time));
      if (mall) dies.back()->fabric->initiator.bind(mall->target);
      else dies.back()->fabric->initiator.bind(hbm->target);
    }
    host = std::make_unique<Host>("host", *dispatcher, m);
    host->hbm = hbm.get();
    for (auto& d : dies) host->l2s.push_back(d->l2.get());
    for (auto& d : dies) {
      for (auto& l1 : d->l1s) host->l1s.push_back(l1.get());
    }
    for (auto& d : dies) {
      for (auto& cu : d->cus) host->cus.push_back(cu.get());
    }
    if (m.tdm) {
      // The unit sits beside the command processor and reads descriptors
      // from the memory side.
      tdm = std::make_unique<TdmScheduler>("tdm", m, *dispatcher, stats, trace);
      if (mall) tdm->mem.bind(mall->target);
      else tdm->mem.bind(hbm->target);
      host->tdm = tdm.get();
      router = std::make_unique<TdmRouter>("tdm_router", *m.tdm, *dispatcher, stats, trace);
      if (mall) router->mem.bind(mall->target);
      else router->mem.bind(hbm->target);
      host->router = router.get();
    }
  }
};

Gpu::Gpu(const MachineSpec& machine, const SimOptions& options)
    : machine_(machine), options_(options) {
  if (options_.trace) trace_ = std::make_unique<TraceWriter>();
  top_ = std::make_unique<GpuModule>("gpu", machine_, options_, stats_, trace_.get());
  if (trace_) top_->hbm->enable_trace(trace_.get(), kTicksPerUs);  // 1 us traffic buckets
  if (machine_.power) {
    // The governor's probe: the same GPU, run at the peak clock on the same
    // kernels first, so that its caches hold what the real run's hold when
    // each kernel starts. Its stats are its own (not in stats.json).
    probe_stats_ = std::make_unique<StatRegistry>();
    probe_ = std::make_unique<GpuModule>("governor_probe", machine_, SimOptions{options_.quantum, false, {}},
                                         *probe_stats_, nullptr);
  }
}

Gpu::~Gpu() = default;

const Hbm& Gpu::hbm() const { return *top_->hbm; }

std::string fit_problem(const ComputeSpec& cu, const isa::TileProgram& p) {
  if (p.threads > cu.max_workgroup_threads) {
    return fmt::format("has {} threads per workgroup, compute.max_workgroup_threads is {}", p.threads,
                       cu.max_workgroup_threads);
  }
  const Occupancy occ = occupancy(cu, p);
  if (occ.workgroups > 0) return {};
  if (occ.limiter == "lds") {
    return fmt::format("needs {} of LDS per workgroup, compute.lds_per_cu is {}",
                       units::format(units::Bytes{p.lds_bytes}), units::format(cu.lds_per_cu));
  }
  if (occ.limiter == "registers") {
    return fmt::format("needs {} of vector registers per workgroup ({} threads x {} x 4 B), "
                       "compute.vgpr_file_per_cu is {}",
                       units::format(units::Bytes{std::uint64_t{p.threads} * p.vgprs_per_thread * 4}),
                       p.threads, p.vgprs_per_thread, units::format(cu.vgpr_file_per_cu));
  }
  return fmt::format("needs {} waves of {} threads, a CU holds simds_per_cu x wave_slots_per_simd = {}",
                     (p.threads + cu.wave_size - 1) / cu.wave_size, cu.wave_size,
                     cu.simds_per_cu * cu.wave_slots_per_simd);
}

Tick stall_limit(const MachineSpec& m, double floor_s, const std::vector<isa::KernelLaunch>& kernels) {
  double fixed_ps = 0;
  for (const auto& k : kernels) {
    fixed_ps += static_cast<double>(ticks(m.launch.kernel_launch)) +
                static_cast<double>(ticks(m.launch.kernel_boundary)) +
                static_cast<double>(ticks(m.launch.workgroup_dispatch)) * k.workgroups;
    if (m.tdm) {
      fixed_ps += static_cast<double>(ticks(m.tdm->descriptor_fetch_latency) + ticks(m.tdm->decode_latency)) +
                  static_cast<double>(ticks(m.tdm->slot_length)) * m.tdm->slots +
                  static_cast<double>(ticks(m.tdm->dispatch_latency)) * k.workgroups;
    }
    if (k.routing && m.tdm) {  // the unit's routing stage, at the slowest clock the model uses (1 MHz)
      fixed_ps += static_cast<double>(ticks(m.tdm->routing_latency)) +
                  static_cast<double>(k.routing->items) / std::max(1u, m.tdm->routing_scores_per_clock) * 1e6;
    }
  }
  const double limit = kStallFactor * (floor_s * 1e12 + fixed_ps) + 1e9;  // + 1 ms
  // Ticks are 64-bit picoseconds (213 days): kept well inside them.
  return static_cast<Tick>(std::min(limit, 1e19));
}

namespace {

// Runs the SystemC simulation until everything submitted is done (or the
// time limit, 0: none, is reached).
void simulate(Tick time_limit) {
  if (time_limit == 0) {
    sc_core::sc_start();
  } else {
    // Starvation still ends the run at once (SystemC's time is not moved on
    // to the limit, so a later run continues where this one stopped).
    sc_core::sc_start(to_sc_time(time_limit), sc_core::SC_EXIT_ON_STARVATION);
  }
}

void start(GpuModule& g, const std::vector<isa::KernelLaunch>& kernels, Tick time_limit,
           std::vector<double> clocks) {
  const Tick now = sc_core::sc_time_stamp().value();
  g.time.set_deadline(time_limit == 0 ? SimClock::kNever : now + time_limit);
  g.host->kernels = &kernels;
  g.host->clocks = std::move(clocks);
  g.host->timings.clear();
  g.host->pending = true;
  g.host->go.notify(sc_core::SC_ZERO_TIME);
}

std::vector<KernelTiming> finish(GpuModule& g, Tick limit) {
  if (g.host->kernels == nullptr || g.host->timings.size() != g.host->kernels->size()) {
    const std::size_t done = g.host->timings.size();
    const std::size_t total = g.host->kernels != nullptr ? g.host->kernels->size() : 0;
    const std::string kernel = done < total ? (*g.host->kernels)[done].name : std::string("?");
    const Tick now = std::max<Tick>(sc_core::sc_time_stamp().value(), g.time.now());
    if (g.time.stalled() || (g.time.deadline() != SimClock::kNever && now >= g.time.deadline())) {
      throw SimulationStalled(fmt::format(
          "the simulation stalled: kernel {} ({} of {} kernels done) had not finished at the run's "
          "time limit, {:.3f} us of simulated time (a generous multiple of the work's roofline); "
          "the machine's parameters make it absurdly slow, or the model is stuck: please report it",
          kernel, done, total, static_cast<double>(limit) * 1e-6));
    }
    throw SimulationStalled(fmt::format(
        "the simulation stalled: nothing left to happen with kernel {} unfinished ({} of {} kernels "
        "done; a deadlock in the model): please report it", kernel, done, total));
  }
  g.time.set_deadline(SimClock::kNever);
  g.host->kernels = nullptr;
  return g.host->timings;
}

}  // namespace

std::vector<KernelTiming> Gpu::run(const std::vector<isa::KernelLaunch>& kernels, Tick time_limit) {
  submit(kernels, time_limit);
  simulate(time_limit);
  return collect();
}

void Gpu::submit(const std::vector<isa::KernelLaunch>& kernels, Tick time_limit) {
  // Resources are uniform over a grid (ComputeUnit::begin_kernel): checked
  // here, outside SystemC, so the error keeps its type and says what to change.
  for (const auto& k : kernels) {
    if (k.workgroups == 0) continue;
    if (const std::string why = fit_problem(machine_.compute, k.program(0)); !why.empty()) {
      throw NotSimulatable(fmt::format("kernel {} does not fit on a CU of machine {}: it {}", k.name,
                                       machine_.name, why));
    }
  }
  limit_ = time_limit;
  std::vector<double> clocks;
  if (probe_) {
    // The governor (sim/platform/power.h): each kernel's activity at the
    // peak clock, from the probe, then the clock that activity settles at.
    start(*probe_, kernels, time_limit, {});
    simulate(time_limit);
    const std::vector<KernelTiming> probed = finish(*probe_, time_limit);
    clocks.reserve(kernels.size());
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const KernelTiming& t = probed[i];
      const KernelActivity a =
          measured_activity(machine_, kernels[i], static_cast<double>(t.end - t.launch) * 1e-12, t.hbm_bytes, t.clock_hz);
      clocks.push_back(settle_clock_hz(machine_, a));
    }
  }
  start(*top_, kernels, time_limit, std::move(clocks));
}

std::vector<KernelTiming> Gpu::collect() {
  top_->hbm->emit_trace();
  return finish(*top_, limit_);
}

}  // namespace tdmsim::sim
