// The MoE plan: the one object every backend consumes (emulator, simulator,
// GPU kernels). Built from a resolved scenario; contains the routing, the
// padded block layout production fused-MoE kernels use, the kernel
// configuration and the tile jobs of each stage. See docs/moe-plan.md.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "descriptors/plan/amd_kernels.h"
#include "descriptors/plan/kernel_rules.h"
#include "workloads/config/resolved.h"

namespace tdmsim::plan {

// Marks a routed pick whose expert lives on another GPU (expert parallelism).
inline constexpr std::uint32_t kRemoteExpert = std::numeric_limits<std::uint32_t>::max();

// The layer as this GPU runs it (after tensor/expert-parallel sharding).
struct LayerShape {
  std::uint32_t tokens = 0;
  std::uint32_t hidden = 0;          // H
  std::uint32_t inter = 0;           // per-GPU intermediate of a routed expert: I / tp
  std::uint32_t shared_inter = 0;    // per-GPU intermediate of a shared expert (0 = none)
  std::uint32_t experts_total = 0;   // routed experts in the model (routing runs over all)
  std::uint32_t experts_local = 0;   // routed experts on this GPU: E / ep (global ids [0, E/ep))
  // Fused shared slots: shared_experts x shared_chunks. A shared expert whose
  // intermediate differs from `inter` is split along its intermediate
  // dimension into ceil(shared_inter / inter) chunks of the routed size (the
  // last one zero-padded), each an always-selected extra expert; see
  // shared_slot() and docs/moe-plan.md "Shared experts".
  std::uint32_t shared = 0;
  std::uint32_t shared_experts = 0;  // shared experts of the model
  std::uint32_t shared_chunks = 0;   // fused chunks per shared expert (0 = none)
  std::uint32_t top_k = 0;           // routed picks per token
  DType dtype = DType::bf16;         // activations (x, intermediate): the GEMM A operand
  DType weight_dtype = DType::bf16;  // expert weights: the GEMM B operand
  Quant quant = Quant::none;         // scales (workloads/specs/quant_formats.h)
  Activation activation = Activation::silu;
  double activation_limit = 0.0;
  bool weight_on_input = false;
  // The router (model `gating:`), for timing it (sim/programs/moe_router.h):
  // its scores, the selection-only correction bias and grouped top-k, the
  // bias of its linear layer; `router_timed` false when the scenario's
  // routing.router_stage is `given` (its output is in memory at the start).
  Scoring scoring = Scoring::softmax;
  bool correction_bias = false;
  bool router_bias = false;
  std::uint32_t n_group = 1;
  std::uint32_t topk_group = 1;
  bool router_timed = true;
  // Tokens this GPU's router scores: an expert-parallel rank routes only its
  // own share of the batch, before the dispatch, then computes on `tokens`
  // (its own and those it receives; docs/expert-parallel.md). 0: all of them.
  std::uint32_t router_tokens = 0;

