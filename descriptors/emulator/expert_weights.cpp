#include "descriptors/emulator/expert_weights.h"

#include <algorithm>
#include <stdexcept>

#include "descriptors/emulator/quantize.h"
#include "descriptors/emulator/synthetic.h"

namespace tdmsim::emu {

WeightSource::WeightSource(const plan::LayerShape& shape, std::uint64_t seed,
                           const ExpertWeights* given)
    : shape_(shape), seed_(seed), given_(given != nullptr ? *given : ExpertWeights{}) {
  if (given_.w13 == nullptr && given_.w2 == nullptr) return;
  // Only per_tensor reads a matrix-wide bound: one pass over the given weights.
  if (operand_quant(shape.weight_dtype, shape.quant) != Quant::per_tensor) return;
  const std::size_t h = shape.hidden, inter = shape.inter;
  bound_.assign(std::size_t{shape.experts_local} * 3, 0.0f);
  for (std::uint32_t e = 0; e < shape.experts_local; ++e) {
    if (given_.w13 != nullptr) {
      const float* w = given_.w13 + std::size_t{e} * 2 * inter * h;
      bound_[e * 3 + 0] = absmax(w, inter, h, h);
      bound_[e * 3 + 1] = absmax(w + inter * h, inter, h, h);
    }
    if (given_.w2 != nullptr) bound_[e * 3 + 2] = absmax(given_.w2 + std::size_t{e} * h * inter, h, inter, inter);
  }
}

bool WeightSource::given_w13(std::uint32_t e) const {
  return given_.w13 != nullptr && e < shape_.experts_local;
}

bool WeightSource::given_w2(std::uint32_t e) const {
  return given_.w2 != nullptr && e < shape_.experts_local;
}

void WeightSource::gate_up_rows(std::uint32_t e, std::uint32_t j0, std::uint32_t j1,
                                float* out) const {
  if (!given_w13(e)) {
    expert_gate_up_rows(shape_, seed_, e, j0, j1, out);
    return;
  }
  const std::size_t h = shape_.hidden, inter = shape_.inter;
  if (j0 > j1 || j1 > inter) throw std::out_of_range("gate_up_rows: bad row range");
  const std::size_t n = j1 - j0;
  const float* w = given_.w13 + std::size_t{e} * 2 * inter * h;
  std::copy_n(w + j0 * h, n * h, out);                // gate rows
  std::copy_n(w + (inter + j0) * h, n * h, out + n * h);  // up rows
  const float gate_bound = bound_.empty() ? 0.0f : bound_[e * 3 + 0];
  const float up_bound = bound_.empty() ? 0.0f : bound_[e * 3 + 1];
  quantize_weights(out, n, h, j0, shape_.weight_dtype, shape_.quant, gate_bound);
  quantize_weights(out + n * h, n, h, j0, shape_.weight_dtype, shape_.quant, up_bound);
}

void WeightSource::down_rows(std::uint32_t e, std::uint32_t h0, std::uint32_t h1,
                             float* out) const {
  if (!given_w2(e)) {
    expert_down_rows(shape_, seed_, e, h0, h1, out);
    return;
  }
  const std::size_t h = shape_.hidden, inter = shape_.inter;
  if (h0 > h1 || h1 > h) throw std::out_of_range("down_rows: bad row range");
  std::copy_n(given_.w2 + (std::size_t{e} * h + h0) * inter, (h1 - h0) * inter, out);
  quantize_weights(out, h1 - h0, inter, h0, shape_.weight_dtype, shape_.quant,
                   bound_.empty() ? 0.0f : bound_[e * 3 + 2]);
}

}  // namespace tdmsim::emu
