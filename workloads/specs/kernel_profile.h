// The kernel profile: what the software fused-MoE kernels of a machine
// family cost, as declared in workloads/kernel-profiles/<family>.yaml. Each
// parameter is declared once below (key, unit via its type, range,
// description); each value lives in a profile file with its source as a
// comment. The loader (workloads/config/loader.cpp) reads the profile a
// machine names and hands it to the simulator as the plain MachineSpec::kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "workloads/config/reader.h"
#include "workloads/specs/enums.h"

namespace tdmsim {

using units::Bytes;
using units::Duration;
using config::Default;
using config::Max;
using config::Min;
using config::Required;

// Vector element operations per output element of the epilogues of the
// kernels that run the isa/ instructions (AITER-style kernels on CDNA).
struct EpilogueCosts {
  std::uint32_t activation_ops{};
  std::uint32_t quant_ops{};
  std::uint32_t combine_ops{};
  std::uint32_t reduce_ops{};

  template <class V>
  void visit(V& v) {
    v.param(activation_ops, "activation_ops",
            "operations of the gate/up activation (SwiGLU) per intermediate element", Required{},
            Max{10000u});
    v.param(quant_ops, "quant_ops",
            "operations re-quantising an 8-bit intermediate per element (amax, scale, convert)",
            Required{}, Max{10000u});
    v.param(combine_ops, "combine_ops",
            "operations of the down epilogue per output element (routed-weight multiply, "
            "conversion for the atomic add)",
            Required{}, Max{10000u});
    v.param(reduce_ops, "reduce_ops", "operations per split-K partial per element of the reduction",
            Required{}, Max{10000u});
  }
};

// The AITER-style sorting kernel (moe_align_block_size).
struct SortCosts {
  std::uint32_t ops_per_row{};
  std::uint32_t ops_per_expert{};
  std::uint32_t rows_per_workgroup{};

  template <class V>
  void visit(V& v) {
    v.param(ops_per_row, "ops_per_row",
            "vector operations per routed row (histogram, prefix sum, scatter)", Required{},
            Max{10000u});
    v.param(ops_per_expert, "ops_per_expert", "vector operations per expert (the prefix sum)",
            Required{}, Max{10000u});
    v.param(rows_per_workgroup, "rows_per_workgroup", "routed rows one workgroup sorts",
            Required{}, Min{1u}, Max{1u << 24});
  }
};

struct ClearCosts {
  Bytes bytes_per_workgroup{};

  template <class V>
  void visit(V& v) {
    v.param(bytes_per_workgroup, "bytes_per_workgroup",
            "output bytes one workgroup of the clearing kernel (a memset's grid) writes; also "
            "the grid of combine reduce's sum and copy kernels",
            Required{}, Min{"4B"}, Max{"1GiB"});
  }
};

// Vector operations per weight element a kernel spends widening 4-bit
// weights in registers for a matrix product in another type (none where the
// matrix instruction takes the pair as it is: fp8 x fp4 on CDNA4's f8f6f4).
struct DequantCosts {
  double fp4_ops{};
  double int4_ops{};

  template <class V>
  void visit(V& v) {
    v.param(fp4_ops, "fp4_ops", "operations per mxfp4 weight element", Required{}, Min{0.0},
            Max{1000.0});
    v.param(int4_ops, "int4_ops", "operations per int4 weight element", Required{}, Min{0.0},
            Max{1000.0});
  }
};

// The software router's top-k kernel, in vector element operations.
struct RouterCosts {
  std::uint32_t softmax_ops_per_score{};
  std::uint32_t sigmoid_ops_per_score{};
  std::uint32_t bias_ops_per_score{};
  std::uint32_t group_ops_per_score{};
  std::uint32_t group_pick_ops{};
  std::uint32_t select_ops{};
  std::uint32_t weight_ops{};
  std::uint32_t tokens_per_workgroup{};
  std::uint32_t threads{};

