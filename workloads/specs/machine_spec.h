// A GPU described by workloads/machines/<part>.yaml. Each parameter is
// declared once below (key, unit via its type, default, range, description);
// the value in a shipped YAML file carries its source as a comment.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "workloads/config/schema.h"
#include "workloads/specs/enums.h"
#include "workloads/specs/inert_keys.h"
#include "workloads/specs/interconnect_spec.h"
#include "workloads/specs/kernel_profile.h"

namespace tdmsim::config {
class Checker;  // reader.h
}

namespace tdmsim {

using units::Bandwidth;
using units::Bytes;
using units::Duration;
using units::Frequency;
using config::Default;
using config::EmptyAllowed;
using config::Max;
using config::Min;
using config::Required;

struct ComputeSpec {
  Frequency clock{};
  std::uint32_t dies{};
  std::uint32_t cus_per_die{};
  std::uint32_t wave_size{};
  std::uint32_t simds_per_cu{};
  std::uint32_t wave_slots_per_simd{};
  std::uint32_t max_workgroup_threads{};
  Bytes vgpr_file_per_cu{};
  Bytes lds_per_cu{};
  std::uint32_t lds_banks{};
  std::uint32_t lds_bytes_per_clock{};
  Bytes l1_per_cu{};
  Bytes l1_line{};
  std::uint32_t l1_ways{};
  Duration l1_hit_latency{};
  std::uint32_t l1_bytes_per_clock{};
  double matrix_efficiency{};

  template <class V>
  void visit(V& v) {
    v.param(clock, "clock", "peak engine (shader) clock", Required{}, Min{"1MHz"}, Max{"100GHz"});
    v.param(dies, "dies", "compute dies (XCDs on CDNA3/4; 1 for a monolithic die)", Required{},
            Min{1u}, Max{64u});
    v.param(cus_per_die, "cus_per_die", "active compute units (SMs on NVIDIA) per die",
            Required{}, Min{1u}, Max{1024u});
    v.param(wave_size, "wave_size", "threads per wave (warp): 32 or 64", Required{}, Min{32u},
            Max{64u});
    v.param(simds_per_cu, "simds_per_cu", "SIMDs (SM sub-partitions) per CU", Default{4u},
            Min{1u}, Max{16u});
    v.param(wave_slots_per_simd, "wave_slots_per_simd", "resident waves per SIMD", Required{},
            Min{1u}, Max{64u});
    v.param(max_workgroup_threads, "max_workgroup_threads", "threads per workgroup at most",
            Default{1024u}, Min{32u}, Max{4096u});
    v.param(vgpr_file_per_cu, "vgpr_file_per_cu", "vector register file per CU", Required{},
            Min{"1KiB"}, Max{"64MiB"});
    v.param(lds_per_cu, "lds_per_cu", "LDS (shared memory) per CU", Required{}, Min{"1KiB"},
            Max{"16MiB"});
    v.param(lds_banks, "lds_banks",
            "LDS banks (4 bytes wide): one 4-byte word per bank and clock, so the LDS moves at most "
            "min(lds_bytes_per_clock, 4 x lds_banks) bytes a clock",
            Required{}, Min{1u}, Max{256u});
    v.param(lds_bytes_per_clock, "lds_bytes_per_clock",
            "LDS bandwidth per CU, bytes/clock: a main loop's operand reads and tile writes per K step "
            "share it (sim/cu/lds.h)",
            Required{}, Min{1u}, Max{4096u});
    v.param(l1_per_cu, "l1_per_cu",
            "L1 vector data cache per CU (0B: none); K-grouped main-loop tile loads stream past it",
            Required{}, Min{"0B"}, Max{"64MiB"});
    v.param(l1_line, "l1_line", "L1 vector data cache line size", Default{"128B"}, Min{"32B"}, Max{"1KiB"});
    v.param(l1_ways, "l1_ways", "L1 vector data cache associativity", Default{4u}, Min{1u}, Max{64u});
    v.param(l1_hit_latency, "l1_hit_latency", "load-to-use latency of an L1 hit", Default{"50ns"}, Min{"1ns"},
            Max{"10us"});
    v.param(l1_bytes_per_clock, "l1_bytes_per_clock", "L1 hit bandwidth per CU, bytes/clock", Default{64u},
            Min{1u}, Max{4096u});
    v.param(matrix_efficiency, "matrix_efficiency",
            "fraction of the matrix pipe's peak rate a tuned GEMM main loop sustains "
            "(instruction issue, operand staging); fitted per machine, docs/calibration.md",
            Default{1.0}, Min{0.05}, Max{1.0});
  }
  std::uint32_t total_cus() const { return dies * cus_per_die; }
  // Element operations the vector pipes of one CU do per clock (all SIMDs'
  // lanes: 16 per SIMD for wave64 hardware, 32 for wave32).
  double vector_lanes() const { return simds_per_cu * (wave_size == 64 ? 16.0 : 32.0); }
  // How many workgroups of `threads` threads, each taking `lds_bytes` of LDS
  // and `vgprs_per_thread` 4-byte registers a thread, one CU holds at once:
  // the fewest its wave slots, its LDS and its register file allow, and which
  // of the three it is ("waves", "lds", "registers"). 0: not even one fits.
  struct Occupancy {
    std::uint32_t workgroups = 0;
    std::string_view limiter = "waves";
  };
  Occupancy occupancy(std::uint32_t threads, std::uint64_t lds_bytes, std::uint32_t vgprs_per_thread) const {
    const std::uint32_t waves = std::max(1u, (threads + wave_size - 1) / wave_size);
    Occupancy o{simds_per_cu * wave_slots_per_simd / waves, "waves"};
    if (lds_bytes > 0) {
      const auto by_lds = static_cast<std::uint32_t>(lds_per_cu.bytes / lds_bytes);
      if (by_lds < o.workgroups) o = {by_lds, "lds"};
    }
    const std::uint64_t regs = std::uint64_t{threads} * vgprs_per_thread * 4;
    if (regs > 0) {
      const auto by_regs = static_cast<std::uint32_t>(vgpr_file_per_cu.bytes / regs);
      if (by_regs < o.workgroups) o = {by_regs, "registers"};
    }
    return o;
  }
};

struct L2Spec {
  Bytes size_per_die{};
  Bytes line{};
  std::uint32_t ways{};
  std::uint32_t channels_per_die{};
  std::uint32_t bytes_per_clock_per_channel{};
  Duration hit_latency{};
  std::uint32_t mshrs_per_channel{};
  std::uint32_t atomic_bytes_per_clock_per_channel{};
  AtomicSharing atomic_sharing{AtomicSharing::fifo};

