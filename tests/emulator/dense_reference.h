// The dense fp64 reference the emulator is checked against: deliberately
// simple and independent of the emulator's structure (no sorting, no blocks,
// no chunks, no fp32 accumulation). For each token and each of its routed or
// shared slots it evaluates the expert MLP in double precision from the same
// dequantised inputs and weights (the emulator's numerics library quantises
// them; everything after that is the reference's own code) and sums the
// slots in double. It does NOT round the gate/up output, the intermediate or
// the expert outputs: the tolerances in docs/emulator.md account for that.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "descriptors/emulator/expert_weights.h"
#include "descriptors/plan/moe_plan.h"

namespace tdmsim::emu::test {

// y [tokens][hidden] in double; `weights` the caller's routed expert
// weights (null: the seed's), quantised by the emulator's numerics library.
std::vector<double> dense_reference(const plan::LayerShape& shape, std::uint64_t seed,
                                    const plan::FusedRouting& fused, std::span<const float> x,
                                    const ExpertWeights* weights = nullptr);

}  // namespace tdmsim::emu::test
