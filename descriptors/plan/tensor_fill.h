// Host-speed generation of many synthetic tensor values at once: the same
// values as tensor_value() (tensor_rng.h), one per index, several indices per
// instruction where the host has AVX2. Kept apart from the generator
// itself, which stays the one definition (and the reference) of every value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "descriptors/plan/tensor_rng.h"

namespace tdmsim::plan {

// The instruction-set variants of tensor_fill; `scalar` is the reference.
enum class FillIsa { scalar, avx2 };

FillIsa fill_isa_best();
bool fill_isa_supported(FillIsa isa);

// out[i] = tensor_value(seed, id, part, first + i * stride, scale) for i < n,
// bit for bit. `isa` must be supported.
void tensor_fill(FillIsa isa, std::uint64_t seed, TensorId id, std::uint64_t part, std::uint64_t first,
                 std::uint64_t stride, std::size_t n, float scale, float* out);

}  // namespace tdmsim::plan