  template <class V>
  void visit(V& v) {
    v.param(size_per_die, "size_per_die", "L2 capacity per die (XCD)", Required{}, Min{"1KiB"},
            Max{"1GiB"});
    v.param(line, "line", "L2 line size", Default{"128B"}, Min{"32B"}, Max{"1KiB"});
    v.param(ways, "ways", "L2 associativity", Default{16u}, Min{1u}, Max{128u});
    v.param(channels_per_die, "channels_per_die", "L2 channels (banks) per die", Required{},
            Min{1u}, Max{1024u});
    v.param(bytes_per_clock_per_channel, "bytes_per_clock_per_channel",
            "L2 bandwidth per channel, bytes/clock", Default{128u}, Min{1u}, Max{4096u});
    v.param(hit_latency, "hit_latency", "load-to-use latency of an L2 hit", Required{},
            Min{"1ns"}, Max{"100us"});
    v.param(mshrs_per_channel, "mshrs_per_channel", "outstanding misses per L2 channel",
            Default{64u}, Min{1u}, Max{4096u});
    v.param(atomic_bytes_per_clock_per_channel, "atomic_bytes_per_clock_per_channel",
            "bytes of atomic read-modify-write (e.g. the MoE combine's scatter-adds) one L2 "
            "channel's atomic unit completes per clock",
            Default{4u}, Min{1u}, Max{4096u});
    v.param(atomic_sharing, "atomic_sharing",
            "how the atomic units' rate is shared among workgroups whose atomic adds reach "
            "them together: fifo (each workgroup's adds served in arrival order) or workgroups "
            "(round robin: each workgroup takes at least its bytes at the rate of all the "
            "GPU's atomic units over the workgroups resident at once, so a grid's workgroups "
            "that reach their epilogue together finish it together and the next ones' matrix "
            "work does not overlap it)",
            Default{AtomicSharing::fifo});
  }
};

struct MallSpec {
  Bytes size{};
  Bytes line{};
  std::uint32_t ways{};
  Bandwidth bandwidth{};
  Duration hit_latency{};

