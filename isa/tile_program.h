// The program one workgroup runs, at tile granularity: loads and stores of
// (2-D strided) address ranges, matrix instructions, vector epilogue work.
// Kernels (the MoE stages, the microbenchmarks) are grids of these programs;
// the timing model executes them with costs from the matrix tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "workloads/specs/enums.h"

namespace tdmsim::isa {

// A memory range a workgroup loads or stores: `rows` rows of `row_bytes`
// each, either 2-D strided (row r at addr + r * row_stride) or gathered (row
// r at addr + gather[r]: the token rows of a MoE block). `iter_stride` moves
// the whole range each loop iteration.
struct MemRange {
  std::uint64_t addr = 0;
  std::uint32_t row_bytes = 0;
  std::uint32_t rows = 1;
  std::uint64_t row_stride = 0;
  std::int64_t iter_stride = 0;
  // Row offsets of a gather (size >= rows). Not owned: whoever builds the
  // program keeps them alive as long as its KernelLaunch (sim/programs: the
  // Layer its builders hold), so a range is a plain value. A compute unit
  // rebuilds a program per workgroup (KernelLaunch::program_into): clearing
  // its old ranges then reads none of them, and copying one touches no
  // reference count (a locked instruction each, and the old ranges' host
  // cache lines, cold by the time the workgroup ends, read just to drop
  // their counts: about 4% of a 64-token layer's CPU time when it was a
  // shared_ptr).
  const std::vector<std::uint64_t>* gather = nullptr;
  // Who moves the data into LDS: the waves themselves (per-row address
  // arithmetic and load issue on the vector pipe, for gathers), or the CU's
  // tensor movers (gfx1250 Tensor Data Movers), which take a descriptor and cost no wave time.
  bool tensor_mover = false;
  // Stores only: an atomic add (read-modify-write in L2), as the MoE combine
  // scatter-adds partial outputs into token rows.
  bool atomic = false;
  // Loads only: straight into registers, not through LDS (AITER's MoE GEMMs
  // load their pre-shuffled weights so: Loop::b_in_registers).
  bool to_registers = false;
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(row_bytes) * rows; }
  bool operator==(const MemRange&) const = default;  // (a gather by its pointer)
};
static_assert(std::is_trivially_destructible_v<MemRange>, "clearing a program's ranges must not read them");

// A 2-D strided range (rows at addr + r * row_stride).
inline MemRange strided(std::uint64_t addr, std::uint32_t row_bytes, std::uint32_t rows = 1,
                        std::uint64_t row_stride = 0, std::int64_t iter_stride = 0) {
  MemRange r;
  r.addr = addr;
  r.row_bytes = row_bytes;
  r.rows = rows;
  r.row_stride = row_stride;
  r.iter_stride = iter_stride;
  return r;
}

// Gathered rows (row r at addr + (*offsets)[r]; the offsets outlive every
// use of the range: MemRange::gather).
inline MemRange gathered(std::uint64_t addr, std::uint32_t row_bytes, std::uint32_t rows,
                         const std::vector<std::uint64_t>* offsets, std::int64_t iter_stride = 0) {
  MemRange r = strided(addr, row_bytes, rows, 0, iter_stride);
  r.gather = offsets;
  return r;
}

// Cycles between two instructions of one wavefront on CDNA: a CU's
// sequencer gives each of its 4 SIMDs an issue turn every 4 cycles, and in a
// turn issues at most one instruction per wavefront (up to one per
// instruction type from different wavefronts: VALU, SALU, vector memory, LDS,
// branch). AMD "GCN Architecture" whitepaper (2012), "Compute Unit
// Scheduler"; CDNA keeps the GCN sequencer (AMD CDNA3 ISA reference guide,
// ch. 1-2; ROCm Compute Profiler, "Pipeline descriptions: Scheduler").
inline constexpr double kCdnaIssueTurnCycles = 4.0;

