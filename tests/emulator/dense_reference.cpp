#include "tests/emulator/dense_reference.h"

#include <algorithm>
#include <cmath>

#include "descriptors/emulator/quantize.h"

namespace tdmsim::emu::test {
namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

double activation(Activation act, double g, double u, double limit) {
  switch (act) {
    case Activation::silu: return g * sigmoid(g) * u;
    case Activation::gelu: return 0.5 * g * (1.0 + std::erf(g / std::sqrt(2.0))) * u;
    case Activation::swiglu_oai:
      if (limit > 0) {
        g = std::min(g, limit);
        u = std::max(-limit, std::min(u, limit));
      }
      return (u + 1.0) * g * sigmoid(1.702 * g);
  }
  return 0;
}

}  // namespace

std::vector<double> dense_reference(const plan::LayerShape& shape, std::uint64_t seed,
                                    const plan::FusedRouting& fused, std::span<const float> x,
                                    const ExpertWeights* weights) {
  const WeightSource source(shape, seed, weights);
  const std::size_t t_count = shape.tokens, h_count = shape.hidden, i_count = shape.inter;
  const std::size_t slots = shape.slots();
  // The GEMM inputs, quantised exactly as a kernel's input step does.
  std::vector<float> input;
  std::size_t amax_rows = t_count;
  if (!shape.weight_on_input) {
    input.assign(x.begin(), x.end());
  } else {
    input.assign(t_count * slots * h_count, 0.0f);
    for (std::size_t r = 0; r < t_count * slots; ++r) {
      if (fused.expert[r] == plan::kRemoteExpert) continue;
      for (std::size_t h = 0; h < h_count; ++h) {
        input[r * h_count + h] = x[(r / slots) * h_count + h] * fused.weight[r];
      }
    }
    amax_rows = t_count * slots;
  }
  quantize_activations(input.data(), amax_rows, h_count, h_count, shape.dtype, shape.quant,
                       absmax(input.data(), amax_rows, h_count, h_count));

  std::vector<double> contrib(t_count * slots * h_count, 0.0);
  std::vector<float> gu(2 * i_count * h_count), down(h_count * i_count);
  for (std::uint32_t e = 0; e < shape.experts_fused(); ++e) {
    if (std::find(fused.expert.begin(), fused.expert.end(), e) == fused.expert.end()) continue;
    source.gate_up_rows(e, 0, shape.inter, gu.data());
    source.down_rows(e, 0, shape.hidden, down.data());
    for (std::size_t r = 0; r < t_count * slots; ++r) {
      if (fused.expert[r] != e) continue;
      const float* a = input.data() + (shape.weight_on_input ? r : r / slots) * h_count;
      std::vector<double> act(i_count);
      for (std::size_t j = 0; j < i_count; ++j) {
        double g = 0, u = 0;
        for (std::size_t h = 0; h < h_count; ++h) {
          g += double(a[h]) * gu[j * h_count + h];
          u += double(a[h]) * gu[(i_count + j) * h_count + h];
        }
        act[j] = activation(shape.activation, g, u, shape.activation_limit);
      }
      const double w = shape.weight_on_input ? 1.0 : double(fused.weight[r]);
      for (std::size_t h = 0; h < h_count; ++h) {
        double o = 0;
        for (std::size_t j = 0; j < i_count; ++j) o += act[j] * down[h * i_count + j];
        contrib[r * h_count + h] = w * o;
      }
    }
  }
  std::vector<double> y(t_count * h_count, 0.0);
  for (std::size_t r = 0; r < t_count * slots; ++r) {
    for (std::size_t h = 0; h < h_count; ++h) y[(r / slots) * h_count + h] += contrib[r * h_count + h];
  }
  return y;
}

}  // namespace tdmsim::emu::test
