// One partitioned MI300-class GPU running a kernel stream per compute
// partition at the same time (tenants, docs/partitions.md "Tenants"): one
// elaborated GPU with, per memory pool, one global time (SimClock) and one
// CU scheduler (which, with several streams on the pool, keeps their kernel
// boundaries in SystemC's time: CuScheduler::set_streams_share), and per
// partition a dispatcher, a host (its stream), the TDM MoE unit where the
// machine has one, and its dies (XCDs) of CUs with their L2s and fabric
// links. Every die reaches its memory pool: with nps1 the one HBM and MALL of
// the whole GPU (shared by all partitions), with nps4 the quarter below it
// (shared by the partitions above that quarter). Each part is built from the
// machine one partition is (partition_machine), so a partition running
// alone times exactly as that machine does (the test
// tests/sim/test_partitioned_gpu.cpp).
//
// Names: gpu.partition[1].xcd[4].cu[17] (dies keep their index on the
// package), gpu.hbm and gpu.mall (nps4: gpu.hbm[2], gpu.mall[2]). Build at
// most one PartitionedGpu (and no Gpu) per process: the names are a Gpu's.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "isa/tile_program.h"
#include "sim/core/stats.h"
#include "sim/core/trace.h"
#include "sim/platform/dispatcher.h"
#include "sim/platform/gpu.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

struct PartitionedModule;  // the SystemC module tree (partitioned_gpu.cpp)

// One tenant's stream: the compute partition it runs on and its kernels.
struct TenantStream {
  std::uint32_t partition = 0;
  const std::vector<isa::KernelLaunch>* kernels = nullptr;  // kept by reference during run()
};

class PartitionedGpu {
 public:
  // `whole`: the whole machine with its partition: section (not yet applied).
  // Build before the first sc_start, as a Gpu.
  explicit PartitionedGpu(const MachineSpec& whole, const SimOptions& options = {});
  ~PartitionedGpu();
  PartitionedGpu(const PartitionedGpu&) = delete;
  PartitionedGpu& operator=(const PartitionedGpu&) = delete;

  // Runs every stream at once from the same instant (at most one per
  // partition) and returns each one's timings, in the order given. With a
  // machine `power:` section each stream's clocks come from a probe run of
  // all streams together at the peak clock, each kernel's from its own
  // activity on its partition's machine (its HBM bytes those of the pool it
  // reads during its window: every tenant's on that pool). `time_limit` as
  // Gpu::run (the run's, for all streams). Throws NotSimulatable for a kernel
  // that does not fit on a CU, std::invalid_argument for a bad partition.
  std::vector<std::vector<KernelTiming>> run(const std::vector<TenantStream>& streams, Tick time_limit = 0);

  // The machine each partition is.
  const MachineSpec& partition_machine() const { return part_; }
  std::uint32_t partitions() const { return partitions_; }
  // The memory pool partition `p` reads (0 with nps1).
  std::uint32_t pool_of(std::uint32_t p) const;
  StatRegistry& stats() { return stats_; }
  TraceWriter* trace() { return trace_.get(); }

 private:
  MachineSpec whole_;
  MachineSpec part_;
  std::uint32_t partitions_ = 1;
  SimOptions options_;
  StatRegistry stats_;
  std::unique_ptr<TraceWriter> trace_;
  std::unique_ptr<PartitionedModule> top_;
  std::unique_ptr<StatRegistry> probe_stats_;
  std::unique_ptr<PartitionedModule> probe_;
};

}  // namespace tdmsim::sim