  template <class V>
  void visit(V& v) {
    v.param(size, "size", "Infinity Cache (MALL) capacity, whole package", Required{},
            Min{"1MiB"}, Max{"64GiB"});
    v.param(line, "line", "MALL line size", Default{"64B"}, Min{"32B"}, Max{"1KiB"});
    v.param(ways, "ways", "MALL associativity", Default{16u}, Min{1u}, Max{128u});
    v.param(bandwidth, "bandwidth", "MALL peak bandwidth, whole package", Required{},
            Min{"1GB/s"}, Max{"1PB/s"});
    v.param(hit_latency, "hit_latency",
            "latency a MALL hit adds to an L2 miss (load-to-use = l2.hit_latency + "
            "fabric.latency + this)",
            Required{}, Min{"1ns"}, Max{"100us"});
  }
};

struct HbmSpec {
  HbmGeneration generation{};
  std::uint32_t stacks{};
  Bytes capacity{};
  Bandwidth bandwidth{};
  std::uint32_t channels_per_stack{};
  std::uint32_t pseudo_channels{};
  Bytes interleave{};
  Bytes row_buffer{};
  Duration latency{};
  Duration row_miss_penalty{};
  std::uint32_t banks{};
  Duration refresh_interval{};
  Duration refresh_time{};
  Duration turnaround{};

  template <class V>
  void visit(V& v) {
    v.param(generation, "generation",
            "HBM generation, a label (descriptive: not modelled; the timing comes from the bandwidth, latency, "
            "bank and refresh keys)",
            Required{});
    v.param(stacks, "stacks", "HBM stacks in the package", Required{}, Min{1u}, Max{64u});
    v.param(capacity, "capacity", "total HBM capacity", Required{}, Min{"1GiB"},
            Max{"64TiB"});
    v.param(bandwidth, "bandwidth", "peak HBM bandwidth, all stacks (datasheet)", Required{},
            Min{"1GB/s"}, Max{"1PB/s"});
    v.param(channels_per_stack, "channels_per_stack", "independent channels per stack",
            Default{16u}, Min{1u}, Max{256u});
    v.param(pseudo_channels, "pseudo_channels", "pseudo-channels per channel", Default{2u},
            Min{1u}, Max{8u});
    v.param(interleave, "interleave", "address interleaving granularity across channels",
            Default{"256B"}, Min{"32B"}, Max{"1MiB"});
    v.param(row_buffer, "row_buffer", "DRAM row (page) size per pseudo-channel",
            Default{"1KiB"}, Min{"64B"}, Max{"64KiB"});
    v.param(latency, "latency",
            "latency an HBM access adds to an L2 miss (load-to-use = l2.hit_latency + "
            "fabric.latency + this)",
            Required{}, Min{"1ns"}, Max{"100us"});
    v.param(row_miss_penalty, "row_miss_penalty", "extra time of a row-buffer miss",
            Default{"15ns"}, Max{"10us"});
    v.param(banks, "banks", "banks per pseudo-channel (open rows tracked per bank)",
            Default{16u}, Min{1u}, Max{256u});
    v.param(refresh_interval, "refresh_interval", "average interval between refreshes (tREFI)",
            Default{"3.9us"}, Min{"100ns"}, Max{"1ms"});
    v.param(refresh_time, "refresh_time", "time one refresh blocks a pseudo-channel (tRFC); less than refresh_interval",
            Default{"350ns"}, Max{"100us"});
    v.param(turnaround, "turnaround", "bus turnaround when a channel switches read/write",
            Default{"5ns"}, Max{"10us"});
  }
};

// The I/O dies (IODs) of a chiplet package (MI300X: 4, MI355X: 2): the dies
// and the HBM stacks sit on them in equal shares, and memory interleaved over
// several IODs' stacks crosses the links between IODs, which every die's
// traffic shares (sim/mem/iod_links.h, docs/simulator.md "Fabric").
struct IodSpec {
  std::uint32_t count{};
  Bandwidth link_bandwidth{};
  // Not a key: set by partition_machine() (workloads/specs/partition.h),
  // which makes `count` the IODs of the partition's memory pool (removing the
  // section where the pool lies on one IOD) and keeps the package's dies per
  // IOD here (0: compute.dies / count). A partition's machine written out
  // (config.json) therefore does not reload as the same machine.
  std::uint32_t dies_per_iod = 0;