  template <class V>
  void visit(V& v) {
    v.param(softmax_ops_per_score, "softmax_ops_per_score", "softmax scoring, per expert score",
            Required{}, Max{10000u});
    v.param(sigmoid_ops_per_score, "sigmoid_ops_per_score", "sigmoid scoring, per expert score",
            Required{}, Max{10000u});
    v.param(bias_ops_per_score, "bias_ops_per_score",
            "the selection-only correction bias, per score", Required{}, Max{10000u});
    v.param(group_ops_per_score, "group_ops_per_score",
            "grouped top-k: keeping each group's two best scores, per score", Required{},
            Max{10000u});
    v.param(group_pick_ops, "group_pick_ops",
            "grouped top-k: per group and argmax pass over the group scores", Required{},
            Max{10000u});
    v.param(select_ops, "select_ops", "the final top-k: per candidate and argmax pass",
            Required{}, Max{10000u});
    v.param(weight_ops, "weight_ops", "per pick: its score gathered, renormalised and scaled",
            Required{}, Max{10000u});
    v.param(tokens_per_workgroup, "tokens_per_workgroup", "tokens one workgroup ranks",
            Required{}, Min{1u}, Max{65536u});
    v.param(threads, "threads", "threads of one workgroup", Required{}, Min{1u}, Max{4096u});
  }
};

// Our NVIDIA kernels' epilogues, issued by each thread in turn (bound by
// kernels.warp_issue_cycles), in thread instructions.
struct NvidiaEpilogueCosts {
  std::uint32_t gate_up_ops{};
  std::uint32_t gate_up_partial_ops{};
  std::uint32_t ws_gate_up_ops{};
  std::uint32_t ws_gate_up_partial_ops{};
  std::uint32_t down_ops{};
  std::uint32_t skip_ops_per_4{};

  template <class V>
  void visit(V& v) {
    v.param(gate_up_ops, "gate_up_ops", "gate_up_kernel, per element of a real row", Required{},
            Max{10000u});
    v.param(gate_up_partial_ops, "gate_up_partial_ops",
            "gate_up_kernel with split-K (partial sums stored), per element of a real row",
            Required{}, Max{10000u});
    v.param(ws_gate_up_ops, "ws_gate_up_ops",
            "gate_up_ws_kernel, per element of the tile, padding rows included", Required{},
            Max{10000u});
    v.param(ws_gate_up_partial_ops, "ws_gate_up_partial_ops",
            "gate_up_ws_kernel with split-K, per element of the tile", Required{}, Max{10000u});
    v.param(down_ops, "down_ops", "down_kernel, per element of a real row", Required{},
            Max{10000u});
    v.param(skip_ops_per_4, "skip_ops_per_4",
            "a padding row's loop step and row test, per four columns", Required{}, Max{10000u});
  }
};

// The fp8 intermediate's quantisation kernel (quant_inter_kernel).
struct NvidiaQuantCosts {
  std::uint32_t amax_ops{};
  std::uint32_t round_ops{};
  std::uint32_t group_ops_per_thread{};

  template <class V>
  void visit(V& v) {
    v.param(amax_ops, "amax_ops", "the amax pass, per element", Required{}, Max{10000u});
    v.param(round_ops, "round_ops", "the quantising pass, per element", Required{}, Max{10000u});
    v.param(group_ops_per_thread, "group_ops_per_thread",
            "the reduction of one scale group, per thread", Required{}, Max{10000u});
  }
};

// The 1-stage kernel (fused_kernel): its down phase per chunk of N output
// columns, and its phase-1 epilogue.
struct NvidiaFusedCosts {
  std::uint32_t convert_ops{};
  std::uint32_t scan_ops{};
  std::uint32_t add_ops{};
  std::uint32_t product_ops{};
  std::uint32_t activation_ops{};
  std::uint32_t activation_skip_ops{};
  std::uint32_t copy_ops{};
  std::uint32_t chunk_loop_ops{};
  std::uint32_t fragment_load_ops{};
  std::uint32_t fragment_ops{};

