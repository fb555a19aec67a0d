#include "sim/platform/partitioned_gpu.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

#include <fmt/core.h>

#include "sim/core/sim_error.h"
#include "sim/mem/mall.h"
#include "sim/platform/gpu_parts.h"
#include "sim/platform/tdm_router.h"
#include "workloads/specs/partition.h"

namespace tdmsim::sim {

using gpu_parts::Die;
using gpu_parts::Host;

namespace partitioned_parts {

// One compute partition: its dispatcher, dies, TDM unit (where the machine
// has one) and host, reaching memory through `mem` (its pool's MALL, else
// its HBM) and, where the pool spans several IODs, `links` between them (its
// dies the pool's from `first_die` on).
struct Partition : sc_core::sc_module {
  std::unique_ptr<Dispatcher> dispatcher;
  std::vector<std::unique_ptr<Die>> dies;
  std::unique_ptr<TdmScheduler> tdm;
  std::unique_ptr<TdmRouter> router;
  std::unique_ptr<Host> host;

  template <class MemTarget>
  Partition(sc_core::sc_module_name n, const MachineSpec& m, std::uint32_t index, const std::string& kind,
            CuScheduler& scheduler, const Hbm& hbm, MemTarget& mem, IodLinks* links, std::uint32_t first_die,
            const SimOptions& options, StatRegistry& stats, TraceWriter* trace, const SimClock& time)
      : sc_module(n) {
    dispatcher = std::make_unique<Dispatcher>("dispatcher", ticks(m.launch.kernel_launch),
                                              ticks(m.launch.workgroup_dispatch), m.compute.dies,
                                              m.compute.cus_per_die, effective_workgroup_order(m), stats);
    if (options.progress) dispatcher->set_progress(options.progress);
    const Tick miss_latency = ticks(m.memory.fabric.latency) + ticks(m.memory.hbm.latency);
    for (std::uint32_t d = 0; d < m.compute.dies; ++d) {
      // Named by its index on the package; the dispatcher knows it by its index in the partition.
      const std::string die = kind + "[" + std::to_string(index * m.compute.dies + d) + "]";
      dies.push_back(std::make_unique<Die>(die.c_str(), m, d, miss_latency, *dispatcher, scheduler, options,
                                           stats, trace, time));
      dies.back()->fabric->connect(mem);  // (called directly: Fabric::connect)
      if (links != nullptr) dies.back()->fabric->attach(*links, gpu_parts::iod_of(m, first_die + d));
    }
    host = std::make_unique<Host>("host", *dispatcher, m);
    host->hbm = &hbm;
    for (auto& d : dies) {
      host->l2s.push_back(d->l2.get());
      for (auto& l1 : d->l1s) host->l1s.push_back(l1.get());
      for (auto& cu : d->cus) host->cus.push_back(cu.get());
    }
    if (m.tdm) {
      tdm = std::make_unique<TdmScheduler>("tdm", m, *dispatcher, stats, trace);
      tdm->mem.bind(mem.target);
      host->tdm = tdm.get();
      router = std::make_unique<TdmRouter>("tdm_router", *m.tdm, *dispatcher, stats, trace);
      router->mem.bind(mem.target);
      host->router = router.get();
    }
  }
};

}  // namespace partitioned_parts

using partitioned_parts::Partition;

struct PartitionedModule : sc_core::sc_module {
  // Per memory pool its global time and CU scheduler (declared first: the
  // blocks keep references): partitions that share no memory share nothing
  // that times them, as separate GPUs in one simulation.
  std::vector<std::unique_ptr<SimClock>> times;
  std::vector<std::unique_ptr<CuScheduler>> cu_schedulers;
  std::vector<std::unique_ptr<Hbm>> hbms;
  std::vector<std::unique_ptr<Mall>> malls;
  std::vector<std::unique_ptr<IodLinks>> iod_links;  // per pool; null: the pool lies on one IOD
  std::vector<std::unique_ptr<Partition>> parts;

