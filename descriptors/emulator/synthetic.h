// The synthetic activations and expert weights of a layer, generated from
// plan/tensor_rng.h so that the GPU kernels can regenerate any element:
//   x[t][h]                 = tensor_value(seed, activations, 0, t*H + h, 1)
//   gate/up row r, col h    = tensor_value(seed, w_gate_up, e, r*H + h, 1/sqrt(H))
//                             (rows [0, I) gate, [I, 2I) up)
//   down row h, col i       = tensor_value(seed, w_down, e, h*I + i, 1/sqrt(fan_in))
// where e is the fused local expert id (routed experts first, then the shared
// slots) and I the per-GPU routed intermediate size, which every fused expert
// has in the kernels. A shared slot is a chunk of a shared expert
// (plan::shared_slot): only its first `columns` intermediate columns carry
// weights, the rest are zero padding; its down fan_in is the shared expert's
// whole intermediate (shared_inter), a routed expert's is I.
// Weights are produced a chunk of rows at a time and quantised to the layer
// dtype, so no more than a few chunks ever exist at once (DeepSeek-V3 holds
// 11 GB of expert weights).
#pragma once

#include <cstdint>
#include <vector>

#include "descriptors/plan/moe_plan.h"
#include "descriptors/plan/tensor_rng.h"

namespace tdmsim::emu {

// The generator range of a weight matrix with `fan_in` inputs: 1/sqrt(fan_in)
// computed in fp32 (sqrt is correctly rounded, so this is portable).
float weight_bound(std::uint32_t fan_in);

// Intermediate columns of fused expert e that carry weights: I for a routed
// expert, the chunk's `columns` for a shared slot. Throws std::out_of_range
// for an expert the layer does not have.
std::uint32_t expert_columns(const plan::LayerShape& shape, std::uint32_t e);

// The down projection's fan-in (sets its generator range): I for a routed
// expert, shared_inter for a shared slot.
std::uint32_t down_fan_in(const plan::LayerShape& shape, std::uint32_t e);

// Element values of one (seed, tensor, part) with the per-tensor hashing
// hoisted out of the loop; value(i) == plan::tensor_value(seed, id, part, i, scale).
class TensorStream {
 public:
  TensorStream(std::uint64_t seed, plan::TensorId id, std::uint64_t part, float scale)
      : key_(plan::mix64(plan::mix64(seed ^ (static_cast<std::uint64_t>(id) << 56)) ^ part)),
        scale_(scale) {}
  float value(std::uint64_t index) const {
    const float u = static_cast<float>(plan::mix64(key_ ^ index) >> 40) * (1.0f / 16777216.0f);
    return (2.0f * u - 1.0f) * scale_;
  }
  // out[i] = value(first + i) for i in [0, n).
  void fill(std::uint64_t first, std::uint64_t n, float* out) const;

 private:
  std::uint64_t key_;
  float scale_;
};

// x [tokens][hidden] in fp32 (before any quantisation).
std::vector<float> seeded_activations(std::uint64_t seed, std::uint32_t tokens,
                                      std::uint32_t hidden);

// Gate rows [j0, j1) then up rows [I + j0, I + j1) of expert e, quantised
// to shape.dtype/quant (scales per docs/emulator.md), as fp32:
// out [2 (j1 - j0)][hidden]. block_128 needs j0 % 128 == 0.
void expert_gate_up_rows(const plan::LayerShape& shape, std::uint64_t seed, std::uint32_t e,
                         std::uint32_t j0, std::uint32_t j1, float* out);

// Down rows [h0, h1) of expert e, quantised likewise: out [h1 - h0][I].
// block_128 needs h0 % 128 == 0.
void expert_down_rows(const plan::LayerShape& shape, std::uint64_t seed, std::uint32_t e,
                      std::uint32_t h0, std::uint32_t h1, float* out);

}  // namespace tdmsim::emu
