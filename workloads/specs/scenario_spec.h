// One MoE layer run: model + machine + tokens + dtype + routing + kernel
// config, described by workloads/scenarios/*.yaml.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "workloads/specs/inert_keys.h"
#include "workloads/specs/machine_spec.h"
#include "workloads/specs/model_spec.h"
#include "workloads/specs/quant_formats.h"
#include "workloads/specs/serving_spec.h"

namespace tdmsim {

// A fused-MoE kernel tile as public tuning tables name it: threads x M x N x K,
// e.g. "256x32x64x128"; "auto" (all zero) lets the documented heuristic choose.
struct KernelTile {
  std::uint32_t threads = 0;
  std::uint32_t m = 0;
  std::uint32_t n = 0;
  std::uint32_t k = 0;
  bool is_auto() const { return threads == 0; }
  auto operator<=>(const KernelTile&) const = default;
  // The largest threads, N or K a tile may name (scenario keys and tuned
  // tables alike): no GPU tile is wider, and an AITER gate/up N, doubled into
  // the model's (plan::model_gate_up_tile), stays far inside 32 bits.
  static constexpr std::uint32_t kMaxDim = 4096;
};

// An expert's capacity as a multiple of its even share of the batch's picks:
// capacity = ceil(factor * tokens * top_k / experts) (GShard, Switch
// Transformer). `none` (factor 0) sets no limit; any given factor is a finite
// number > 0.
struct CapacityFactor {
  double factor = 0.0;
  bool none() const { return factor == 0.0; }
  auto operator<=>(const CapacityFactor&) const = default;
};

struct RoutingSpec {
  RoutingSource source{};
  double zipf_s{};
  double lognormal_sigma{};
  std::vector<std::uint32_t> hot_experts;
  double hot_fraction{};
  std::string trace;
  RouterStage router_stage{};
  CapacityFactor capacity_factor{};
  CapacityOverflow overflow{};

  template <class V>
  void visit(V& v) {
    v.param(source, "source", "where top-k expert ids come from", Default{RoutingSource::uniform});
    v.param(zipf_s, "zipf_s", "Zipf exponent s of expert popularity (source: zipf)",
            Default{1.0}, Min{0.0}, Max{10.0});
    v.param(lognormal_sigma, "lognormal_sigma",
            "sigma of the log-normal per-expert load (source: lognormal)", Default{1.0},
            Min{0.0}, Max{10.0});
    v.param(hot_experts, "hot_experts", "expert ids that receive hot_fraction of picks (source: hot)");
    v.param(hot_fraction, "hot_fraction", "share of picks going to hot_experts (source: hot)",
            Default{0.5}, Min{0.0}, Max{1.0});
    v.param(trace, "trace", "routing trace file, relative to this file (source: trace)");
    v.param(router_stage, "router_stage",
            "timed: the router (gate GEMM, scoring, top-k) runs before the sort, on both paths; "
            "given: its top-k ids are in memory when the layer starts (fused-MoE kernel benchmarks)",
            Default{RouterStage::timed});
    v.param(capacity_factor, "capacity_factor",
            "expert capacity as a multiple of the even share: ceil(factor * tokens * top_k / "
            "experts) picks per expert, picks above it overflow (none = no limit)",
            Default{"none"});
    v.param(overflow, "overflow",
            "what happens to a pick above its expert's capacity: drop (it adds nothing to the "
            "output) or reroute (to the token's next-best expert with room; dropped if none has)",
            Default{CapacityOverflow::drop});
  }
};

struct KernelSpec {
  std::uint32_t stages{};
  std::uint32_t block_m{};
  KernelTile gate_up_tile{};
  KernelTile down_tile{};
  std::uint32_t split_k{};
  std::uint32_t pipeline_stages{};
  std::uint32_t gate_up_lds_buffers{};
  std::uint32_t down_lds_buffers{};
  std::uint32_t gate_up_workgroups_per_cu{};
  DownCombine down_combine{};
  std::uint32_t raster_group{};
  std::string config;
  KernelHeuristic heuristic{};
  KernelCode source{};