  template <class V>
  void visit(V& v) {
    v.param(convert_ops, "convert_ops",
            "e4m3 -> bf16 conversion of the chunk's down rows in LDS, per element", Required{},
            Max{10000u});
    v.param(scan_ops, "scan_ops",
            "the scan of the BM x N product, per element, padding rows included", Required{},
            Max{10000u});
    v.param(add_ops, "add_ops", "the add into y, per element of a real row", Required{},
            Max{10000u});
    v.param(product_ops, "product_ops",
            "what the counts leave out, per element of the BM x N product of a chunk", Required{},
            Max{10000u});
    v.param(activation_ops, "activation_ops",
            "phase-1 epilogue, per element of a real row of the BM x N/2 slice", Required{},
            Max{10000u});
    v.param(activation_skip_ops, "activation_skip_ops",
            "phase-1 epilogue, per element of a padding row", Required{}, Max{10000u});
    v.param(copy_ops, "copy_ops", "per 16-byte cp.async of the down rows, per thread",
            Required{}, Max{10000u});
    v.param(chunk_loop_ops, "chunk_loop_ops",
            "the chunk loop's wait, barriers and step, per thread", Required{}, Max{10000u});
    v.param(fragment_load_ops, "fragment_load_ops",
            "per wmma K step and fragment: its load from LDS with the addresses", Required{},
            Max{10000u});
    v.param(fragment_ops, "fragment_ops",
            "per fragment pair: its zeroing and store to LDS", Required{}, Max{10000u});
  }
};

// One K tile of our GEMM main loops (gemm_core_mma, gemm_core_wgmma), in
// instructions of one warp.
struct NvidiaMainLoopCosts {
  std::uint32_t tile_loop_ops{};
  std::uint32_t stage_division_ops{};
  std::uint32_t copy_ops{};
  std::uint32_t copy_issue_ops{};
  std::uint32_t mma_stage_ops{};
  std::uint32_t fragment_load_ops{};
  std::uint32_t fragment_convert_ops{};
  std::uint32_t scale_load_ops{};
  std::uint32_t scale_apply_ops{};
  std::uint32_t wgmma_step_ops{};
  std::uint32_t wgmma_sync_ops{};

  template <class V>
  void visit(V& v) {
    v.param(tile_loop_ops, "tile_loop_ops",
            "every warp: loop control, the wait's jump table, cp.async wait, barrier, commit",
            Required{}, Max{10000u});
    v.param(stage_division_ops, "stage_division_ops",
            "`tile % stages` by the run-time buffer count (paid twice a tile)", Required{},
            Max{10000u});
    v.param(copy_ops, "copy_ops", "per 16-byte cp.async a thread issues", Required{},
            Max{10000u});
    v.param(copy_issue_ops, "copy_issue_ops", "issuing the tile's copies", Required{},
            Max{10000u});
    v.param(mma_stage_ops, "mma_stage_ops",
            "gemm_core_mma: the stage's swizzled ldmatrix addresses", Required{}, Max{10000u});
    v.param(fragment_load_ops, "fragment_load_ops",
            "gemm_core_mma: per 32-byte K step and A or B fragment (ldmatrix, addresses)",
            Required{}, Max{10000u});
    v.param(fragment_convert_ops, "fragment_convert_ops",
            "gemm_core_mma: per fragment and step of an e4m3 tile converted to f16", Required{},
            Max{10000u});
    v.param(scale_load_ops, "scale_load_ops", "block_128: per scale loaded", Required{},
            Max{10000u});
    v.param(scale_apply_ops, "scale_apply_ops",
            "block_128 on mma.sync: per fragment pair, the scaled add of the partial sums",
            Required{}, Max{10000u});
    v.param(wgmma_step_ops, "wgmma_step_ops",
            "gemm_core_wgmma: per 32-byte K step (two LDS descriptors and the wgmma)", Required{},
            Max{10000u});
    v.param(wgmma_sync_ops, "wgmma_sync_ops", "gemm_core_wgmma: fences, commit and wait",
            Required{}, Max{10000u});
  }
};

// Our sort (kernels/moe/sort.hip): four kernels, or one when the rows fit
// one chunk; instructions per thread.
struct NvidiaSortCosts {
  std::uint32_t fuse_ops{};
  std::uint32_t count_ops{};
  std::uint32_t count_ops_per_expert{};
  std::uint32_t place_rank_ops{};
  std::uint32_t place_step_ops{};
  std::uint32_t scan_ops_per_expert{};
  std::uint32_t one_fuse_ops{};
  std::uint32_t one_fill_ops_per_pass{};
  std::uint32_t one_count_ops{};
  std::uint32_t one_scan_ops{};
  std::uint32_t one_map_ops_per_block{};
  std::uint32_t one_rank_ops{};
  std::uint32_t one_turn_ops{};
  std::uint32_t one_own_turn_ops{};