  template <class V>
  void visit(V& v) {
    v.param(count, "count",
            "I/O dies of the package; compute.dies and memory.hbm.stacks split evenly over them (1 has no "
            "link to share: refused)",
            Required{}, Min{2u}, Max{64u});
    v.param(link_bandwidth, "link_bandwidth",
            "one IOD's bandwidth to all the other IODs, both directions together: the data its dies read "
            "from other IODs' memory and the data its memory sends to other IODs' dies share it",
            Required{}, Min{"1GB/s"}, Max{"1PB/s"});
  }
};

struct FabricSpec {
  Bandwidth bandwidth{};
  Duration latency{};
  std::optional<IodSpec> iods;

  template <class V>
  void visit(V& v) {
    v.param(bandwidth, "bandwidth", "die-to-memory fabric bandwidth, whole package", Required{},
            Min{"1GB/s"}, Max{"1PB/s"});
    v.param(latency, "latency", "added latency of one fabric crossing", Default{"0ns"},
            Max{"100us"});
    v.section(iods, "iods",
              "the package's I/O dies and the links between them, shared by every die's traffic to memory "
              "on another IOD (absent: each die's link is its own and nothing is shared before the memory)");
  }
};

struct MemorySpec {
  L2Spec l2;
  std::optional<MallSpec> mall;
  HbmSpec hbm;
  FabricSpec fabric;

  template <class V>
  void visit(V& v) {
    v.section(l2, "l2", "L2 cache, one per die");
    v.section(mall, "mall", "memory-side last-level cache (AMD Infinity Cache); absent on NVIDIA");
    v.section(hbm, "hbm", "HBM stacks, channels and timing");
    v.section(fabric, "fabric", "fabric joining dies and memory");
  }
};

struct LaunchSpec {
  Duration kernel_launch{};
  Duration workgroup_dispatch{};
  WorkgroupOrder workgroup_order{WorkgroupOrder::vendor};
  Duration kernel_boundary{};

  template <class V>
  void visit(V& v) {
    v.param(kernel_launch, "kernel_launch", "host-visible launch overhead of one kernel",
            Required{}, Max{"10ms"});
    v.param(workgroup_dispatch, "workgroup_dispatch",
            "dispatcher time to place one workgroup on a CU", Default{"20ns"}, Max{"100us"});
    v.param(workgroup_order, "workgroup_order",
            "how a host-launched kernel's workgroups reach the CUs: vendor (the part's own: "
            "die_round_robin on an AMD part, index on an NVIDIA one) or index (in index order, to "
            "whichever CU slot frees first) or die_round_robin (workgroup i to die i mod dies, "
            "as AMD's multi-XCD parts dispatch; a die's CUs take its workgroups in order, at the "
            "start spread evenly over the die's CUs, every CU one before any takes two) or die_chunked (die d takes the d-th contiguous "
            "run of the grid, as kernels that remap their workgroup index to XCDs run; its CUs "
            "take them the same way)",
            Default{WorkgroupOrder::vendor});
    v.param(kernel_boundary, "kernel_boundary",
            "device-side fixed time of every host-launched kernel beyond its workgroups and its "
            "write-back: the command processor's cache acquire before the first workgroup and "
            "release after the last, and the completion signal, all inside a profiler's kernel "
            "duration (launch.kernel_launch is not)",
            Default{"0ns"}, Max{"1ms"});
  }
};

// The hypothetical hardware TDM MoE descriptor unit. No public figures exist:
// every value in a machine file is an assumption and says so.
struct TdmSpec {
  Duration descriptor_fetch_latency{};
  Duration decode_latency{};
  std::uint32_t slots{};
  Duration slot_length{};
  std::uint32_t queue_depth{};
  Duration dispatch_latency{};
  std::uint32_t movers_per_cu{};
  std::uint32_t mover_bytes_per_clock{};
  TdmPolicy default_policy{};
  TdmSlotModel slot_model{};
  std::uint32_t routing_scores_per_clock{};
  Duration routing_latency{};

