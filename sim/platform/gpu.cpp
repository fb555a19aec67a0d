#include "sim/platform/gpu.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <variant>

#include <fmt/core.h>

#include "descriptors/format/descriptor_file.h"
#include "sim/core/sim_error.h"

#include "sim/cu/compute_unit.h"
#include "sim/mem/fabric.h"
#include "sim/mem/hbm.h"
#include "sim/mem/l1_cache.h"
#include "sim/mem/l2_cache.h"
#include "sim/mem/mall.h"
#include "sim/platform/gpu_parts.h"
#include "sim/platform/power.h"
#include "sim/platform/tdm_router.h"
#include "sim/platform/tdm_scheduler.h"

namespace tdmsim::sim {

std::string die_kind(const MachineSpec& m) {
  return m.vendor == Vendor::amd && m.compute.dies > 1 ? "xcd" : "die";
}


using gpu_parts::Die;
using gpu_parts::Host;

struct GpuModule : sc_core::sc_module {
  // This GPU's global time (its blocks keep a reference: declared first).
  SimClock time;
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<CuScheduler> cu_scheduler;
  std::unique_ptr<Hbm> hbm;
  std::unique_ptr<Mall> mall;
  std::unique_ptr<IodLinks> iod_links;  // null: no shared links between IODs
  std::vector<std::unique_ptr<Die>> dies;
  std::unique_ptr<TdmScheduler> tdm;
  std::unique_ptr<TdmRouter> router;
  std::unique_ptr<Host> host;