  template <class V>
  void visit(V& v) {
    v.param(fuse_ops, "fuse_ops", "fuse_kernel, per row or capacity entry", Required{},
            Max{10000u});
    v.param(count_ops, "count_ops", "count_kernel, per row", Required{}, Max{10000u});
    v.param(count_ops_per_expert, "count_ops_per_expert", "count_kernel, per expert",
            Required{}, Max{10000u});
    v.param(place_rank_ops, "place_rank_ops",
            "place_kernel: the rank among equal experts by 32 shuffles, per thread", Required{},
            Max{10000u});
    v.param(place_step_ops, "place_step_ops", "place_kernel: the 32 warp steps, per thread",
            Required{}, Max{10000u});
    v.param(scan_ops_per_expert, "scan_ops_per_expert",
            "scan_kernel: blocks per expert, shuffle scans, block -> expert map, per expert",
            Required{}, Max{10000u});
    v.param(one_fuse_ops, "one_fuse_ops",
            "sort_one_kernel: fused routing of a row and the counter cleared", Required{},
            Max{10000u});
    v.param(one_fill_ops_per_pass, "one_fill_ops_per_pass",
            "sort_one_kernel: each pass of the padding fill", Required{}, Max{10000u});
    v.param(one_count_ops, "one_count_ops", "sort_one_kernel: the LDS atomic and a barrier",
            Required{}, Max{10000u});
    v.param(one_scan_ops, "one_scan_ops", "sort_one_kernel: the scan", Required{}, Max{10000u});
    v.param(one_map_ops_per_block, "one_map_ops_per_block",
            "sort_one_kernel: the block -> expert map, per block of the busiest expert",
            Required{}, Max{10000u});
    v.param(one_rank_ops, "one_rank_ops", "sort_one_kernel: the rank among equal experts",
            Required{}, Max{10000u});
    v.param(one_turn_ops, "one_turn_ops", "sort_one_kernel: per warp with rows, a turn",
            Required{}, Max{10000u});
    v.param(one_own_turn_ops, "one_own_turn_ops", "sort_one_kernel: a warp's own turn",
            Required{}, Max{10000u});
  }
};

struct NvidiaKernelCosts {
  NvidiaEpilogueCosts epilogue;
  NvidiaQuantCosts quant;
  NvidiaFusedCosts fused;
  NvidiaMainLoopCosts main_loop;
  NvidiaSortCosts sort;

  template <class V>
  void visit(V& v) {
    v.section(epilogue, "epilogue", "the GEMM kernels' epilogues");
    v.section(quant, "quant", "the fp8 intermediate's quantisation kernel (quant_inter_kernel)");
    v.section(fused, "fused", "the 1-stage kernel (fused_kernel)");
    v.section(main_loop, "main_loop", "one K tile of the GEMM main loops, per warp");
    v.section(sort, "sort", "our sort's kernels");
  }
};

// The software fused-MoE kernels a machine runs (the software path): the
// knobs (which matrix instructions, fitted efficiencies and overheads, tile
// choices) and the kernels' costs in instructions. A kernel profile file
// holds one (workloads/kernel-profiles/*.yaml, named by the machine's
// `kernel_profile:`); a machine file's `kernels:` section overrides keys of
// it. The knobs' member defaults equal their YAML defaults; the costs have
// none in C++: every cost value is declared in a profile file, with its
// source (docs/calibration.md "Kernel profiles").
struct KernelsSpec {
  MatrixInstructions matrix_instructions{MatrixInstructions::isa};
  double matrix_efficiency{1.0};
  double wgmma_efficiency{1.0};
  double wgmma_fp8_efficiency{1.0};
  bool warp_specialized{false};
  double wgmma_ws_efficiency{1.0};
  Fp8Operands fp8_operands{Fp8Operands::native};
  CombineType combine{CombineType::bf16};
  Fp8Intermediate fp8_intermediate{Fp8Intermediate::epilogue};
  Duration sort_overhead{};
  Duration sort_one_overhead{};
  Duration clear_overhead{};
  Duration iteration_overhead{};
  Duration wgmma_fp8_tile_wait{};
  std::uint32_t one_stage_blocks{2};
  std::uint32_t min_block_m{32};
  std::uint32_t pipeline_stages{2};
  std::uint32_t wgmma_pipeline_stages{4};
  double fp8_conversions_per_clock{0.0};
  double warp_issue_cycles{0.0};
  double warp_issue_cycles_per_warp{0.0};