  template <class V>
  void visit(V& v) {
    v.param(descriptor_fetch_latency, "descriptor_fetch_latency",
            "time to fetch a MoE descriptor from memory", Required{}, Max{"100us"});
    v.param(decode_latency, "decode_latency", "time to decode and validate a descriptor",
            Default{"50ns"}, Max{"100us"});
    v.param(slots, "slots",
            "time slots in the task table: jobs beyond this many machine waves share the last slot "
            "(binds only when a descriptor has more machine waves of jobs than this, as prefill "
            "layers do; no effect with slot_model continuous or policy low_latency)",
            Required{}, Min{1u}, Max{65536u});
    v.param(slot_length, "slot_length",
            "length of every slot record in the descriptors software writes (rounded down to whole ns)",
            Required{}, Min{"1ns"}, Max{"1ms"});
    v.param(queue_depth, "queue_depth",
            "descriptors queued per scheduler: the next one is fetched and decoded while the current "
            "runs (binds only below the descriptors rung at once: a MoE layer rings 1 or 2, so only "
            "1 changes its time)",
            Default{4u}, Min{1u}, Max{1024u});
    v.param(dispatch_latency, "dispatch_latency",
            "time from a job becoming dispatchable (its descriptor started, its time slot open) to "
            "its CU starting it; the unit queues each CU's next job ahead, so it is not paid again "
            "between a CU's back-to-back jobs",
            Required{}, Max{"100us"});
    v.param(movers_per_cu, "movers_per_cu",
            "tensor data movers per CU; with mover_bytes_per_clock they bound how fast gathered "
            "token rows reach LDS on the TDM path (binds only when that is slower than the rows' "
            "memory reads: few rows per job, as in decode, leave it idle)",
            Default{1u}, Min{1u}, Max{16u});
    v.param(mover_bytes_per_clock, "mover_bytes_per_clock",
            "bytes per clock one tensor data mover writes into LDS (binds as movers_per_cu does)",
            Default{64u}, Min{1u}, Max{4096u});
    v.param(default_policy, "default_policy",
            "policy of the descriptors software writes for the unit (custom: the slot table's order; "
            "dynamic: each free CU slot takes the next job of the expert with the most estimated "
            "work left, from the completions so far)",
            Default{TdmPolicy::load_balance});
    v.param(slot_model, "slot_model",
            "what a time slot is at run time: wave_synchronous (one machine wave, opens after the "
            "previous slot's length), continuous (an in-flight budget, jobs dispatch as CUs free up), "
            "skip_drained (wave_synchronous, a slot closes once its jobs have all finished)",
            Default{TdmSlotModel::wave_synchronous});
    // The unit's routing stage (sim/platform/tdm_router.h): ASSUMED, what-if
    // figures (docs/calibration.md "TDM unit: routing stage").
    v.param(routing_scores_per_clock, "routing_scores_per_clock",
            "router scores (one token x one expert) the unit's routing stage scores, biases and ranks per "
            "compute.clock cycle; each routed row it places in the task table counts as one more",
            Default{64u}, Min{1u}, Max{65536u});
    v.param(routing_latency, "routing_latency",
            "fixed time of the unit's routing stage from start to its task table (pipeline fill and drain)",
            Default{"100ns"}, Max{"100us"});
  }
};

// The board's power limit as it shows in the engine clock: under a sustained
// matrix load the clock drops until the board's power fits its limit
// (docs/simulator.md "Clocks under load"). Absent: every kernel runs at
// compute.clock.
struct PowerSpec {
  Frequency sustained_clock{};
  double reference_utilisation{};
  double narrow_matrix_activity{};
  double hbm_activity{};