// One software-pipelined loop: each iteration loads its operands, then runs
// an MxNxK matrix product in `dtype` (m == 0: no matrix work).
struct Loop {
  std::vector<MemRange> loads;
  std::uint32_t iterations = 0;
  DType dtype = DType::bf16;
  std::uint32_t m = 0, n = 0, k = 0;
  // Charged at the machine's MoE-kernel matrix instructions and efficiency
  // (`kernels:` section) rather than the ISA's fastest instruction.
  bool moe_kernel = false;
  // With moe_kernel: this loop runs wgmma (kernels.matrix_instructions wgmma,
  // plan::wgmma_tile), charged at the ISA's rate times kernels.wgmma_efficiency
  // (wgmma_fp8_efficiency for 8-bit operands).
  bool wgmma = false;
  // With wgmma: the warp-specialized loop (plan::ws_tile), charged at
  // kernels.wgmma_ws_efficiency instead.
  bool ws = false;
  // The B operand (the weights) reaches the matrix instructions from
  // registers, not LDS: its loads are MemRange::to_registers, and the LDS
  // serves only A (sim/cu/lds.h). AITER's MoE GEMMs: CK's GridwiseMoeGemm
  // with its b_preshuffle pipeline, FlyDSL's MoE kernels, the assembly
  // 1-stage kernels (sim/programs/moe_program_common.cpp aiter_gemm).
  bool b_in_registers = false;
  // Element operations each iteration puts on the vector pipe beside its
  // matrix work (the two overlap): fp8 operands converted to f16 in registers.
  std::uint64_t vector_ops = 0;
  // The vector work follows the matrix work instead of overlapping it: the
  // workgroup's barriers separate the two (the 1-stage kernel's down phase
  // converts its tile in LDS before the product and scans the product after).
  bool vector_after_matrix = false;
  // vector_ops are the workgroup's own instructions (one per element
  // operation per thread), not a conversion unit's throughput: they also
  // take at least kernels.warp_issue_cycles per instruction per warp.
  bool vector_issue_bound = false;
  // Time each iteration waits after its matrix work, in ps, during which the
  // workgroup neither multiplies nor converts (an 8-bit wgmma loop waiting for
  // its K tile's products before adding them up in fp32).
  std::uint64_t wait_ps = 0;
  // Instructions one warp issues per iteration on the loop's critical path:
  // the whole main-loop body of a warp that multiplies (its copies, the
  // buffer bookkeeping, the wait, the barrier, its matrix and conversion
  // instructions), counted from the kernel (sim/programs/moe_program_common.h).
  // With kernels.warp_issue_cycles, an iteration takes at least this many
  // times that many cycles, however idle the pipes are; the pipes' own time
  // still bounds it too (0: no such floor).
  std::uint32_t issue_instructions = 0;
  // Our AMD kernels' main loop on CDNA: what one wavefront issues per
  // iteration, counted in the disassembly of its code object
  // (descriptors/plan/amd_kernels.h). The CU charges it as CDNA issues it
  // (sim/cu/compute_unit.cpp enter_loop; docs/moe-timing.md "CDNA main-loop
  // issue"): a wavefront issues at most one instruction per issue turn of
  // its SIMD, and each VALU instruction holds the SIMD's 16 lanes for a
  // wave64's passes. 0 instructions: not charged.
  struct WaveIssue {
    std::uint32_t instructions = 0;  // all of them, MFMAs and scalar ones included
    std::uint32_t valu = 0;          // VALU instructions other than MFMA
    bool operator==(const WaveIssue&) const = default;
  };
  WaveIssue wave_issue;
  // Makes this a default loop, keeping the storage of `loads` (TileProgram::reset).
  void reset() {
#if defined(__GLIBCXX__) && __SIZEOF_POINTER__ == 8  // the sizes of LP64 libstdc++ (TileProgram::reset)
    static_assert(sizeof(Loop) == sizeof(std::vector<MemRange>) + 64, "a new field: reset it here");
#endif
    const Loop d{};
    loads.clear();
    iterations = d.iterations;
    dtype = d.dtype;
    m = d.m;
    n = d.n;
    k = d.k;
    moe_kernel = d.moe_kernel;
    wgmma = d.wgmma;
    ws = d.ws;
    b_in_registers = d.b_in_registers;
    vector_ops = d.vector_ops;
    vector_after_matrix = d.vector_after_matrix;
    vector_issue_bound = d.vector_issue_bound;
    wait_ps = d.wait_ps;
    issue_instructions = d.issue_instructions;
    wave_issue = d.wave_issue;
  }
  bool operator==(const Loop&) const = default;
};

// One workgroup: prologue loads, then its loops in order (a fused MoE kernel
// has two: gate/up over H, then down over I; a GEMM one), an epilogue of
// vector work, then stores. Loads run `pipeline_depth` iterations ahead,
// across loop boundaries as a software pipeline would.
struct TileProgram {
  std::uint32_t threads = 256;
  std::uint32_t lds_bytes = 0;
  std::uint32_t vgprs_per_thread = 128;

  std::vector<MemRange> prologue_loads;
  std::vector<Loop> loops;
  std::uint32_t pipeline_depth = 2;  // iterations of loads in flight
  // Dependent loads: each iteration's load address comes from the previous
  // load (pointer chase); `chase` lists the addresses in order.
  std::vector<std::uint64_t> chase;
  std::uint64_t epilogue_vector_ops = 0;  // element operations (activation, scaling, ...)
  // The same as Loop::vector_issue_bound, for the epilogue's vector work.
  bool epilogue_issue_bound = false;
  // Threads that issue the epilogue's work when it is issue-bound (0: all
  // `threads`; a warp-specialized kernel's copying warps take no part).
  std::uint32_t epilogue_threads = 0;
  // Time the workgroup spends beyond its modelled work before the epilogue
  // (serial phases the model does not break down), in ps.
  std::uint64_t extra_time_ps = 0;
  // Fixed time of each main-loop iteration on top of its matrix work (the
  // workgroup barrier, waiting on and issuing the asynchronous copies), in ps.
  std::uint64_t iteration_overhead_ps = 0;
  std::vector<MemRange> stores;

