// The gated activations of the expert MLP, in fp32, as the fused-MoE kernels
// apply them to the gate (g) and up (u) halves of the gate/up GEMM output.
#pragma once

#include <cstddef>

#include "workloads/specs/enums.h"

namespace tdmsim::emu {

// gpt-oss's swiglu alpha (sigmoid slope of its clamped SwiGLU).
inline constexpr float kSwigluOaiAlpha = 1.702f;

// silu:       silu(g) * u = g / (1 + exp(-g)) * u                         (SwiGLU)
// gelu:       gelu(g) * u with the exact erf GELU 0.5 g (1 + erf(g/sqrt 2))
//             (GeGLU; PyTorch's default and vLLM's fused-MoE "gelu")
// swiglu_oai: g' = min(g, limit), u' = clamp(u, -limit, limit),
//             (u' + 1) * g' * sigmoid(alpha g')                            (gpt-oss)
//             limit 0 means no clamping.
float gated_activation(Activation act, float g, float u, float limit);

// out[i] = gated_activation(act, gate[i], up[i], limit) for i in [0, n).
void gated_activation(Activation act, const float* gate, const float* up, float* out,
                      std::size_t n, float limit);

// The tanh approximation of GELU (Grok-1's JAX code uses it); provided for
// comparison, not used by the emulator (see docs/emulator.md).
float gelu_tanh(float g);

}  // namespace tdmsim::emu