  template <class V>
  void visit(V& v) {
    v.param(sustained_clock, "sustained_clock",
            "engine clock the board holds at its power limit under the reference load (a "
            "sustained dense GEMM)",
            Required{}, Min{"1MHz"}, Max{"100GHz"});
    v.param(reference_utilisation, "reference_utilisation",
            "fraction of the matrix peak at sustained_clock that the reference load delivers "
            "(its matrix activity)",
            Required{}, Min{0.01}, Max{1.0});
    v.param(narrow_matrix_activity, "narrow_matrix_activity",
            "power of a matrix pipe busy at its full rate on 8-bit or narrower operands, relative "
            "to 16-bit operands at theirs",
            Default{1.0}, Min{0.01}, Max{100.0});
    v.param(hbm_activity, "hbm_activity",
            "power of HBM traffic at the full HBM bandwidth, in units of a 16-bit matrix pipe busy "
            "at its full rate (both scaled with the engine clock's f^3)",
            Default{0.0}, Min{0.0}, Max{100.0});
  }
};

// Partition modes of an MI300-class GPU (docs/partitions.md): a workload on
// the machine runs on one compute partition (dies / partitions of the dies),
// its memory interleaved over every HBM stack (nps1) or over its own quarter
// of the stacks (nps4). workloads/specs/partition.h derives that machine.
struct PartitionSpec {
  ComputePartition compute{};
  MemoryPartition memory{};
  // Not a key: set once partition_machine() has made the spec one partition's.
  bool applied = false;

  template <class V>
  void visit(V& v) {
    v.param(compute, "compute",
            "spx (one partition of all dies), dpx (2), qpx (4) or cpx (one per die): a workload runs on one "
            "partition's dies",
            Default{ComputePartition::spx});
    v.param(memory, "memory",
            "nps1 (memory interleaved over every HBM stack) or nps4 (each quarter of the stacks, with its "
            "share of the MALL and capacity, is its own pool, local to the partitions above it)",
            Default{MemoryPartition::nps1});
  }
};

struct MachineSpec {
  std::string name;
  std::string description;
  Vendor vendor{};
  IsaFamily isa{};
  std::string kernel_profile;
  ComputeSpec compute;
  MemorySpec memory;
  LaunchSpec launch;
  KernelsSpec kernels;
  std::optional<TdmSpec> tdm;
  std::optional<PowerSpec> power;
  std::optional<InterconnectSpec> interconnect;
  std::optional<PartitionSpec> partition;

  template <class V>
  void visit(V& v) {
    v.param(name, "name", "short machine name used in reports", Required{});
    v.param(description, "description", "one line on what this machine is");
    v.param(vendor, "vendor", "GPU vendor", Required{});
    v.param(isa, "isa", "instruction-set family (picks the isa/ matrix table)", Required{});
    v.param(kernel_profile, "kernel_profile",
            "the kernel profile of its software kernels: a name in kernel-profiles/ or a path "
            "relative to this file (absent: the profile named after `isa`: cdna3, cdna4, "
            "gfx1250, hopper); loaded into `kernels`");
    v.section(compute, "compute", "compute units, waves, registers and LDS");
    v.section(memory, "memory", "caches, HBM and fabric");
    v.section(launch, "launch", "kernel launch and workgroup dispatch overheads");
    v.section(kernels, "kernels",
              "the software fused-MoE kernels this machine runs: its kernel profile's values; "
              "keys given here override the profile's (a variant's overlay, a fit candidate)");
    v.section(tdm, "tdm", "hardware TDM MoE descriptor unit (hypothetical)");
    v.section(power, "power", "sustained clock under load (absent: always compute.clock)");
    v.section(interconnect, "interconnect",
              "GPU-to-GPU links of the machine's platform and its scale-out NIC, for "
              "collectives (`tdmsim collective`; absent: the machine has none modelled)");
    v.section(partition, "partition",
              "compute and memory partition modes (MI300-class; absent: one GPU of all dies, memory "
              "interleaved over all stacks; docs/partitions.md)");
  }
};

// The most CUs (dies x cus_per_die) the simulator elaborates.
inline constexpr std::uint64_t kMaxTotalCus = 16384;

// Cross-field checks that one parameter's range cannot express.
void check(const MachineSpec& m, config::Checker& c);

// Keys whose value cannot change a run under the machine's other keys: the
// L1's shape and speed on a CU without an L1 (compute.l1_per_cu 0).
std::vector<InertKey> inert_keys(const MachineSpec& m);

// launch.workgroup_order with `vendor` resolved: AMD's multi-XCD Instinct parts
// hand flat workgroup i to XCD i mod XCDs (docs/calibration.md "Kernel
// boundaries"), so an AMD machine gets die_round_robin; NVIDIA's placement is
// not published and a single-die machine's is the same either way: index.
WorkgroupOrder effective_workgroup_order(const MachineSpec& m);

}  // namespace tdmsim