  std::uint32_t iterations() const {
    std::uint32_t n = 0;
    for (const auto& l : loops) n += l.iterations;
    return n;
  }
  // Bytes of its stores marked atomic (a combine's adds, split-K partials).
  std::uint64_t atomic_store_bytes() const {
    std::uint64_t n = 0;
    for (const auto& r : stores) n += r.atomic ? r.bytes() : 0;
    return n;
  }
  // Makes this a default program with `loop_count` default loops, keeping the
  // storage of its vectors and of those loops' loads: a program rebuilt in
  // place per workgroup (KernelLaunch::program_into) allocates nothing once
  // its vectors have grown to its kernel's sizes.
  void reset(std::size_t loop_count = 0) {
    // Field by field rather than through a fresh program moved in: no
    // vector changes hands, and the defaults are a default program's (the
    // sizes below make a field added later fail to compile until it is
    // reset here too; tests/sim/test_program_into.cpp checks the values).
    // The sizes are those of LP64 libstdc++ (Debian's, the build CI runs):
    // elsewhere the check is left out, and the test alone guards the values.
#if defined(__GLIBCXX__) && __SIZEOF_POINTER__ == 8
    static_assert(sizeof(TileProgram) == 4 * sizeof(std::vector<int>) + 56, "a new field: reset it here");
#endif
    const TileProgram d{};
    threads = d.threads;
    lds_bytes = d.lds_bytes;
    vgprs_per_thread = d.vgprs_per_thread;
    prologue_loads.clear();
    loops.resize(loop_count);
    for (Loop& l : loops) l.reset();
    pipeline_depth = d.pipeline_depth;
    chase.clear();
    epilogue_vector_ops = d.epilogue_vector_ops;
    epilogue_issue_bound = d.epilogue_issue_bound;
    epilogue_threads = d.epilogue_threads;
    extra_time_ps = d.extra_time_ps;
    iteration_overhead_ps = d.iteration_overhead_ps;
    stores.clear();
  }
  bool operator==(const TileProgram&) const = default;
};

// What the TDM MoE unit gets for a kernel it runs: the descriptor software
// wrote to memory (its address and the bytes stored there; the unit fetches
// and decodes them, and schedules from what they say), and the kernel's grid:
// per workgroup the token block and N tile it computes. The grid is the
// kernel's code, not the descriptor's: a slot record names a token block, and
// how the kernel splits a block over workgroups (N tiles, K splits) depends on
// its tile, which descriptor version 1 has no field for.
struct HardwareDispatch {
  std::uint64_t descriptor_addr = 0;
  std::vector<std::byte> descriptor;  // empty: runs with no descriptor of its own (grid order)
  std::vector<std::uint32_t> block, n_tile;  // per workgroup
};

// Set on the TDM path's routing stage: the TDM MoE unit scores, ranks and
// sorts in hardware (sim/platform/tdm_router.h), with no grid of its own.
// `items` pass its pipeline (tdm.routing_scores_per_clock a cycle); it
// streams `reads` in and writes `writes` (the task table) when it is done.
struct HardwareRouting {
  std::uint64_t items = 0;
  struct Range {
    std::uint64_t addr = 0;
    std::uint32_t row_bytes = 0;
    std::uint32_t rows = 1;  // contiguous rows of row_bytes
  };
  std::vector<Range> reads, writes;
};

struct KernelLaunch {
  std::string name;
  std::uint32_t workgroups = 0;
  // Resources are uniform over the grid: taken from program(0).
  std::function<TileProgram(std::uint32_t wg)> program;
  // Set when the TDM MoE unit runs the kernel from a descriptor instead of
  // the host launching a grid.
  std::shared_ptr<const HardwareDispatch> hardware;
  // Set (and `workgroups` 0) when the TDM unit's routing stage does the work.
  std::shared_ptr<const HardwareRouting> routing;
  // The kernel's useful matrix work (FLOPs of real rows, not padding) and
  // the dtype its matrix instructions multiply, for the clock governor
  // (sim/platform/power.h): over the kernel's modelled time, its matrix-pipe
  // occupancy, hence its power and clock under a power limit.
  double matrix_flops = 0;
  DType matrix_dtype = DType::bf16;
  // Optional, beside `program` (last, so that positional initialisers of
  // the fields above are unchanged): builds the same program as program(wg) into
  // `p`, whatever p held before, reusing its storage (TileProgram::reset):
  // a compute unit rebuilds its slot's program for every workgroup it starts,
  // and fresh vectors each time cost more than building the program. The
  // unit uses this one when it is set: whoever replaces `program` of a
  // launch that has it replaces or clears it too.
  // (Its empty initialiser keeps positional initialisers that end before it
  // free of -Wmissing-field-initializers.)
  std::function<void(std::uint32_t wg, TileProgram& p)> program_into{};

  // Workgroup `wg`'s program into `p`: by program_into where it is set,
  // else program(wg).
  void build(std::uint32_t wg, TileProgram& p) const {
    if (program_into) {
      program_into(wg, p);
    } else {
      p = program(wg);
    }
  }
};

}  // namespace tdmsim::isa