  template <class V>
  void visit(V& v) {
    v.param(stages, "stages",
            "1 = fused single kernel, 2 = gate/up then down, 0 = heuristic (with heuristic aiter, AITER's "
            "block_m and split then follow the count given)",
            Default{0u}, Max{2u});
    v.param(block_m, "block_m",
            "token block size M of the sorted layout (0 = heuristic): 16, 32, 64, 128 or 256; with "
            "source aiter any multiple of 16 (AITER's tables time blocks of 48, 80, 96, ...)",
            Default{0u}, Max{256u});
    v.param(gate_up_tile, "gate_up_tile",
            "tile of the gate/up kernel (also the fused 1-stage kernel); N counts the gate and up "
            "columns together, except with source aiter, where N is AITER's NPerBlock: N of gate "
            "and N of up (a 1-stage layer: 256xMxNxK, N >= 128, is AITER's assembly kernel of "
            "subGU_m M, subGU_n N)",
            Default{"auto"});
    v.param(down_tile, "down_tile", "tile of the down kernel", Default{"auto"});
    v.param(split_k, "split_k",
            "K splits (1 = none, 0 = heuristic): of both stages, or of stage 1 only with source aiter, "
            "as AITER splits; none with stages 1 (refused); one larger than a split stage's K tiles is "
            "lowered to them (they depend on the layer's block_m, so on its tokens)",
            Default{0u}, Max{64u});
    v.param(pipeline_stages, "pipeline_stages",
            "software pipeline depth (buffers in LDS; 0 = heuristic; AITER's CK kernels: the loads in "
            "flight, their LDS buffers as kernel.*_lds_buffers say where given)",
            Default{0u}, Max{8u});
    // What a tuned table's CK kernel name says (..._v1_...: 1; v2, v3: 2),
    // so that a scenario can run the kernel a table names (source aiter).
    v.param(gate_up_lds_buffers, "gate_up_lds_buffers",
            "LDS buffers of AITER's CK gate/up kernel, as its name's pipeline says: 1 (v1) or 2 (v2, "
            "v3); 0 = by pipeline depth (source aiter; not used where the layer runs AITER's 1-stage kernel)",
            Default{0u}, Max{2u});
    v.param(down_lds_buffers, "down_lds_buffers",
            "the same for AITER's CK down kernel", Default{0u}, Max{2u});
    // What an assembly stage-1 kernel's name says (..._32x128_3tg_pf3: 3).
    v.param(gate_up_workgroups_per_cu, "gate_up_workgroups_per_cu",
            "workgroups a CU holds of AITER's gate/up kernel, as an assembly stage-1 kernel's name "
            "says (fmoe_stage1_..._3tg_pf3: 3; its registers and LDS shared that many ways); 0 = as "
            "many as CK's register and LDS estimate of the tile allows (source aiter, 2-stage)",
            Default{0u}, Max{16u});
    // What a FlyDSL stage-2 kernel's name says (flydsl_moe2_..._reduce).
    v.param(down_combine, "down_combine",
            "how AITER's down kernel adds a token's top-k rows into its output row: machine (the "
            "machine's kernels.combine), atomic (bf16 atomic adds: CK's kernels, FlyDSL's _atomic) or "
            "reduce (FlyDSL's _reduce: plain stores of every (token, slot) row, then a kernel summing "
            "each token's rows and one copying the sum; source aiter, 2-stage)",
            Default{DownCombine::machine});
    v.param(raster_group, "raster_group",
            "blocks per group of the workgroup order: a group's blocks sweep the N tiles "
            "together (1 = block after block, 0 = heuristic; with source aiter 1, AITER's "
            "block-major grids)",
            Default{0u}, Max{256u});
    v.param(config, "config",
            "tuned kernel table in AITER's CSV columns, relative to this file: the row of this "
            "layer (AITER's padded-token lookup) fixes block_m, tiles, split_k and stages; \"\" for "
            "none (a sweep axis value beside a base scenario's table)",
            EmptyAllowed{});
    v.param(heuristic, "heuristic",
            "rule for what neither the scenario nor a kernel.config row fixes: tdmsim (the "
            "project's) or aiter (AITER fused_moe.py's defaults)",
            Default{KernelHeuristic::tdmsim});
    v.param(source, "source",
            "whose kernels run the layer: tdmsim (the project's kernels/moe; on CDNA machines "
            "their main loops are charged the instruction mix of their code objects) or aiter "
            "(AITER's CK and assembly kernels, no mix of ours; CDNA machines only; tdmsim gpu-case refuses it)",
            Default{KernelCode::tdmsim});
  }
};

struct ParallelSpec {
  std::uint32_t tp{};
  std::uint32_t ep{};
  ExpertPlacement placement{};
  std::uint32_t redundant_experts{};
  EpOverlap overlap{};
  std::uint32_t chunks{};
  EpCombine combine{};
  TpReduce tp_reduce{};

