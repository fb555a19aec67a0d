#include "workloads/specs/machine_spec.h"

#include "workloads/config/reader.h"
#include "workloads/specs/partition.h"

#include <algorithm>
#include <bit>

#include <fmt/core.h>

namespace tdmsim {
namespace {
void require_pow2(config::Checker& c, const std::string& key, units::Bytes b) {
  if (!std::has_single_bit(b.bytes)) {
    // In bytes: "1KB" (1000) reads like a power of two.
    c.fail(key, fmt::format("must be a power of two bytes, got {} bytes ({})", b.bytes, units::format(b)));
  }
}
}  // namespace

std::vector<InertKey> inert_keys(const MachineSpec& m) {
  std::vector<InertKey> out;
  if (m.compute.l1_per_cu.bytes == 0) {
    for (const char* key : {"compute.l1_ways", "compute.l1_line", "compute.l1_hit_latency", "compute.l1_bytes_per_clock"}) {
      out.push_back({key, "compute.l1_per_cu", "shapes the L1, and compute.l1_per_cu is 0 (no L1): it would change nothing",
                     "compute.l1_per_cu is above 0"});
    }
  }
  return out;
}

void check(const MachineSpec& m, config::Checker& c) {
  c.one_line("name", m.name);
  c.one_line("description", m.description);
  check_partition(m, c);
  // The isa picks the matrix tables and kernels; the vendor names the dies
  // (XCDs) and must be the isa's.
  if (const Vendor of_isa = m.isa == IsaFamily::hopper ? Vendor::nvidia : Vendor::amd; m.vendor != of_isa) {
    c.fail("vendor",
           fmt::format("isa {} is {}'s: vendor {}", config::enum_name(m.isa), config::enum_name(of_isa),
                       config::enum_name(m.vendor)),
           {"isa"});
  }
  if (const auto& iods = m.memory.fabric.iods; iods && iods->dies_per_iod == 0) {
    // The package's IODs (a partition's machine has its pool's: partition_machine).
    if (m.compute.dies % iods->count != 0) {
      c.fail("memory.fabric.iods.count",
             fmt::format("compute.dies ({}) do not split evenly over {} IODs", m.compute.dies, iods->count),
             {"compute.dies"});
    }
    if (m.memory.hbm.stacks % iods->count != 0) {
      c.fail("memory.fabric.iods.count",
             fmt::format("memory.hbm.stacks ({}) do not split evenly over {} IODs", m.memory.hbm.stacks,
                         iods->count),
             {"memory.hbm.stacks"});
    }
    if (m.partition && m.partition->memory == MemoryPartition::nps4 && iods->count > 4 && iods->count % 4 != 0) {
      c.fail("memory.fabric.iods.count",
             fmt::format("nps4 quarters of the stacks do not fall on whole IODs of {}", iods->count),
             {"partition.memory"});
    }
  }
  const auto& cu = m.compute;
  if (cu.wave_size != 32 && cu.wave_size != 64) {
    c.fail("compute.wave_size", "must be 32 or 64, got " + std::to_string(cu.wave_size));
  }
  if (cu.wave_size != 0 && cu.max_workgroup_threads % cu.wave_size != 0) {
    c.fail("compute.max_workgroup_threads",
           "must be a multiple of wave_size (" + std::to_string(cu.wave_size) + ")");
  }
  // The simulator elaborates every CU as a module of its own.
  if (std::uint64_t{cu.dies} * cu.cus_per_die > kMaxTotalCus) {
    c.fail("compute.cus_per_die",
           fmt::format("dies x cus_per_die = {} x {} = {} CUs; the simulator runs at most {}",
                       cu.dies, cu.cus_per_die, std::uint64_t{cu.dies} * cu.cus_per_die,
                       kMaxTotalCus),
           {"compute.dies"});
  }
  // A workgroup of max_workgroup_threads must be able to reside on one CU.
  const std::uint64_t resident_threads =
      std::uint64_t{cu.simds_per_cu} * cu.wave_slots_per_simd * cu.wave_size;
  if (cu.max_workgroup_threads > resident_threads) {
    c.fail("compute.max_workgroup_threads",
           fmt::format("{} threads do not fit on one CU: simds_per_cu x wave_slots_per_simd x "
                       "wave_size = {} x {} x {} = {} threads resident at most",
                       cu.max_workgroup_threads, cu.simds_per_cu, cu.wave_slots_per_simd,
                       cu.wave_size, resident_threads),
           {"compute.wave_slots_per_simd", "compute.simds_per_cu"});
  }
  const bool hopper_only = m.kernels.matrix_instructions != MatrixInstructions::isa && m.isa != IsaFamily::hopper;
  if (hopper_only) {
    c.fail("kernels.matrix_instructions",
           std::string(config::enum_name(m.kernels.matrix_instructions)) +
               " is a Hopper instruction; this machine's isa is " + std::string(config::enum_name(m.isa)));
  }
  // Our NVIDIA kernels, and our fp8 quantisation kernel between the stages,
  // are charged the instruction counts of the profile's nvidia: section
  // (sim/programs/moe_kernels.cpp): a machine without one cannot run them.
  if (!m.kernels.nvidia) {
    if (m.kernels.fp8_intermediate == Fp8Intermediate::kernel) {
      c.fail("kernels.fp8_intermediate",
             "kernel runs our quantisation kernel, charged the instruction counts of a kernel profile's "
             "nvidia: section; this machine's profile (" + m.kernel_profile +
                 ") has none: use epilogue, or a profile with one (hopper)");
    }
    if (m.kernels.matrix_instructions != MatrixInstructions::isa && !hopper_only) {
      c.fail("kernels.matrix_instructions",
             std::string(config::enum_name(m.kernels.matrix_instructions)) +
                 " runs our NVIDIA kernels, charged the instruction counts of a kernel profile's nvidia: "
                 "section; this machine's profile (" + m.kernel_profile + ") has none");
    }
  }
  // (The profile's own check of matrix_instructions against its nvidia:
  // section is made above with the machine's profile named: not twice.)
  check_kernels(m.kernels, c, "kernels.", /*check_nvidia=*/false);
  require_pow2(c, "compute.l1_line", cu.l1_line);
  if (cu.l1_per_cu.bytes > 0 && cu.l1_per_cu.bytes < cu.l1_line.bytes * cu.l1_ways) {
    c.fail("compute.l1_per_cu",
           units::format(cu.l1_per_cu) + " holds less than one set of " + std::to_string(cu.l1_ways) + " ways x " +
               units::format(cu.l1_line) + " (0B: no L1)",
           {"compute.l1_ways", "compute.l1_line"});
  } else if (const std::uint64_t l1_set = std::uint64_t{cu.l1_line.bytes} * cu.l1_ways;
             l1_set != 0 && cu.l1_per_cu.bytes % l1_set != 0) {
    // As the L2 is held to: the tag array has whole sets (1000B of 128-byte
    // lines in 4 ways would be 1.95 sets).
    c.fail("compute.l1_per_cu",
           std::to_string(cu.l1_per_cu.bytes) + " bytes do not split into whole sets of " + std::to_string(cu.l1_ways) +
               " ways x " + units::format(cu.l1_line),
           {"compute.l1_ways", "compute.l1_line"});
  }
  const auto& l2 = m.memory.l2;
  require_pow2(c, "memory.l2.line", l2.line);
  const std::uint64_t set_bytes =
      static_cast<std::uint64_t>(l2.line.bytes) * l2.ways * l2.channels_per_die;
  if (set_bytes != 0 && l2.size_per_die.bytes % set_bytes != 0) {
    c.fail("memory.l2.size_per_die",
           units::format(l2.size_per_die) + " does not split into whole sets of " +
               std::to_string(l2.ways) + " ways x " + units::format(l2.line) + " over " +
               std::to_string(l2.channels_per_die) + " channels");
  }
  const auto& hbm = m.memory.hbm;
  // The tag arrays number a way's blocks with 32-bit keys: every address of
  // the HBM capacity must have one (CacheTags::beyond_range otherwise).
  const auto tag_reach = [](std::uint64_t size, std::uint32_t ways) {
    __extension__ typedef unsigned __int128 u128;  // GCC/Clang extension: no overflow
    return static_cast<u128>(size / std::max(1u, ways)) << 31;
  };
  if (l2.ways != 0 && tag_reach(l2.size_per_die.bytes, l2.ways) < hbm.capacity.bytes) {
    c.fail("memory.l2.size_per_die",
           fmt::format("{} over {} ways is too small to tag memory.hbm.capacity ({}): the "
                       "simulator needs size_per_die / ways x 2^31 >= capacity",
                       units::format(l2.size_per_die), l2.ways, units::format(hbm.capacity)),
           {"memory.l2.ways", "memory.hbm.capacity"});
  }
  if (m.memory.mall) {
    const auto& mall = *m.memory.mall;
    require_pow2(c, "memory.mall.line", mall.line);
    if (mall.size.bytes % (mall.line.bytes * mall.ways) != 0) {
      c.fail("memory.mall.size", "does not split into whole sets of " +
                                     std::to_string(mall.ways) + " ways x " +
                                     units::format(mall.line));
    }
    // One slice per HBM stack, tagged at the requesters' (L2) line size at
    // least (sim/mem/mall.h): each slice must hold one whole set.
    const std::uint64_t tag_line = std::max<std::uint64_t>(mall.line.bytes, 128);
    const std::uint64_t slice = mall.size.bytes / std::max(1u, hbm.stacks);
    if (slice < tag_line * mall.ways) {
      c.fail("memory.mall.size",
             fmt::format("{} over {} HBM stacks leaves {} per slice, less than one set of {} ways "
                         "x {}B (the MALL is tagged at max(line, 128B))",
                         units::format(mall.size), hbm.stacks, units::format(units::Bytes{slice}),
                         mall.ways, tag_line),
             {"memory.hbm.stacks", "memory.mall.ways"});
    } else if (tag_reach(mall.size.bytes, mall.ways) < hbm.capacity.bytes) {
      c.fail("memory.mall.size",
             fmt::format("{} over {} ways is too small to tag memory.hbm.capacity ({}): the "
                         "simulator needs size / ways x 2^31 >= capacity",
                         units::format(mall.size), mall.ways, units::format(hbm.capacity)),
             {"memory.mall.ways", "memory.hbm.capacity"});
    }
  }
  require_pow2(c, "memory.hbm.interleave", hbm.interleave);
  require_pow2(c, "memory.hbm.row_buffer", hbm.row_buffer);
  // A refresh must end before the next is due, or a pseudo-channel would
  // never serve another request (Hbm::serve_chunk loops over due refreshes).
  if (hbm.refresh_time >= hbm.refresh_interval) {
    c.fail("memory.hbm.refresh_time",
           fmt::format("{} is not shorter than memory.hbm.refresh_interval ({}): the channel "
                       "would refresh forever",
                       units::format(hbm.refresh_time), units::format(hbm.refresh_interval)),
           {"memory.hbm.refresh_interval"});
  }
  // The power limit can only slow the clock down.
  if (m.power && m.power->sustained_clock.hz > cu.clock.hz) {
    c.fail("power.sustained_clock",
           fmt::format("{} is above compute.clock ({}): a power limit never raises the clock",
                       units::format(m.power->sustained_clock), units::format(cu.clock)),
           {"compute.clock"});
  }
  // A full mesh gives every peer the same number of whole links.
  if (m.interconnect && m.interconnect->topology == ScaleUpTopology::full_mesh) {
    const auto& ic = *m.interconnect;
    const std::uint32_t peers = ic.gpus_per_node - 1;
    if (peers == 0 || ic.links_per_gpu % peers != 0) {
      c.fail("interconnect.links_per_gpu",
             fmt::format("{} links do not split evenly over the {} peers of a full mesh of {} "
                         "GPUs",
                         ic.links_per_gpu, peers, ic.gpus_per_node),
             {"interconnect.gpus_per_node"});
    }
  }
  if (m.tdm && m.tdm->slot_length < m.tdm->dispatch_latency) {
    c.fail("tdm.slot_length", "is shorter than tdm.dispatch_latency (" +
                                  units::format(m.tdm->dispatch_latency) +
                                  "): no slot could ever dispatch work",
           {"tdm.dispatch_latency"});
  }
}

WorkgroupOrder effective_workgroup_order(const MachineSpec& m) {
  if (m.launch.workgroup_order != WorkgroupOrder::vendor) return m.launch.workgroup_order;
  return m.vendor == Vendor::amd ? WorkgroupOrder::die_round_robin : WorkgroupOrder::index;
}

}  // namespace tdmsim
