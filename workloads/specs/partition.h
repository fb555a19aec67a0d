// The machine one partition of a partitioned MI300-class GPU is (the machine
// `partition:` section, docs/partitions.md). A workload on such a machine runs
// on compute partition 0: dies / partitions of the dies, each with its L2 and
// its share of the fabric as before (memory.fabric.bandwidth, the package's,
// is divided with the dies); with nps1 its memory is interleaved over every
// HBM stack (and the whole MALL), with nps4 over its own quarter of the
// stacks, with a quarter of the HBM bandwidth, capacity and MALL.
#pragma once

#include <cstdint>

#include "workloads/specs/machine_spec.h"

namespace tdmsim {

// Logical GPUs of a compute partition mode: spx 1, dpx 2, qpx 4, cpx 8
// (AMD SMI's num_partitions on MI300X).
std::uint32_t compute_partitions(ComputePartition c);
// Memory pools of a memory partition mode: nps1 1, nps4 4.
std::uint32_t memory_partitions(MemoryPartition m);

// `m` as one of its partitions sees it (unchanged without a partition:
// section, or when already applied: partition.applied).
MachineSpec partition_machine(const MachineSpec& m);

// The device memory each compute partition of `m` owns (a tenant's buffers,
// docs/partitions.md "Tenants"): its memory pool's capacity (the whole HBM
// with nps1, a quarter with nps4) split evenly over the partitions above the
// pool, 2 MiB-aligned; partition p's starts at partition_memory_base. The
// first partition of a pool starts at 4 GiB, where a whole-GPU run's buffers
// start (sim/mem/address_space.h).
std::uint64_t partition_memory_share(const MachineSpec& m);
std::uint64_t partition_memory_base(const MachineSpec& m, std::uint32_t partition);

// The partition: section's cross-field checks (from check(MachineSpec)).
void check_partition(const MachineSpec& m, config::Checker& c);

}  // namespace tdmsim