  template <class V>
  void visit(V& v) {
    v.param(tp, "tp", "tensor parallel degree: each GPU holds intermediate_size / tp",
            Default{1u}, Min{1u}, Max{1024u});
    v.param(ep, "ep",
            "expert parallel degree: the layer runs on ep GPUs, each holding experts / ep "
            "(plus redundant_experts / ep copies); every GPU is simulated, with the dispatch and "
            "combine all-to-all on the machine's interconnect (docs/expert-parallel.md; "
            "`tdmsim run --gpus` overrides it)",
            Default{1u}, Min{1u}, Max{1024u});
    v.param(placement, "placement",
            "which GPU holds which expert (ep > 1): contiguous (expert e on GPU e / (experts/ep)), "
            "round_robin (e mod ep), or load_aware (this draw's hottest experts copied into the "
            "redundant slots, then experts packed onto GPUs by load; docs/expert-parallel.md)",
            Default{ExpertPlacement::contiguous});
    v.param(redundant_experts, "redundant_experts",
            "extra expert slots over all GPUs for copies of hot experts (placement load_aware; a "
            "multiple of ep; each GPU holds redundant_experts / ep more)",
            Default{0u}, Min{0u}, Max{65536u});
    v.param(overlap, "overlap",
            "communication/compute overlap of an expert-parallel layer (ep > 1): none (dispatch and "
            "combine are barriers around the experts) or chunked (the batch split into `chunks` "
            "micro-batches, one's dispatch and combine running while another computes; "
            "docs/expert-parallel.md)",
            Default{EpOverlap::none});
    v.param(chunks, "chunks",
            "micro-batches of overlap chunked (0 = 2); each GPU's own tokens split evenly, at "
            "least one per chunk",
            Default{0u}, Min{0u}, Max{1024u});
    v.param(combine, "combine",
            "how the experts' outputs come back (ep > 1): all_to_all (each GPU's partial sums to the "
            "GPUs owning the tokens) or all_gather (every GPU's output rows to every GPU, so each "
            "holds the whole output: seed 000's multi-GPU example; docs/expert-parallel.md)",
            Default{EpCombine::all_to_all});
    v.param(tp_reduce, "tp_reduce",
            "with ep > 1 and tp > 1 (each expert-parallel rank a group of tp GPUs, each holding "
            "intermediate_size / tp of its experts): how the group sums its partial outputs, "
            "all_reduce or reduce_scatter (docs/expert-parallel.md)",
            Default{TpReduce::all_reduce});
  }
};

// The micro-batches an expert-parallel layer runs as: 1 without overlap,
// parallel.chunks (0 meaning 2) with overlap chunked.
inline std::uint32_t ep_chunks(const ParallelSpec& p) {
  return p.overlap == EpOverlap::chunked ? (p.chunks == 0 ? 2u : p.chunks) : 1u;
}

struct ScenarioSpec {
  std::string name;
  std::string description;
  std::string machine;
  std::string model;
  std::uint32_t tokens{};
  DType dtype{};
  WeightDType weight_dtype{};
  Quant quant{};
  std::uint64_t seed{};
  ExecPath path{};
  RoutingSpec routing;
  KernelSpec kernel;
  ParallelSpec parallel;
  std::optional<ServingSpec> serving;

