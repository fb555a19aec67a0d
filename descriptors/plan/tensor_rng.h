// Counter-based, stateless generation of every synthetic tensor value from
// (seed, tensor, index). The emulator, the simulator's plan and the GPU kernels
// all call these same functions, so a 10 GB expert weight set never needs to be
// stored or transferred to be identical everywhere: any element can be
// regenerated on the CPU or on the device. Pure integer arithmetic up to one
// final int->float conversion, hence bit-identical on every platform.
#pragma once

#include <cstdint>

#if defined(__HIPCC__) || defined(__CUDACC__)
#define TDMSIM_HD __host__ __device__
#else
#define TDMSIM_HD
#endif

namespace tdmsim::plan {

// Which synthetic tensor a value belongs to (part of the hash key).
enum class TensorId : std::uint32_t {
  activations = 1,     // x [tokens][hidden]
  router_weight = 2,   // [experts][hidden]
  router_bias = 3,     // [experts] (gpt-oss router bias)
  correction_bias = 4, // [experts] (DeepSeek-V3 e_score_correction_bias)
  w_gate_up = 5,       // per expert [2*inter][hidden]: rows [0,I) gate, [I,2I) up
  w_down = 6,          // per expert [hidden][inter]
  routing_draw = 7,    // uniforms for synthetic routing distributions
};

// splitmix64 finaliser: a bijective 64-bit mix with good avalanche.
TDMSIM_HD constexpr std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 64 random bits for element `index` of tensor `id` (sub-tensor `part`, e.g. expert).
TDMSIM_HD constexpr std::uint64_t tensor_bits(std::uint64_t seed, TensorId id, std::uint64_t part,
                                              std::uint64_t index) {
  return mix64(mix64(mix64(seed ^ (static_cast<std::uint64_t>(id) << 56)) ^ part) ^ index);
}

// Uniform in [0, 1) with 24 random bits (exactly representable in float).
TDMSIM_HD constexpr float tensor_uniform01(std::uint64_t seed, TensorId id, std::uint64_t part,
                                           std::uint64_t index) {
  return static_cast<float>(tensor_bits(seed, id, part, index) >> 40) * (1.0f / 16777216.0f);
}

// Uniform in [-scale, scale): the value of a synthetic tensor element.
TDMSIM_HD constexpr float tensor_value(std::uint64_t seed, TensorId id, std::uint64_t part,
                                       std::uint64_t index, float scale) {
  return (2.0f * tensor_uniform01(seed, id, part, index) - 1.0f) * scale;
}

}  // namespace tdmsim::plan
