// Internal to the MoE tile programs (sim/programs/moe_*.cpp): the per-layer
// data every kernel's program() reads (Layer), the instruction counts the
// programs charge (k* constants, with where each comes from), and the helpers
// the kernel families share. Not part of the simulator's interface: include
// sim/programs/moe_kernels.h for that.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "descriptors/plan/amd_kernels.h"
#include "descriptors/plan/moe_plan.h"
#include "isa/tile_program.h"
#include "sim/programs/moe_kernels.h"
#include "workloads/specs/kernel_profile.h"

namespace tdmsim::sim::programs::moe_detail {

using plan::MoePlan;
using plan::Stage;
using plan::TileJob;
using isa::gathered;
using isa::strided;

// What each construct of the kernels costs in instructions is the machine's
// kernel profile (MachineSpec::kernels: workloads/kernel-profiles/*.yaml,
// each value with its source; docs/calibration.md "Kernel profiles"), kept
// in Layer. What stays here is the kernels' shape, read off their source.
//
// Our sort's chunk (kernels/moe/sort.hip) and the workgroup of its fuse and
// scan kernels.
inline constexpr std::uint32_t kSortChunk = plan::rules::kSortChunk;
inline constexpr std::uint32_t kSortThreads = 256;
// The persistent warp-specialized gate/up kernel's consumer warpgroups
// (gate_up_ws_kernel), which apply its epilogue.
inline constexpr std::uint32_t kWsConsumerThreads = 256;
inline constexpr std::uint32_t kVgprs = plan::rules::kMatrixKernelVgprs;  // per thread, for the MFMA/WGMMA kernels

inline std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

// Bytes of `elems` elements of `t` (whole bytes, rounding up 4-bit pairs).
inline std::uint32_t bytes_of(std::uint64_t elems, DType t) {
  return static_cast<std::uint32_t>((elems * dtype_bits(t) + 7) / 8);
}

// Everything a kernel's program() needs, shared by the kernels of a layer so
// the plan's vectors are not copied per workgroup.
struct Layer {
  plan::LayerShape shape;
  plan::KernelChoice kernel;
  MoeBuffers buf;
  bool tdm = false;         // token rows arrive through the tensor data movers
  DType mma = DType::bf16;  // matrix-pipe dtype of the mma.sync / ISA loops
  DType mma_wgmma = DType::bf16;  // and of the wgmma loops (8-bit operands as they are)
  bool mma_sync = false;    // our NVIDIA kernels (kernels.matrix_instructions: mma_sync or wgmma)
  // Our kernels on a CDNA machine (kernel.source tdmsim): the code objects
  // whose main-loop mix and LDS they are charged (plan::mix_target); none for
  // AITER's kernels and other machines.
  std::optional<plan::CdnaTarget> amd_target;
  // The kernel profile's costs (MachineSpec::kernels): the AITER-style
  // kernels' epilogues and sort, and, with mma_sync, our NVIDIA kernels'
  // counted instructions.
  EpilogueCosts epilogue;
  SortCosts sort;
  NvidiaKernelCosts nv;
  // What amd_loop_of charges a main loop of each plan::LoopKernel (indexed by
  // it) for the tile it was looked up with: looked up once per layer in
  // build() (amd_loop_lookup), since every workgroup's program needs it and
  // the lookup (a nearest-tile search over the compiled table, with
  // logarithms) cost more than the rest of building a program. A tile other
  // than the one looked up is looked up as it comes.
  struct AmdLoop {
    bool looked_up = false;
    std::uint32_t m = 0, n = 0, k = 0;  // the tile
    std::optional<plan::MixChoice> mix;
    std::uint32_t lds_bytes = 0;  // plan::amd_kernel_lds_bytes (when there is a mix)
  };
  std::array<AmdLoop, 3> amd_loops{};
  bool wgmma_gate_up = false, wgmma_down = false;  // plan::wgmma_tile of each stage's tile
  bool ws_gate_up = false, ws_down = false;        // plan::ws_tile of each stage's tile
  // Vector-pipe element operations per fp8 -> f16 conversion of a pair
  // (kernels.fp8_conversions_per_clock; 0: conversions not modelled).
  double lane_ops_per_conversion = 0;
  // Vector-pipe element operations per weight element a main loop dequantises
  // in registers before its matrix instructions (mixed pairs whose weights
  // the matrix pipe does not take as they are; dequant_ops_per_weight).
  double dequant_ops = 0;
  DType inter_dtype = DType::bf16;  // what gate/up stores (bf16 when a kernel quantises)
  std::uint32_t block_m = 0;
  std::uint32_t padded_rows = 0;
  std::uint32_t blocks = 0;
  std::uint64_t x_row = 0;    // bytes of one activation row (H elements)
  std::uint64_t out_row = 0;  // bytes of one output row (H elements of the combine type)
  std::uint32_t out_elem = 2; // bytes of one output element
  std::vector<TileJob> stage1, stage2;
  std::vector<std::uint32_t> block_expert;
  std::uint64_t sort_overhead_ps = 0;      // kernels.sort_overhead (the four-kernel sort)
  std::uint64_t sort_one_overhead_ps = 0;  // kernels.sort_one_overhead (the one-kernel sort)
  std::uint64_t clear_overhead_ps = 0;  // kernels.clear_overhead
  std::uint64_t vgpr_file_bytes = 0;    // compute.vgpr_file_per_cu
  std::uint64_t lds_file_bytes = 0;     // compute.lds_per_cu
  // Workgroups a CU holds of AITER's 1-stage assembly kernel of this layer's
  // tile (plan::aiter_one_stage_workgroups_per_cu: its kernel list's tg_num_perCU).
  std::uint32_t aiter_one_stage_per_cu = 1;
  // Our sort's scratch (sort.hip): fused expert and weight per row, counts
  // per chunk and expert (the one kernel: rows per expert), first block per
  // expert; and per chunk, the first row of each warp with a local row
  // (place_kernel's serial loads).
  std::uint64_t l2_hit_ps = 0;  // memory.l2.hit_latency
  std::uint64_t topk_weights = 0, fused_rows = 0, chunk_counts = 0, first_block = 0;
  std::vector<std::vector<std::uint32_t>> chunk_warp_rows;
  std::uint64_t iteration_overhead_ps = 0;  // kernels.iteration_overhead
  std::uint64_t fp8_tile_wait_ps = 0;  // kernels.wgmma_fp8_tile_wait
  // Per block: byte offsets of its real rows' tokens in x and in out.
  // (Programs point into these: MemRange::gather. Built before any program.)
  std::vector<std::vector<std::uint64_t>> x_rows, out_rows;
  // kernels.combine reduce (2-stage): down stores each real row to its own
  // (token, slot) row of buf.topk_out; per block the byte offsets of those rows.
  bool reduce_combine = false;
  std::vector<std::vector<std::uint64_t>> topk_rows;
  std::uint32_t slots = 0;                   // rows per token (top-k, shared experts fused in)
  std::uint64_t combine_bytes_per_wg = 0;    // kernels.clear.bytes_per_workgroup: the streaming kernels' grid
};

// The 16 x 16 fragments of an M x N tile (at least one each way), the grid of
// the kernel's 8 warps over them (plan::rules::warp_grid, as
// kernels/moe/fused_moe.hip WarpGrid) and the fragments of one warp, tm x tn.
struct Fragments {
  std::uint32_t fm, fn, wm, wn, tm, tn;
};

// Shared helpers (moe_program_common.cpp; each is described there).
// A host-launched grid of `workgroups` programs.
isa::KernelLaunch launch(std::string name, std::uint32_t workgroups,
                         std::function<isa::TileProgram(std::uint32_t)> program);
// The same from a builder into a program (KernelLaunch::program_into).
isa::KernelLaunch launch_into(std::string name, std::uint32_t workgroups,
                              std::function<void(std::uint32_t, isa::TileProgram&)> into);
isa::MemRange token_rows(bool tdm, std::uint64_t addr, std::uint32_t row_bytes, std::uint32_t rows,
                         const std::vector<std::uint64_t>& offsets, std::int64_t iter_stride = 0);
// The range keeps a pointer to `offsets` (MemRange::gather): a temporary
// would leave it dangling, so none is taken.
isa::MemRange token_rows(bool tdm, std::uint64_t addr, std::uint32_t row_bytes, std::uint32_t rows,
                         const std::vector<std::uint64_t>&& offsets, std::int64_t iter_stride = 0) = delete;
std::uint32_t lds_for(const Layer& l, std::uint32_t n_rows, std::uint32_t k);
// AITER's MoE kernels (kernel.source aiter, which only the CDNA machines
// take). They load their pre-shuffled weights straight into registers; our
// own kernels (kernel.source tdmsim, on any machine) keep both operands in LDS.
inline bool aiter_gemm(const Layer& l) { return !l.mma_sync && l.kernel.code == KernelCode::aiter; }
// An AITER 2-stage GEMM workgroup's LDS and registers (CK's GridwiseMoeGemm;
// a gate/up kernel whose name says its workgroups a CU, the CU's registers
// and LDS shared that many ways: registers_shared, plan::aiter_gate_up_lds_share).
void aiter_gemm_resources(const Layer& l, const KernelTile& tile, bool gate_up, isa::TileProgram& p);
// An assembly kernel that `per_cu` workgroups share a CU (its kernel list's
// tg_num_perCU, its name's _<N>tg): the registers of one workgroup are the
// file's share, so registers hold no fewer than that many. (Its LDS stays
// what the program says: a tile whose LDS the CU cannot hold is refused.)
void registers_shared(const Layer& l, std::uint32_t per_cu, isa::TileProgram& p);

// fp32 planes of gate/up partial sums under split-K: one a split for our
// kernels (plain stores, the reduction reads every plane); one for AITER's,
// which split stage 1 only and add every split into one zeroed buffer
// atomically (its zeroing is not modelled: a memset of that buffer).
inline std::uint32_t partial_planes(const Layer& l) { return l.kernel.split_down ? l.kernel.split_k : 1; }
// A loop whose weights go to registers: its loads from `first_weight` on are
// MemRange::to_registers (those before it, the A rows, go through LDS; a loop
// whose A is already on chip has none), and Loop::b_in_registers.
void weights_in_registers(isa::Loop& loop, std::size_t first_weight = 1);
std::uint32_t gemm_vgprs(const Layer& l, const KernelTile& tile, bool wgmma);
std::uint32_t copies_ahead(const Layer& l, const KernelTile& tile, bool wgmma);
// A GEMM workgroup's program without its loads and work, with `loops`
// default loops, built into p (TileProgram::reset).
void base_program(const Layer& l, const KernelTile& tile, std::uint32_t n_rows, bool wgmma, std::size_t loops,
                  isa::TileProgram& p);
Fragments fragments(std::uint32_t m, std::uint32_t n);
std::uint64_t fp8_conversions(const KernelTile& t);
std::uint64_t epilogue_skip_ops(const Layer& l, const TileJob& j, std::uint32_t cols);
std::uint32_t tile_instructions(const Layer& l, const KernelTile& tile, bool wgmma);
void matrix_of(const Layer& l, bool wgmma, bool ws, const KernelTile* tile, isa::Loop& loop);
// Our AMD kernel's main loop on CDNA (Layer::amd_target): its code object's
// instruction mix, its LDS, and bf16 MFMAs where it converts e4m3.
void amd_loop_of(const Layer& l, plan::LoopKernel kind, const KernelTile& tile, isa::TileProgram& p, isa::Loop& loop);
// The mix and LDS amd_loop_of charges a loop of `kind` with `tile` (the
// lookup itself: Layer::amd_loops keeps its result per layer).
Layer::AmdLoop amd_loop_lookup(const Layer& l, plan::LoopKernel kind, const KernelTile& tile);
void block_prologue(const Layer& l, std::uint32_t block, isa::TileProgram& p);
// A main loop's in-register dequantisation of an n x k weight tile per
// iteration (mixed pairs, Layer::dequant_ops), beside its matrix work.
void dequant_of(const Layer& l, std::uint32_t n, std::uint32_t k, isa::Loop& loop);
// The scales a job reads, loaded up front: its rows' activation scales along
// `k_len` and the scales of its `n_rows` x `k_len` weights; with `down_n`,
// also those of a second weight block of `down_n` rows x `down_k` (the fused
// 1-stage kernel's slice of w_down, whose activations, the intermediate, are
// its own and need no scales read).
void scale_prologue(const Layer& l, const TileJob& j, std::uint32_t n_rows, std::uint32_t k_len,
                    isa::TileProgram& p, std::uint32_t down_n = 0, std::uint32_t down_k = 0);
std::uint64_t w13_of(const Layer& l, std::uint32_t expert);
std::uint64_t w2_of(const Layer& l, std::uint32_t expert);

// The 2-stage kernels and what runs between them (moe_gemm_programs.cpp).
// (gate_up, down and fused build into p, whatever it held: KernelLaunch::program_into.)
void gate_up_program(const Layer& l, const TileJob& j, isa::TileProgram& p);
isa::TileProgram reduce_program(const Layer& l, std::uint32_t block, std::uint32_t valid);
isa::TileProgram quant_program(const Layer& l, std::uint32_t row, bool real);
isa::TileProgram zero_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs);
void down_program(const Layer& l, const TileJob& j, isa::TileProgram& p);
// kernels.combine reduce: the sum of each token's top-k rows (workgroup wg of
// wgs, a contiguous run of tokens) and its copy into the output.
isa::TileProgram topk_sum_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs);
isa::TileProgram out_copy_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs);

// The 1-stage kernel (moe_fused_program.cpp).
void fused_program(const Layer& l, const TileJob& j, isa::TileProgram& p);

// The sort kernels (moe_sort_programs.cpp), and the software path's sort
// appended to `k`, its scratch allocated from `as`.
void add_sort_kernels(const std::shared_ptr<Layer>& l, AddressSpace& as, const MoePlan& plan,
                      const MachineSpec& machine, MoeKernels& k);
isa::TileProgram sort_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs);
isa::TileProgram sort_fuse_program(const Layer& l, std::uint32_t wg, std::uint32_t capacity);
isa::TileProgram sort_count_program(const Layer& l, std::uint32_t chunk);
isa::TileProgram sort_scan_program(const Layer& l, std::uint32_t chunks);
isa::TileProgram sort_place_program(const Layer& l, std::uint32_t chunk);
isa::TileProgram sort_one_program(const Layer& l, std::uint32_t capacity);

}  // namespace tdmsim::sim::programs::moe_detail