  template <class V>
  void visit(V& v) {
    v.param(name, "name", "short scenario name used in reports", Required{});
    v.param(description, "description", "one line on what this scenario studies");
    v.param(machine, "machine", "machine name (workloads/machines) or path to a machine file",
            Required{});
    v.param(model, "model", "model name (workloads/models) or path to a model file", Required{});
    v.param(tokens, "tokens", "tokens in the batch", Required{}, Min{1u}, Max{16777216u});
    v.param(dtype, "dtype",
            "activation dtype of the expert GEMMs (and weight dtype unless weight_dtype is set); of the "
            "dtype names, only those of a format in the formats table below run (fp32 and int4 are "
            "refused as activations)",
            Default{DType::bf16});
    v.param(weight_dtype, "weight_dtype",
            "expert weight dtype: same (as dtype) or e.g. mxfp4 / int4 for mixed pairs",
            Default{"same"});
    v.param(quant, "quant",
            "scale scheme of the quantised operands (docs/yaml-reference.md, Formats)",
            Default{Quant::none});
    v.param(seed, "seed", "seed of every random draw", Default{1u});
    v.param(path, "path", "simulated execution path", Default{ExecPath::both});
    v.section(routing, "routing", "how tokens are routed to experts");
    v.section(kernel, "kernel", "fused-MoE kernel configuration");
    v.section(parallel, "parallel", "sharding of the layer over GPUs (every GPU of the expert-parallel group is run)");
    v.section(serving, "serving",
              "a request stream on one GPU instead of one layer: arrivals, batching, per-request "
              "latency on each path; `tokens` is then the most tokens in a batch (docs/serving.md)");
  }
};

// The longest routing.hot_experts list: one entry per expert of the largest
// model the schema accepts (ModelSpec::experts).
inline constexpr std::size_t kMaxHotExperts = 65536;

// Whether kernels of `source` take token blocks of `m` rows (kernel.block_m,
// a tile's M, a tuned table's block_m): ours 16, 32, 64, 128 or 256, AITER's
// any multiple of 16 in 16..256; and the rule in words, for messages.
bool valid_block_m(std::uint32_t m, KernelCode source);
std::string valid_block_m_text(KernelCode source);

void check(const ScenarioSpec& s, config::Checker& c);

// Checks that need the scenario's model and machine: expert ids in range,
// sharding that divides the shapes, and a footprint that fits in HBM.
void check(const ScenarioSpec& s, const ModelSpec& model, const MachineSpec& machine,
           config::Checker& c);

// The scenario's operand formats (weight_dtype "same" resolved to dtype).
OperandFormats operand_formats(const ScenarioSpec& s);

// Keys whose value cannot change the run under the scenario's other keys: a
// key of another routing source, an overflow policy with no capacity limit;
// each with the key that makes it so and why.
std::vector<InertKey> inert_keys(const ScenarioSpec& s);

// The fused shared-expert slots one GPU runs: shared experts x chunks of the
// routed intermediate size (docs/moe-plan.md "Shared experts").
std::uint64_t shared_slots(const ScenarioSpec& s, const ModelSpec& model);

// The experts one GPU runs: its routed experts (redundant copies included,
// parallel.ep dividing them) plus the fused shared-expert slots.
std::uint64_t experts_per_gpu(const ScenarioSpec& s, const ModelSpec& model);

// Bytes of expert weights (gate, up and down projections) one GPU holds,
// shared experts' chunks and scales included.
std::uint64_t expert_weight_bytes(const ScenarioSpec& s, const ModelSpec& model);

}  // namespace tdmsim

namespace tdmsim::config {
template <>
struct ValueTraits<CapacityFactor> {
  static constexpr std::string_view type_name = "number > 0 (e.g. 1.25) or none";
  static units::Parsed<CapacityFactor> parse(std::string_view t);
  static std::string text(const CapacityFactor& v);
};
template <>
struct ValueTraits<KernelTile> {
  static constexpr std::string_view type_name = "tile 'THREADSxMxNxK' (e.g. 256x32x64x128) or auto";
  static units::Parsed<KernelTile> parse(std::string_view t);
  static std::string text(const KernelTile& v);
};
}  // namespace tdmsim::config
