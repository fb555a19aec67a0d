#include "descriptors/emulator/activation.h"

#include <algorithm>
#include <cmath>

namespace tdmsim::emu {
namespace {

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

}  // namespace

float gated_activation(Activation act, float g, float u, float limit) {
  switch (act) {
    case Activation::silu: return g * sigmoid(g) * u;
    case Activation::gelu: return 0.5f * g * (1.0f + std::erf(g * 0.70710678118654752f)) * u;
    case Activation::swiglu_oai: {
      if (limit > 0.0f) {
        g = std::min(g, limit);
        u = std::clamp(u, -limit, limit);
      }
      return (u + 1.0f) * (g * sigmoid(kSwigluOaiAlpha * g));
    }
  }
  return 0.0f;
}

void gated_activation(Activation act, const float* gate, const float* up, float* out,
                      std::size_t n, float limit) {
  for (std::size_t i = 0; i < n; ++i) out[i] = gated_activation(act, gate[i], up[i], limit);
}

float gelu_tanh(float g) {
  constexpr float kSqrt2OverPi = 0.79788456080286536f;
  return 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * (g + 0.044715f * g * g * g)));
}

}  // namespace tdmsim::emu
