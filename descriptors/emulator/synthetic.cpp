#include "descriptors/emulator/synthetic.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "descriptors/emulator/quantize.h"

namespace tdmsim::emu {

float weight_bound(std::uint32_t fan_in) {
  return 1.0f / std::sqrt(static_cast<float>(fan_in));
}

std::uint32_t expert_columns(const plan::LayerShape& shape, std::uint32_t e) {
  if (e >= shape.experts_fused()) {
    throw std::out_of_range("fused expert " + std::to_string(e) + " does not exist (layer has " +
                            std::to_string(shape.experts_fused()) + ")");
  }
  if (e < shape.experts_local) return shape.inter;
  return plan::shared_slot(shape, e - shape.experts_local).columns;
}

std::uint32_t down_fan_in(const plan::LayerShape& shape, std::uint32_t e) {
  (void)expert_columns(shape, e);  // range check
  return e < shape.experts_local ? shape.inter : shape.shared_inter;
}

void TensorStream::fill(std::uint64_t first, std::uint64_t n, float* out) const {
  for (std::uint64_t i = 0; i < n; ++i) out[i] = value(first + i);
}

std::vector<float> seeded_activations(std::uint64_t seed, std::uint32_t tokens,
                                      std::uint32_t hidden) {
  std::vector<float> x(std::size_t{tokens} * hidden);
  TensorStream(seed, plan::TensorId::activations, 0, 1.0f).fill(0, x.size(), x.data());
  return x;
}

void expert_gate_up_rows(const plan::LayerShape& shape, std::uint64_t seed, std::uint32_t e,
                         std::uint32_t j0, std::uint32_t j1, float* out) {
  const std::uint32_t columns = expert_columns(shape, e);
  const std::uint64_t inter = shape.inter;
  const std::uint64_t h = shape.hidden;
  if (j0 > j1 || j1 > inter) throw std::out_of_range("expert_gate_up_rows: bad row range");
  const float bound = weight_bound(shape.hidden);
  const TensorStream w(seed, plan::TensorId::w_gate_up, e, bound);
  const std::uint64_t n = j1 - j0;
  const std::uint64_t real = j0 < columns ? std::min<std::uint64_t>(j1, columns) - j0 : 0;
  float* gate = out;
  float* up = out + n * h;
  w.fill(std::uint64_t{j0} * h, real * h, gate);
  w.fill((inter + j0) * h, real * h, up);
  std::fill(gate + real * h, gate + n * h, 0.0f);  // a shared chunk's zero padding
  std::fill(up + real * h, up + n * h, 0.0f);
  // Gate and up are separate projections in checkpoints, each with its own
  // scale grid (DeepSeek-V3 stores gate_proj and up_proj block scales apart).
  quantize_weights(gate, n, h, j0, shape.weight_dtype, shape.quant, bound);
  quantize_weights(up, n, h, j0, shape.weight_dtype, shape.quant, bound);
}

void expert_down_rows(const plan::LayerShape& shape, std::uint64_t seed, std::uint32_t e,
                      std::uint32_t h0, std::uint32_t h1, float* out) {
  const std::uint64_t columns = expert_columns(shape, e);
  const std::uint64_t inter = shape.inter;
  if (h0 > h1 || h1 > shape.hidden) throw std::out_of_range("expert_down_rows: bad row range");
  const float bound = weight_bound(down_fan_in(shape, e));
  const TensorStream w(seed, plan::TensorId::w_down, e, bound);
  for (std::uint64_t r = h0; r < h1; ++r) {
    float* row = out + (r - h0) * inter;
    w.fill(r * inter, columns, row);
    std::fill(row + columns, row + inter, 0.0f);
  }
  quantize_weights(out, h1 - h0, inter, h0, shape.weight_dtype, shape.quant, bound);
}

}  // namespace tdmsim::emu
