// Element conversions the MoE kernels use, on host and device, with the
// emulator's rounding (docs/emulator.md "Numerics"): bf16 round-to-nearest-
// even, fp8 e4m3 (OCP "FN") round-to-nearest-even saturating to +-448, exact
// decoding. Written on the bit patterns so AMD and NVIDIA give the same bits;
// the emulator's own codec (descriptors/emulator/minifloat.h) is the reference
// a host test compares these with.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__HIPCC__) || defined(__CUDACC__)
#define TDMSIM_GPU_HD __host__ __device__ __forceinline__
#else
#define TDMSIM_GPU_HD inline
#endif

namespace tdmsim::gpu {

TDMSIM_GPU_HD std::uint32_t float_bits(float v) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(v);
#else
  std::uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
#endif
}

TDMSIM_GPU_HD float bits_float(std::uint32_t b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(b);
#else
  float v;
  std::memcpy(&v, &b, 4);
  return v;
#endif
}

// fp32 -> bf16 bits, nearest even; NaN stays a quiet NaN with its sign.
TDMSIM_GPU_HD std::uint16_t bf16_bits(float v) {
  const std::uint32_t b = float_bits(v);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((b >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

TDMSIM_GPU_HD float bf16_value(std::uint16_t h) { return bits_float(std::uint32_t{h} << 16); }

TDMSIM_GPU_HD float round_bf16(float v) { return bf16_value(bf16_bits(v)); }

// Largest finite e4m3 magnitude.
constexpr float kE4m3Max = 448.0f;

// fp32 -> e4m3 bits, nearest even, saturating to +-448; NaN -> 0x7F|sign.
TDMSIM_GPU_HD std::uint8_t e4m3_bits(float v) {
  const std::uint32_t b = float_bits(v);
  const std::uint32_t sign = (b >> 24) & 0x80u;
  const std::uint32_t abs = b & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<std::uint8_t>(sign | 0x7Fu);
  if (abs >= 0x43E00000u) return static_cast<std::uint8_t>(sign | 0x7Eu);  // >= 448 (and Inf)
  const int exp32 = static_cast<int>(abs >> 23);
  if (exp32 == 0) return static_cast<std::uint8_t>(sign);
  const std::uint32_t m = (abs & 0x7FFFFFu) | 0x800000u;
  const int e = exp32 - 127 + 7;
  // Normal: drop 20 mantissa bits; subnormal: units of 2^-9.
  const int shift = e >= 1 ? 20 : 21 - e;
  std::uint32_t q = 0;
  if (shift <= 31) {
    q = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
  }
  std::uint32_t mag = e >= 1 ? (static_cast<std::uint32_t>(e) << 3) + q - 8u : q;
  if (mag > 0x7Eu) mag = 0x7Eu;
  return static_cast<std::uint8_t>(sign | mag);
}

// e4m3 bits -> fp32 (exact).
TDMSIM_GPU_HD float e4m3_value(std::uint8_t q) {
  const std::uint32_t sign = std::uint32_t{q & 0x80u} << 24;
  const std::uint32_t mag = q & 0x7Fu;
  if (mag == 0x7Fu) return bits_float(sign | 0x7FC00000u);
  const std::uint32_t e = mag >> 3, man = mag & 7u;
  if (e == 0) return bits_float(sign | float_bits(static_cast<float>(man) * 0.001953125f));
  return bits_float(sign | ((e + 120u) << 23) | (man << 20));
}

// e4m3 bits -> bf16 bits (exact: every e4m3 value is a bf16 value).
TDMSIM_GPU_HD std::uint16_t e4m3_to_bf16_bits(std::uint8_t q) {
  return static_cast<std::uint16_t>(float_bits(e4m3_value(q)) >> 16);
}

// The same, by integer arithmetic on the bits for normal values (the common
// case in the GEMM's LDS conversion); equal to e4m3_to_bf16_bits for every q.
TDMSIM_GPU_HD std::uint32_t e4m3_to_bf16_fast(std::uint8_t q) {
  const std::uint32_t mag = q & 0x7Fu;
  if (mag >= 8u && mag != 0x7Fu) return (std::uint32_t{q & 0x80u} << 8) | ((mag << 4) + (120u << 7));
  return e4m3_to_bf16_bits(q);
}

// A group's scale: amax / 448 (fp32 division), 1 for an all-zero group.
TDMSIM_GPU_HD float e4m3_scale(float amax) { return amax > 0.0f ? amax / kE4m3Max : 1.0f; }

}  // namespace tdmsim::gpu