  // `m`: one partition's machine; `pools` memory pools, `partitions` compute partitions.
  PartitionedModule(sc_core::sc_module_name n, const MachineSpec& m, const std::string& kind,
                    std::uint32_t partitions, std::uint32_t pools, const SimOptions& options, StatRegistry& stats,
                    TraceWriter* trace)
      : sc_module(n) {
    for (std::uint32_t q = 0; q < pools; ++q) {
      const std::string suffix = pools > 1 ? "[" + std::to_string(q) + "]" : "";
      times.push_back(std::make_unique<SimClock>());
      SimClock& time = *times.back();
      cu_schedulers.push_back(std::make_unique<CuScheduler>(("cu_scheduler" + suffix).c_str(), time));
      hbms.push_back(std::make_unique<Hbm>(("hbm" + suffix).c_str(), m.memory.hbm, stats, time));
      if (m.memory.mall) {
        malls.push_back(std::make_unique<Mall>(("mall" + suffix).c_str(), *m.memory.mall, hbms.back()->map(),
                                               m.memory.hbm.stacks, stats, time));
        malls.back()->connect(*hbms.back());
      }
      const std::uint32_t pool_iods = m.memory.fabric.iods ? m.memory.fabric.iods->count : 0;
      iod_links.push_back(gpu_parts::iod_links(m, stats, std::string(name()) + ".iod", q * pool_iods));
    }
    for (std::uint32_t p = 0; p < partitions; ++p) {
      const std::uint32_t q = p * pools / partitions;
      const std::string name = "partition[" + std::to_string(p) + "]";
      // Its dies' place among its pool's (the partitions above a pool in order).
      const std::uint32_t first_die = (p - q * partitions / pools) * m.compute.dies;
      if (m.memory.mall) {
        parts.push_back(std::make_unique<Partition>(name.c_str(), m, p, kind, *cu_schedulers[q], *hbms[q],
                                                    *malls[q], iod_links[q].get(), first_die, options, stats, trace,
                                                    *times[q]));
      } else {
        parts.push_back(std::make_unique<Partition>(name.c_str(), m, p, kind, *cu_schedulers[q], *hbms[q],
                                                    *hbms[q], iod_links[q].get(), first_die, options, stats, trace,
                                                    *times[q]));
      }
    }
  }
};

PartitionedGpu::PartitionedGpu(const MachineSpec& whole, const SimOptions& options)
    : whole_(whole), part_(tdmsim::partition_machine(whole)), options_(options) {
  if (!whole_.partition || whole_.partition->applied) {
    throw std::invalid_argument("PartitionedGpu: machine " + whole_.name +
                                " needs a partition: section, not yet applied");
  }
  partitions_ = compute_partitions(whole_.partition->compute);
  const std::uint32_t pools = memory_partitions(whole_.partition->memory);
  if (options_.trace) trace_ = std::make_unique<TraceWriter>();
  const std::string kind = die_kind(whole_);
  top_ = std::make_unique<PartitionedModule>("gpu", part_, kind, partitions_, pools, options_, stats_, trace_.get());
  if (trace_) {
    for (auto& h : top_->hbms) h->enable_trace(trace_.get(), kTicksPerUs);
  }
  if (part_.power) {
    // The governor's probe, as Gpu's: the same partitioned GPU at the peak clock.
    probe_stats_ = std::make_unique<StatRegistry>();
    probe_ = std::make_unique<PartitionedModule>("governor_probe", part_, kind, partitions_, pools,
                                                 SimOptions{options_.quantum, false, {}}, *probe_stats_, nullptr);
  }
}

PartitionedGpu::~PartitionedGpu() = default;

std::uint32_t PartitionedGpu::pool_of(std::uint32_t p) const {
  return p * memory_partitions(whole_.partition->memory) / partitions_;
}

namespace {

// Starts every stream on `g` (clocks per stream, or none), runs them all and
// returns their timings.
std::vector<std::vector<KernelTiming>> run_all(PartitionedModule& g, const std::vector<TenantStream>& streams,
                                               const std::vector<std::vector<double>>& clocks, Tick limit,
                                               const std::vector<std::uint32_t>& pool) {
  const Tick now = sc_core::sc_time_stamp().value();
  for (auto& t : g.times) t->set_deadline(limit == 0 ? SimClock::kNever : now + limit);
  // A pool with one stream runs it as a whole Gpu does; several keep their
  // kernel boundaries in step.
  for (std::size_t q = 0; q < g.cu_schedulers.size(); ++q) {
    g.cu_schedulers[q]->set_streams_share(std::count(pool.begin(), pool.end(), q) > 1);
  }
  for (std::size_t i = 0; i < streams.size(); ++i) {
    start_host(*g.parts[streams[i].partition]->host, *streams[i].kernels,
               i < clocks.size() ? clocks[i] : std::vector<double>{});
  }
  simulate(limit);
  for (auto& h : g.hbms) h->emit_trace();
  std::vector<std::vector<KernelTiming>> out;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    out.push_back(finish_host(*g.parts[streams[i].partition]->host, *g.times[pool[i]], limit));
  }
  for (auto& t : g.times) t->set_deadline(SimClock::kNever);
  return out;
}

}  // namespace

std::vector<std::vector<KernelTiming>> PartitionedGpu::run(const std::vector<TenantStream>& streams,
                                                           Tick time_limit) {
  std::set<std::uint32_t> used;
  for (const auto& s : streams) {
    if (s.partition >= partitions_ || !used.insert(s.partition).second || s.kernels == nullptr) {
      throw std::invalid_argument(fmt::format("PartitionedGpu: partition {} is not a free partition of {} ({})",
                                              s.partition, partitions_, whole_.name));
    }
    for (const auto& k : *s.kernels) {
      if (k.workgroups == 0) continue;
      if (const std::string why = fit_problem(part_.compute, k.program(0)); !why.empty()) {
        throw NotSimulatable(fmt::format("kernel {} does not fit on a CU of machine {}: it {}", k.name,
                                         part_.name, why));
      }
    }
  }
  std::vector<std::uint32_t> pool;
  for (const auto& s : streams) pool.push_back(pool_of(s.partition));
  std::vector<std::vector<double>> clocks;
  if (probe_) {
    const auto probed = run_all(*probe_, streams, {}, time_limit, pool);
    for (std::size_t i = 0; i < streams.size(); ++i) {
      clocks.push_back(governor_clocks(part_, *streams[i].kernels, probed[i]));
    }
  }
  return run_all(*top_, streams, clocks, time_limit, pool);
}

}  // namespace tdmsim::sim
