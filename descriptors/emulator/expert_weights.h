// Where the emulator's expert weights come from: generated from the plan's
// seed (synthetic.h), or a caller's fp32 matrices (the descriptor API's
// forward with weights, docs/api.md "Weights"). Either way a chunk of rows is
// produced and quantised to the layer's weight dtype and scheme by the same
// rules (docs/emulator.md "Quantisation"); for per_tensor the static scale of
// a given matrix comes from its absolute maximum (what a calibrated checkpoint
// stores), where the seeded weights use the generator's range.
#pragma once

#include <cstdint>
#include <vector>

#include "descriptors/plan/moe_plan.h"

namespace tdmsim::emu {

// A caller's routed expert weights, fp32, in the layout the emulator and the
// GPU kernels use. Either may be null (that projection keeps the seeded
// weights); shared experts always keep theirs.
struct ExpertWeights {
  const float* w13 = nullptr;  // [experts_local][2I][H]: gate rows [0, I), then up rows
  const float* w2 = nullptr;   // [experts_local][H][I]
};

class WeightSource {
 public:
  // `given` may be null (all seeded); it must outlive the source.
  WeightSource(const plan::LayerShape& shape, std::uint64_t seed, const ExpertWeights* given);

  // As expert_gate_up_rows / expert_down_rows (synthetic.h), from the caller's
  // matrices where given.
  void gate_up_rows(std::uint32_t e, std::uint32_t j0, std::uint32_t j1, float* out) const;
  void down_rows(std::uint32_t e, std::uint32_t h0, std::uint32_t h1, float* out) const;

 private:
  bool given_w13(std::uint32_t e) const;
  bool given_w2(std::uint32_t e) const;

  const plan::LayerShape& shape_;
  std::uint64_t seed_;
  ExpertWeights given_;
  std::vector<float> bound_;  // per given routed expert: |gate|max, |up|max, |down|max
};

}  // namespace tdmsim::emu