  std::uint32_t routed_tokens() const { return router_tokens != 0 ? router_tokens : tokens; }
  // Fused top-k: routed picks plus shared experts as always-selected extra experts.
  std::uint32_t slots() const { return top_k + shared; }
  // Local experts as the fused kernels index them: routed [0, E_local), shared after.
  std::uint32_t experts_fused() const { return experts_local + shared; }
};

// What a fused shared slot (index s in [0, shape.shared), fused expert id
// experts_local + s, token slot top_k + s) computes: intermediate columns
// [column, column + columns) of shared expert `expert`; columns < inter means
// the chunk's remaining inter - columns columns are zero padding.
struct SharedSlot {
  std::uint32_t expert = 0;
  std::uint32_t column = 0;
  std::uint32_t columns = 0;
};
SharedSlot shared_slot(const LayerShape& shape, std::uint32_t s);

// Router output per token, over all routed experts (global ids).
struct Routing {
  std::vector<std::uint32_t> ids;  // [tokens][top_k], in selection order
  std::vector<float> weights;      // [tokens][top_k], after renormalisation and scaling
};

// What the expert capacity (routing.capacity_factor) did to the routing;
// all zero when the scenario sets no capacity. Counts are over the whole
// batch and all routed experts (before expert parallelism).
struct CapacityReport {
  bool enabled = false;
  double factor = 0.0;
  CapacityOverflow overflow = CapacityOverflow::drop;
  std::uint32_t capacity = 0;        // picks per expert
  std::uint64_t pairs = 0;           // token-expert picks: tokens * top_k
  std::uint64_t overflowed = 0;      // picks above their first expert's capacity
  std::uint64_t dropped = 0;         // picks that run nowhere
  std::uint64_t rerouted = 0;        // picks moved to another expert
  std::uint32_t tokens_with_drops = 0;  // tokens that lost at least one pick
  std::uint32_t tokens_dropped = 0;     // tokens that lost every routed pick
  std::uint32_t experts_over = 0;       // experts whose demand exceeded capacity
  std::uint32_t max_demand = 0;         // most picks any expert was asked for
};

// The routing as the fused kernels see it on this GPU: per token `slots()`
// entries; a routed pick holds its fused local expert id (or kRemoteExpert),
// shared experts sit at slots [top_k, top_k + shared) with weight 1.
struct FusedRouting {
  std::vector<std::uint32_t> expert;  // [tokens][slots]
  std::vector<float> weight;          // [tokens][slots]
};

// The padded block layout (vLLM/SGLang/AITER "moe_align_block_size"): rows
// grouped by fused expert, each expert's rows padded up to a multiple of
// block_m. A row id is token * slots + slot; padding rows hold `sentinel`.
struct BlockLayout {
  std::uint32_t block_m = 0;
  std::uint32_t sentinel = 0;               // tokens * slots: "no row"
  std::uint32_t padded_rows = 0;            // meaningful prefix of sorted_rows
  std::uint32_t capacity = 0;               // slots*T + E_fused*M - slots (allocation bound)
  std::vector<std::uint32_t> sorted_rows;   // size capacity; rows then sentinels
  std::vector<float> sorted_weights;        // weight of each sorted row, 0 for padding
  std::vector<std::uint32_t> block_expert;  // fused expert of each block [padded_rows / block_m]
  std::vector<std::uint32_t> expert_rows;   // real rows per fused expert [experts_fused]
  std::vector<std::uint32_t> expert_first_block;  // first block of each expert [experts_fused + 1]
};

enum class Stage : std::uint8_t { fused, gate_up, down };

// One workgroup's work: rows of one block x one N tile x one K split.
struct TileJob {
  Stage stage = Stage::gate_up;
  std::uint32_t block = 0;       // block index in the layout
  std::uint32_t expert = 0;      // fused local expert id
  std::uint32_t n_tile = 0;      // N tile index (gate_up and fused: over 2*I; down: over H)
  std::uint32_t k_split = 0;     // split-K index
  std::uint32_t valid_rows = 0;  // real (non-padding) rows in the block
};

// The kernel configuration actually used, and why (heuristic or scenario).
// Where a layer's kernel configuration came from (kernel_request.h): a row
// of the scenario's tuned table (kernel.config), or the rule that chose
// instead (kernel.heuristic), recorded in every output.
struct KernelSource {
  std::string heuristic = "tdmsim";  // kernel.heuristic
  std::string config_file;           // kernel.config as resolved; empty: none given
  int config_line = 0;               // the row that chose; 0: none matched
  std::uint32_t padded_token = 0;    // the token count the table was looked up with
  bool bypassed = false;             // AITER skips its table for this layer (use_cfg)
  std::string detail;                // the key looked up and why rows did not match
  std::string chosen_by;             // "kernel.config row", "scenario", "tdmsim heuristic", "aiter heuristic"
};

// What a tuned table's kernel names (or the scenario's kernel.* keys of the
// same names) say of AITER's 2-stage kernels' on-chip resources; 0 where
// nothing says (the calibration files' short names, scenarios).
// - LDS buffers of the CK GEMM pipelines (moe_ck2stages_gemm1_..._v1_...: 1;
//   v2 and v3: 2); 0: 2 while pipeline_stages >= 2 (plan::aiter_lds_buffers).
// - Workgroups a CU holds of the assembly stage-1 kernel, as its name's
//   `_<N>tg` field says (fmoe_stage1_..._32x128_3tg_pf3: 3); 0: as many as
//   CK's register and LDS estimate of the tile lets in.
// - How the down kernel combines, as a FlyDSL stage-2 kernel's mode says
//   (flydsl_moe2_..._reduce: plain stores, then a sum and a copy; _atomic:
//   atomic adds as CK's kernels); machine: the machine's kernels.combine.
struct AiterKernelTraits {
  std::uint32_t gate_up_lds_buffers = 0, down_lds_buffers = 0;
  std::uint32_t gate_up_workgroups_per_cu = 0;
  DownCombine down_combine = DownCombine::machine;
  bool operator==(const AiterKernelTraits&) const = default;
};
// How outputs name a down combine (the kernel: line, `config aiter-tile`).
inline std::string_view down_combine_text(DownCombine c) {
  return c == DownCombine::reduce   ? "reduce, plain stores then a sum and a copy"
         : c == DownCombine::atomic ? "atomic adds"
                                    : "the machine's kernels.combine";
}

struct KernelChoice {
  std::uint32_t stages = 2;
  std::uint32_t block_m = 0;
  KernelTile gate_up_tile;  // the fused 1-stage kernel uses this tile
  KernelTile down_tile;
  std::uint32_t split_k = 1;
  // Whether the down stage's K is split too: our kernels split both stages;
  // AITER's split only stage 1 (fused_moe.py passes ksplit to its stage-1
  // call alone), so with kernel.source aiter down runs whole.
  bool split_down = true;
  std::uint32_t pipeline_stages = 2;
  std::uint32_t raster_group = 1;  // blocks per group of the job order (rules::job_at)
  std::string reason;       // e.g. "block_m 32: fewest waves over 256 CUs"
  KernelSource source;
  KernelCode code = KernelCode::tdmsim;  // kernel.source: whose kernels run the layer
  AiterKernelTraits aiter_traits;        // AITER's kernels only
};

// Element ranges a tile job covers (half-open [begin, end)), so every backend
// cuts the GEMMs the same way. N: gate_up and fused job n cover intermediate
// columns [n*N/2, (n+1)*N/2) of BOTH gate and up (so the activation fits in
// the epilogue; a fused job then multiplies its slice of the intermediate by
// the matching columns of down into all of H and scatter-adds the partial
// sums into the tokens); down jobs cover hidden columns [n*N, (n+1)*N). K:
// split s of k_tiles = ceil(K / tile.k) covers tiles [s*k_tiles/splits,
// (s+1)*k_tiles/splits), splits = stage_splits (never empty: choose_kernel
// keeps split_k <= the K tiles of every split stage); K is H for
// gate_up, I for down; a fused job covers all of H, then its own N/2 columns
// of I. Ends are clamped to the dimension.
struct Range {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};
Range job_n_range(const LayerShape& shape, const KernelChoice& kernel, const TileJob& job);
// The K splits of a stage's jobs: split_k for gate/up, for down where
// split_down, else 1; the fused kernel never splits.
std::uint32_t stage_splits(const KernelChoice& kernel, Stage stage);
Range job_k_range(const LayerShape& shape, const KernelChoice& kernel, const TileJob& job);

// Gate/up tile names. The model's gate/up (and fused) tile N counts the
// columns of gate and up together (job_n_range above: N/2 of each). AITER
// names its CK tiles by NPerBlock, the columns of gate a workgroup takes, and
// it takes as many of up: its stage-1 GEMM's N is inter_dim (aiter
// csrc/ck_gemm_moe_2stages_codegen/gemm_moe_ck2stages.cu, N = w1.size(1) /
// 2), and composable_kernel's GridwiseMoeGemm loads the up columns beside the
// gate ones (gridwise_moe_gemm.hpp, IsInputGemm: p_b_grid_up at
// expert_stride / 2). So with kernel.source aiter a gate_up_tile as named
// (scenario, sweep or kernel.config row) is N per half: model_gate_up_tile
// doubles it on the way in, named_gate_up_tile halves it for every output.
// Our own kernels (kernel.source tdmsim) name tiles as the model does.
KernelTile model_gate_up_tile(const KernelTile& named, KernelCode code);
KernelTile named_gate_up_tile(const KernelChoice& kernel);

// The default tile of a stage for a block size (heuristic, docs/moe-plan.md).
KernelTile default_tile(std::uint32_t block_m);
// The default for a layer's scaling mode (docs/moe-plan.md "Kernel heuristic").
KernelTile default_tile(std::uint32_t block_m, Quant quant);

// Whether the machine's kernels run this tile's main loop with Hopper's wgmma
// (kernels.matrix_instructions: wgmma): rules::wgmma_tile, the rule our sm_90a
// kernels apply (kernel_rules.h, shared with kernels/moe/fused_moe.hip).
// Warp-specialized tiles (kernels.warp_specialized, rules::ws_tile) are wgmma tiles too.
bool wgmma_tile(const MachineSpec& machine, const KernelTile& tile, DType dtype);
// Whether the tile runs the warp-specialized wgmma loop (kernels.warp_specialized).
bool ws_tile(const MachineSpec& machine, const KernelTile& tile, DType dtype);
inline constexpr std::uint32_t kWgmmaMinStages = rules::kWgmmaMinStages;
// The code-object target our AMD kernels' loops are charged from
// (plan::loop_mix) when a layer runs them: kernel.source tdmsim on a machine
// whose kernels issue the ISA's instructions, of a family with a committed
// summary (mix_target); nothing otherwise.
std::optional<CdnaTarget> our_cdna_target(const MachineSpec& machine, KernelCode source);

struct MoePlan {
  LayerShape shape;
  std::uint64_t seed = 0;
  Routing routing;  // after the expert capacity, if any
  CapacityReport capacity;
  FusedRouting fused;
  BlockLayout layout;
  KernelChoice kernel;
  std::vector<TileJob> stage1;  // fused (1-stage) or gate_up (2-stage)
  std::vector<TileJob> stage2;  // down (2-stage); empty for 1-stage
};

// Per-expert routing weights are produced by the scenario's routing source; a
// custom policy may replace them (descriptor API). Throws config::ConfigError
// (naming the scenario file and key) for an unreadable or inconsistent trace.
MoePlan build_plan(const config::ResolvedScenario& scenario);

// Pieces of build_plan, exposed for tests and for the GPU runner.
LayerShape layer_shape(const config::ResolvedScenario& scenario);
FusedRouting fuse_routing(const LayerShape& shape, const Routing& routing);
BlockLayout sort_into_blocks(const LayerShape& shape, const FusedRouting& fused,
                             std::uint32_t block_m);
// `fixed_by` names, in the reason, what set block_m, the tiles, stages and
// split_k of `requested` ("scenario", or a kernel.config row).
// `traits` gives what a table row's kernel names (or the scenario's keys)
// say of AITER's kernels: CK pipelines, an assembly kernel's workgroups a CU.
KernelChoice choose_kernel(const LayerShape& shape, const KernelSpec& requested,
                           const MachineSpec& machine, const FusedRouting& fused,
                           std::string_view fixed_by = "scenario", const AiterKernelTraits& traits = {});
std::vector<TileJob> tile_jobs(const LayerShape& shape, const BlockLayout& layout,
                               const KernelChoice& kernel, Stage stage);

}  // namespace tdmsim::plan