  GpuModule(sc_core::sc_module_name n, const MachineSpec& m, const SimOptions& options,
            StatRegistry& stats, TraceWriter* trace)
      : sc_module(n) {
    dispatcher = std::make_unique<Dispatcher>("dispatcher", ticks(m.launch.kernel_launch),
                                              ticks(m.launch.workgroup_dispatch), m.compute.dies,
                                              m.compute.cus_per_die, effective_workgroup_order(m), stats);
    if (options.progress) dispatcher->set_progress(options.progress);
    cu_scheduler = std::make_unique<CuScheduler>("cu_scheduler", time);
    hbm = std::make_unique<Hbm>("hbm", m.memory.hbm, stats, time);
    if (m.memory.mall) {
      mall = std::make_unique<Mall>("mall", *m.memory.mall, hbm->map(), m.memory.hbm.stacks, stats,
                                    time);
      mall->connect(*hbm);  // (called directly down the chain: Mall::connect, Fabric::connect)
    }
    iod_links = gpu_parts::iod_links(m, stats, std::string(name()) + ".iod");
    const Tick miss_latency = ticks(m.memory.fabric.latency) + ticks(m.memory.hbm.latency);
    const std::string kind = die_kind(m);
    for (std::uint32_t d = 0; d < m.compute.dies; ++d) {
      const std::string die = kind + "[" + std::to_string(d) + "]";
      dies.push_back(std::make_unique<Die>(die.c_str(), m, d, miss_latency, *dispatcher,
                                           *cu_scheduler, options, stats, trace, time));
      if (mall) dies.back()->fabric->connect(*mall);
      else dies.back()->fabric->connect(*hbm);
      if (iod_links) dies.back()->fabric->attach(*iod_links, gpu_parts::iod_of(m, d));
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

std::string fit_problem_key(const ComputeSpec& cu, const isa::TileProgram& p) {
  if (p.threads > cu.max_workgroup_threads) return "compute.max_workgroup_threads";
  const Occupancy occ = occupancy(cu, p);
  if (occ.workgroups > 0) return {};
  if (occ.limiter == "lds") return "compute.lds_per_cu";
  if (occ.limiter == "registers") return "compute.vgpr_file_per_cu";
  // (Not reached from a loaded machine: its check that max_workgroup_threads
  // fits simds_per_cu x wave_slots_per_simd x wave_size means a workgroup
  // short of the wave slots already failed the threads test above.)
  return "compute.wave_slots_per_simd";
}

double memory_path_slowdown(const MachineSpec& m) {
  const auto& mem = m.memory;
  const double hbm = static_cast<double>(mem.hbm.bandwidth.bytes_per_s);
  double slowest = std::min(hbm, static_cast<double>(mem.fabric.bandwidth.bytes_per_s));
  if (mem.fabric.iods) {
    slowest = std::min(slowest, static_cast<double>(mem.fabric.iods->link_bandwidth.bytes_per_s) *
                                    mem.fabric.iods->count);
  }
  if (mem.mall) slowest = std::min(slowest, static_cast<double>(mem.mall->bandwidth.bytes_per_s));
  const double l2 = static_cast<double>(mem.l2.bytes_per_clock_per_channel) * mem.l2.channels_per_die *
                    m.compute.dies * static_cast<double>(m.compute.clock.hz);
  slowest = std::min(slowest, l2);
  return slowest > 0 && slowest < hbm ? hbm / slowest : 1.0;
}

namespace {

// A bound on the time a descriptor's own slot records ask for (their lengths
// added up, and the longest once per machine wave), which a stream may set far
// beyond tdm.slot_length (docs/descriptor-format.md: any length of at least
// 1); 0 for a launch without one.
double descriptor_slots_ps(const MachineSpec& m, const isa::KernelLaunch& k) {
  if (!k.hardware || k.hardware->descriptor.empty()) return 0;
  const auto decoded = format::decode_any(k.hardware->descriptor);
  if (!decoded || !std::holds_alternative<format::MoeDescriptor>(decoded.value())) return 0;
  const auto& d = std::get<format::MoeDescriptor>(decoded.value());
  double ps = 0, longest = 0;
  for (const auto& slot : d.slots) {
    const double one = d.slot_unit == format::SlotUnit::ns
                           ? static_cast<double>(slot.length) * 1e3
                           : static_cast<double>(slot.length) * 1e12 / static_cast<double>(m.compute.clock.hz);
    ps += one;
    longest = std::max(longest, one);
  }
  // A machine wave opens after the longest slot of the previous one, and one
  // record's jobs may span several waves (TdmScheduler::place): the longest
  // once more for each wave the unit's slots allow, on top of the sum.
  const double waves = m.tdm ? std::min<double>(m.tdm->slots, static_cast<double>(d.slots.size())) : 0.0;
  return ps + longest * waves;
}

}  // namespace

double clock_slowdown(const MachineSpec& m) {
  if (!m.power) return 1.0;
  const PowerSpec& p = *m.power;
  // The most activity a kernel can have (every unit busy), and the clock the
  // power limit then settles to (sim/platform/power.cpp), at least 1 MHz.
  const double most = std::max(1.0, p.narrow_matrix_activity) + p.hbm_activity;
  const double lowest = std::max(1e6, static_cast<double>(p.sustained_clock.hz) * std::cbrt(p.reference_utilisation / most));
  return std::max(1.0, static_cast<double>(m.compute.clock.hz) / lowest);
}

Tick stall_limit(const MachineSpec& m, double floor_s, const std::vector<isa::KernelLaunch>& kernels) {
  double fixed_ps = 0;
  const double cus = std::max(1u, m.compute.total_cus());
  // A load that misses every cache, from the L1 to the farthest memory.
  const auto& mem = m.memory;
  const double miss_ps =
      static_cast<double>(ticks(m.compute.l1_hit_latency) + ticks(mem.l2.hit_latency) + ticks(mem.fabric.latency)) +
      std::max(static_cast<double>(ticks(mem.hbm.latency)), mem.mall ? static_cast<double>(ticks(mem.mall->hit_latency)) : 0.0);
  for (const auto& k : kernels) {
    fixed_ps += static_cast<double>(ticks(m.launch.kernel_launch)) +
                static_cast<double>(ticks(m.launch.kernel_boundary)) +
                static_cast<double>(ticks(m.launch.workgroup_dispatch)) * k.workgroups;
    if (k.workgroups > 0) {
      // That miss on every main-loop iteration of every round of workgroups,
      // as if nothing overlapped it.
      const double rounds = std::ceil(k.workgroups / cus);
      fixed_ps += miss_ps * (k.program(0).iterations() + 2.0) * rounds;
    }
    if (m.tdm) {
      fixed_ps += static_cast<double>(ticks(m.tdm->descriptor_fetch_latency) + ticks(m.tdm->decode_latency)) +
                  static_cast<double>(ticks(m.tdm->slot_length)) * m.tdm->slots +
                  static_cast<double>(ticks(m.tdm->dispatch_latency)) * k.workgroups +
                  descriptor_slots_ps(m, k);
    }
    if (k.routing && m.tdm) {  // the unit's routing stage, at the slowest clock the model uses (1 MHz)
      fixed_ps += static_cast<double>(ticks(m.tdm->routing_latency)) +
                  static_cast<double>(k.routing->items) / std::max(1u, m.tdm->routing_scores_per_clock) * 1e6;
    }
  }
  const double limit =
      kStallFactor * (floor_s * memory_path_slowdown(m) * clock_slowdown(m) * 1e12 + fixed_ps) + 1e9;  // + 1 ms
  // Ticks are 64-bit picoseconds (213 days): kept well inside them.
  return static_cast<Tick>(std::min(limit, 1e19));
}

void simulate(Tick time_limit) {
  if (time_limit == 0) {
    sc_core::sc_start();
  } else {
    // Starvation still ends the run at once (SystemC's time is not moved on
    // to the limit, so a later run continues where this one stopped).
    sc_core::sc_start(to_sc_time(time_limit), sc_core::SC_EXIT_ON_STARVATION);
  }
}

void start_host(Host& host, const std::vector<isa::KernelLaunch>& kernels, std::vector<double> clocks) {
  host.kernels = &kernels;
  host.clocks = std::move(clocks);
  host.timings.clear();
  host.pending = true;
  host.go.notify(sc_core::SC_ZERO_TIME);
}

std::vector<KernelTiming> finish_host(Host& host, const SimClock& time, Tick limit) {
  if (host.kernels == nullptr || host.timings.size() != host.kernels->size()) {
    const std::size_t done = host.timings.size();
    const std::size_t total = host.kernels != nullptr ? host.kernels->size() : 0;
    const std::string kernel = done < total ? (*host.kernels)[done].name : std::string("?");
    const Tick now = std::max<Tick>(sc_core::sc_time_stamp().value(), time.now());
    if (time.stalled() || (time.deadline() != SimClock::kNever && now >= time.deadline())) {
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
  host.kernels = nullptr;
  return host.timings;
}

std::vector<double> governor_clocks(const MachineSpec& m, const std::vector<isa::KernelLaunch>& kernels,
                                    const std::vector<KernelTiming>& probed) {
  std::vector<double> clocks;
  clocks.reserve(kernels.size());
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const KernelTiming& t = probed[i];
    const KernelActivity a =
        measured_activity(m, kernels[i], static_cast<double>(t.end - t.launch) * 1e-12, t.hbm_bytes, t.clock_hz);
    clocks.push_back(settle_clock_hz(m, a));
  }
  return clocks;
}

namespace {

void start(GpuModule& g, const std::vector<isa::KernelLaunch>& kernels, Tick time_limit,
           std::vector<double> clocks) {
  const Tick now = sc_core::sc_time_stamp().value();
  g.time.set_deadline(time_limit == 0 ? SimClock::kNever : now + time_limit);
  start_host(*g.host, kernels, std::move(clocks));
}

std::vector<KernelTiming> finish(GpuModule& g, Tick limit) {
  std::vector<KernelTiming> out = finish_host(*g.host, g.time, limit);
  g.time.set_deadline(SimClock::kNever);
  return out;
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
    clocks = governor_clocks(machine_, kernels, finish(*probe_, time_limit));
  }
  start(*top_, kernels, time_limit, std::move(clocks));
}

std::vector<KernelTiming> Gpu::collect() {
  top_->hbm->emit_trace();
  return finish(*top_, limit_);
}

}  // namespace tdmsim::sim
