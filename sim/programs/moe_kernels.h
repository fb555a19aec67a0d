// The MoE layer as kernels for the timing model, built from the MoE plan
// (descriptors/plan): the sorting kernel and today's software fused-MoE
// kernels (1-stage, or 2-stage gate/up + down), as grids of tile programs
// over the plan's tile jobs. Every load carries the real address of the
// token rows, weights and intermediates it touches, so cache hit rates and
// HBM traffic follow the routing. docs/moe-timing.md describes the costs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "descriptors/plan/moe_plan.h"
#include "isa/tile_program.h"
#include "sim/mem/address_space.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim::programs {

// Where the layer's tensors live in simulated device memory.
struct MoeBuffers {
  std::uint64_t x = 0;           // activations [tokens][H]
  std::uint64_t topk_ids = 0;    // router output [tokens][slots] (int32)
  std::uint64_t sorted_ids = 0;  // sorted rows [capacity] (int32)
  std::uint64_t sorted_weights = 0;
  std::uint64_t block_experts = 0;
  std::uint64_t w13 = 0;         // gate and up weights [E_fused][2I][H]
  std::uint64_t w2 = 0;          // down weights [E_fused][H][I]
  std::uint64_t scales = 0;      // quantisation scales (fp8)
  std::uint64_t inter = 0;       // intermediate [padded rows][I] (2-stage)
  std::uint64_t inter_q = 0;     // fp8 copy of it, when a kernel quantises between the stages
  std::uint64_t partials = 0;    // split-K fp32 partial sums (gate/up)
  std::uint64_t out = 0;         // output [tokens][H] (bf16, or fp32: kernels.combine)
  // kernels.combine reduce: every (token, slot) row of the down stage
  // [tokens][slots][H] and their sum per token [tokens][H] (bf16).
  std::uint64_t topk_out = 0, topk_sum = 0;
};

// Bytes per element of a dtype (fractional for 4-bit types).
double element_bytes(DType t);

// Vector element operations per weight element a kernel spends dequantising
// `weight` in registers for a matrix product in `activation` (0 for same-type
// pairs and where the matrix instruction takes both as they are: a8w4 on
// CDNA4's f8f6f4 MFMA).
double dequant_ops_per_weight(const MachineSpec& m, DType activation, DType weight);

// The physical floor of a layer on a machine: it cannot run faster than its
// compulsory bytes (the expert weights actually touched, activations read
// once, output written once) at the HBM datasheet peak, nor than its useful
// FLOPs (real rows only, no padding) at the matrix peak.
struct MoeFloor {
  double weight_bytes = 0;    // weights of the experts with at least one row
  double activation_bytes = 0;
  double flops = 0;
  double memory_s = 0;
  double compute_s = 0;
  double seconds() const { return memory_s > compute_s ? memory_s : compute_s; }
};
MoeFloor moe_floor(const plan::MoePlan& plan, const MachineSpec& machine);

// Whether our sort (kernels/moe/sort.hip, machines whose kernels are ours)
// runs as one kernel for `rows` routed rows (tokens x slots): rows that fit
// one chunk of 1024 and at most 1024 fused experts; else as four kernels.
bool sort_one_kernel(std::uint64_t rows, std::uint32_t experts_fused);

struct MoeKernels {
  MoeBuffers buffers;
  std::vector<isa::KernelLaunch> kernels;  // in launch order
  // Per kernel: "routing", "zero_out", "sort", "gate_up", "reduce", "quant_inter", "down", "combine"
  // (kernels.combine reduce: the sum of the top-k rows and its copy), "fused".
  std::vector<std::string> stage;
};

// The software path: the router's kernels (moe_router.h; none when the
// scenario's routing.router_stage is `given`), the sort, then the plan's
// fused-MoE kernel(s).
MoeKernels software_moe(AddressSpace& as, const plan::MoePlan& plan, const MachineSpec& machine);

// The TDM path: the TDM MoE unit dispatches the router's gate GEMM and its
// routing stage scores, ranks and sorts in hardware (it writes the task
// table; no sort kernel), then it runs the plan's stages from descriptors
// (no host launches), with
// token rows gathered into LDS by the tensor data movers. The machine must
// have a `tdm:` section. The descriptors software writes are built from the
// plan with tdm.default_policy, or, when `descriptors` is given, are those
// encoded records (one per descriptor-run stage, in order: a user's stream,
// checked against the plan beforehand with format::check_stream). The unit
// decodes whichever bytes it fetches and schedules from them.
using DescriptorBytes = std::vector<std::vector<std::byte>>;
MoeKernels tdm_moe(AddressSpace& as, const plan::MoePlan& plan, const MachineSpec& machine,
                   const DescriptorBytes* descriptors = nullptr);
// The encoded descriptors of a TDM path's kernels, in order (what the unit fetches).
DescriptorBytes descriptor_bytes(const MoeKernels& k);

}  // namespace tdmsim::sim::programs
