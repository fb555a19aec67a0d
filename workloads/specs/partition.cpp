#include "workloads/specs/partition.h"

#include <algorithm>
#include <string>

#include "workloads/config/reader.h"

namespace tdmsim {

std::uint32_t compute_partitions(ComputePartition c) {
  switch (c) {
    case ComputePartition::spx: return 1;
    case ComputePartition::dpx: return 2;
    case ComputePartition::qpx: return 4;
    case ComputePartition::cpx: return 8;
  }
  return 1;
}

std::uint32_t memory_partitions(MemoryPartition m) { return m == MemoryPartition::nps4 ? 4 : 1; }

MachineSpec partition_machine(const MachineSpec& m) {
  if (!m.partition || m.partition->applied) return m;
  MachineSpec out = m;
  out.partition->applied = true;
  const std::uint32_t p = compute_partitions(m.partition->compute);
  out.compute.dies = m.compute.dies / p;
  // The fabric's bandwidth is the package's, a share per die: the partition's dies keep theirs.
  out.memory.fabric.bandwidth.bytes_per_s /= p;
  const std::uint32_t q = memory_partitions(m.partition->memory);
  if (auto& iods = out.memory.fabric.iods) {
    // The partition's dies keep their IODs' share of the package's dies; its
    // memory pool spans the package's IODs (nps1) or those of its quarter
    // (nps4: one IOD, or part of one, on MI300X and MI355X: nothing crosses,
    // and the section goes).
    iods->dies_per_iod = m.compute.dies / iods->count;
    iods->count = iods->count / q;
    if (iods->count < 2) iods.reset();
  }
  if (q > 1) {
    auto& hbm = out.memory.hbm;
    hbm.stacks /= q;
    hbm.bandwidth.bytes_per_s /= q;
    hbm.capacity.bytes /= q;
    if (out.memory.mall) {
      out.memory.mall->size.bytes /= q;
      out.memory.mall->bandwidth.bytes_per_s /= q;
    }
  }
  return out;
}

std::uint64_t partition_memory_share(const MachineSpec& m) {
  if (!m.partition) return m.memory.hbm.capacity.bytes;
  const std::uint32_t q = memory_partitions(m.partition->memory);
  const std::uint32_t per_pool = std::max(1u, compute_partitions(m.partition->compute) / q);
  constexpr std::uint64_t kAlign = 2ull << 20;
  return m.memory.hbm.capacity.bytes / q / per_pool / kAlign * kAlign;
}

std::uint64_t partition_memory_base(const MachineSpec& m, std::uint32_t partition) {
  constexpr std::uint64_t kFirst = 1ull << 32;
  if (!m.partition) return kFirst;
  const std::uint32_t q = memory_partitions(m.partition->memory);
  const std::uint32_t per_pool = std::max(1u, compute_partitions(m.partition->compute) / q);
  return kFirst + std::uint64_t{partition % per_pool} * partition_memory_share(m);
}

void check_partition(const MachineSpec& m, config::Checker& c) {
  if (!m.partition) return;
  const std::uint32_t p = compute_partitions(m.partition->compute);
  const std::uint32_t q = memory_partitions(m.partition->memory);
  const std::string compute(config::enum_name(m.partition->compute));
  if (m.compute.dies % p != 0) {
    c.fail("partition.compute", compute + " makes " + std::to_string(p) + " partitions, and compute.dies (" +
                                    std::to_string(m.compute.dies) + ") do not split evenly over them",
           {"compute.dies"});
  }
  if (q > 1) {
    if (m.memory.hbm.stacks % q != 0) {
      c.fail("partition.memory", "nps4 needs the HBM stacks in four equal quarters; memory.hbm.stacks is " +
                                     std::to_string(m.memory.hbm.stacks),
             {"memory.hbm.stacks"});
    }
    // A partition's memory is the quarter below it: a partition may not span quarters.
    if (p < q) {
      c.fail("partition.memory", "nps4 keeps each quarter of the memory local to the dies above it; a " + compute +
                                     " partition spans " + std::to_string(q / p) +
                                     " quarters (use qpx or cpx with nps4)",
             {"partition.compute"});
    }
    if (m.memory.mall && (m.memory.mall->size.bytes % q != 0)) {
      c.fail("partition.memory", "memory.mall.size does not split into four quarters", {"memory.mall.size"});
    }
  }
}

}  // namespace tdmsim