  EpilogueCosts epilogue;
  SortCosts sort;
  ClearCosts clear;
  DequantCosts dequant;
  RouterCosts router;
  std::optional<NvidiaKernelCosts> nvidia;

  template <class V>
  void visit(V& v) {
    v.param(matrix_instructions, "matrix_instructions",
            "matrix instructions of the kernels: isa (the fastest in the isa/ table), mma_sync "
            "(Hopper warp-level MMA, measured rates) or wgmma (Hopper warpgroup MMA at the isa/ "
            "rate for tiles of 64+ rows whose K rows are 32, 64 or 128 bytes, mma_sync for the "
            "rest; docs/gpu-kernels.md)",
            Default{MatrixInstructions::isa});
    v.param(matrix_efficiency, "matrix_efficiency",
            "fraction of those instructions' rate the MoE kernels' main loops sustain, on top "
            "of compute.matrix_efficiency (fitted per machine, docs/calibration.md)",
            Default{1.0}, Min{0.05}, Max{1.0});
    v.param(wgmma_efficiency, "wgmma_efficiency",
            "the same for the main loops that run wgmma (matrix_instructions: wgmma)",
            Default{1.0}, Min{0.05}, Max{1.0});
    v.param(wgmma_fp8_efficiency, "wgmma_fp8_efficiency",
            "the same for 8-bit wgmma loops, which wait for each K tile's partial sums and add "
            "them up in fp32 (fitted)",
            Default{1.0}, Min{0.05}, Max{1.0});
    v.param(warp_specialized, "warp_specialized",
            "with matrix_instructions wgmma: the kernels also have the warp-specialized wgmma "
            "loop (384 threads: a copying warpgroup and two multiplying ones; bf16 tiles "
            "384x128x128x64 and 384x128x256x64, plan::rules::ws_tile), and the heuristic gives "
            "bf16 layers of 128-row blocks 384x128x256x64",
            Default{false});
    v.param(wgmma_ws_efficiency, "wgmma_ws_efficiency",
            "the same as wgmma_efficiency for the warp-specialized loops (fitted)",
            Default{1.0}, Min{0.05}, Max{1.0});
    v.param(fp8_operands, "fp8_operands",
            "8-bit operands to the matrix pipe as they are (native) or converted to f16 first",
            Default{Fp8Operands::native});
    v.param(fp8_conversions_per_clock, "fp8_conversions_per_clock",
            "with fp8_operands f16: conversions of two 8-bit values to f16 a CU does per clock; "
            "each warp converts the fragments it multiplies, so the vector pipe works beside "
            "the matrix pipe (0: not modelled)",
            Default{0.0}, Min{0.0}, Max{4096.0});
    v.param(combine, "combine",
            "how the down stage adds a token's top-k rows into its output: atomic adds in bf16, "
            "or in fp32 (after a kernel of its own clears the output), or reduce: plain bf16 "
            "stores of every (token, slot) row, then a kernel summing each token's rows and one "
            "copying the sum into the output (2-stage layers; a 1-stage layer adds in bf16)",
            Default{CombineType::bf16});
    v.param(fp8_intermediate, "fp8_intermediate",
            "where an fp8 layer's intermediate is quantised: gate/up epilogue, or a kernel "
            "between the stages (gate/up then writes bf16)",
            Default{Fp8Intermediate::epilogue});
    v.param(iteration_overhead, "iteration_overhead",
            "fixed time of each GEMM main-loop iteration beyond its matrix work (barrier, "
            "waiting on and issuing the copies)",
            Default{"0ns"}, Max{"10us"});
    v.param(wgmma_fp8_tile_wait, "wgmma_fp8_tile_wait",
            "time each K tile of an 8-bit wgmma main loop waits for its products before adding "
            "them to the fp32 accumulators, with no matrix work of its own in flight (fitted)",
            Default{"0ns"}, Max{"10us"});
    v.param(one_stage_blocks, "one_stage_blocks",
            "the kernel heuristic picks the fused 1-stage kernel when this GPU's routed rows fit "
            "in this many blocks of block_m (0: never); with kernel.source aiter only for a format "
            "and block_m AITER has a 1-stage kernel for",
            Default{2u}, Max{64u});
    v.param(min_block_m, "min_block_m",
            "smallest token block (16 or 32) the kernel heuristic weighs when the scenario "
            "does not give one; decode layers, where every M ties, take it",
            Default{32u}, Min{16u}, Max{32u});
    v.param(pipeline_stages, "pipeline_stages",
            "LDS buffers of the GEMM loops when the scenario does not say (the heuristic uses "
            "fewer, down to 2, where the tiles would not fit in LDS)",
            Default{2u}, Min{1u}, Max{8u});
    v.param(wgmma_pipeline_stages, "wgmma_pipeline_stages",
            "the same for layers whose tiles run wgmma (matrix_instructions: wgmma; at least 3)",
            Default{4u}, Min{3u}, Max{6u});
    v.param(warp_issue_cycles, "warp_issue_cycles",
            "cycles between two instructions of one warp in the kernels' non-matrix code (the "
            "epilogues, the 1-stage kernel's down phase, the quantisation kernel): their vector "
            "work takes at least its instructions per thread times this, however idle the SIMDs "
            "are (latency-bound at low occupancy), and each K tile of the mma.sync main loops "
            "at least its multiplying warp's instructions times this (0: not modelled); with "
            "warp_issue_cycles_per_warp, the value at no warps resident",
            Default{0.0}, Min{0.0}, Max{64.0});
    v.param(warp_issue_cycles_per_warp, "warp_issue_cycles_per_warp",
            "cycles per instruction added to warp_issue_cycles per warp resident on each "
            "scheduler (SIMD): a warp issues every warp_issue_cycles + this x (warps per "
            "scheduler) cycles, the warps per scheduler being a kernel's workgroups resident "
            "on a CU (occupancy, at most the grid spread over the CUs) x its warps / SIMDs "
            "(0: the same rate at any occupancy)",
            Default{0.0}, Min{0.0}, Max{16.0});
    v.param(clear_overhead, "clear_overhead",
            "with combine fp32: fixed time of clearing the output beyond its stores (a memset "
            "node costs more than a kernel launch; fitted)",
            Default{"0ns"}, Max{"1ms"});
    v.param(sort_overhead, "sort_overhead",
            "fixed time of the sorting step beyond its modelled work (its serial scans and "
            "extra launches); with our kernels (matrix_instructions not isa), of the "
            "four-kernel sort of layers of more than 1024 rows",
            Default{"0ns"}, Max{"1ms"});
    v.param(sort_one_overhead, "sort_one_overhead",
            "with our kernels (matrix_instructions not isa): the same for the one-kernel sort "
            "of layers of up to 1024 rows (one launch, one workgroup; fitted on its own)",
            Default{"0ns"}, Max{"1ms"});
    v.section(epilogue, "epilogue",
              "vector work of the AITER-style kernels' epilogues (the kernels the isa/ "
              "instructions run), per output element");
    v.section(sort, "sort", "the AITER-style sorting kernel (moe_align_block_size)");
    v.section(clear, "clear", "the kernel that clears the output before an fp32 combine");
    v.section(dequant, "dequant",
              "in-register weight dequantisation of mixed pairs (4-bit weights), per weight element");
    v.section(router, "router", "the software router's top-k kernel");
    v.section(nvidia, "nvidia",
              "our HIP kernels as compiled for NVIDIA (kernels/moe/fused_moe.hip, sort.hip): "
              "instructions counted per construct; required with matrix_instructions mma_sync "
              "or wgmma");
  }
};

// A kernel profile file (workloads/kernel-profiles/<name>.yaml): the
// KernelsSpec keys at its top level.
struct KernelProfileSpec {
  std::string name;
  std::string description;
  KernelsSpec kernels;

  template <class V>
  void visit(V& v) {
    v.param(name, "name", "short profile name used in reports", Required{});
    v.param(description, "description", "one line on which kernels these are");
    kernels.visit(v);
  }
};

// The profile a machine of `isa` gets when its file names none.
std::string default_kernel_profile(IsaFamily isa);

// Cross-field checks of the kernels' keys, reported under `prefix` ("" in a
// profile file, "kernels." in a machine file that overrides them).
// `check_nvidia`: whether to check matrix_instructions against the nvidia:
// section (a machine makes that check itself, naming its profile).
void check_kernels(const KernelsSpec& k, config::Checker& c, const std::string& prefix,
                   bool check_nvidia = true);

// Cross-field checks of a profile that one parameter's range cannot express.
void check(const KernelProfileSpec& p, config::Checker& c);

}  // namespace tdmsim
