// Element conversions the MoE kernels use, on host and device, with the
// emulator's rounding (docs/emulator.md "Numerics"): bf16 round-to-nearest-
// even, fp8 e4m3 (OCP "FN") round-to-nearest-even saturating to +-448, exact
// decoding. Written on the bit patterns so AMD and NVIDIA give the same bits;
// the emulator's own codec (descriptors/emulator/minifloat.h) is the reference
// a host test compares these with.
#pragma once

#include <cstdint>
#include <cstring>
#if defined(__HIPCC__) && !defined(__CUDACC__)
#include <hip/hip_runtime.h>  // __host__, __device__ and __forceinline__ on AMD
#endif

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

// e4m3 FNUZ (AMD gfx940-942, "fp8" of the MI300 ISA): exponent bias 8, no
// infinities, no negative zero, and 0x80 the only NaN. Largest finite 240
// (0x7F). Same rounding as e4m3_bits: nearest even, saturating to +-240; a
// value that rounds to zero encodes 0x00 whatever its sign.
constexpr float kE4m3FnuzMax = 240.0f;

TDMSIM_GPU_HD std::uint8_t e4m3fnuz_bits(float v) {
  const std::uint32_t b = float_bits(v);
  const std::uint32_t sign = (b >> 24) & 0x80u;
  const std::uint32_t abs = b & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return 0x80u;
  if (abs >= 0x43700000u) return static_cast<std::uint8_t>(sign | 0x7Fu);  // >= 240 (and Inf)
  const int exp32 = static_cast<int>(abs >> 23);
  if (exp32 == 0) return 0;
  const std::uint32_t m = (abs & 0x7FFFFFu) | 0x800000u;
  const int e = exp32 - 127 + 8;
  // Normal: drop 20 mantissa bits; subnormal: units of 2^-10.
  const int shift = e >= 1 ? 20 : 21 - e;
  std::uint32_t q = 0;
  if (shift <= 31) {
    q = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
  }
  std::uint32_t mag = e >= 1 ? (static_cast<std::uint32_t>(e) << 3) + q - 8u : q;
  if (mag > 0x7Fu) mag = 0x7Fu;
  return mag == 0 ? std::uint8_t{0} : static_cast<std::uint8_t>(sign | mag);
}

// e4m3 FNUZ bits -> fp32 (exact).
TDMSIM_GPU_HD float e4m3fnuz_value(std::uint8_t q) {
  if (q == 0x80u) return bits_float(0x7FC00000u);
  const std::uint32_t sign = std::uint32_t{q & 0x80u} << 24;
  const std::uint32_t mag = q & 0x7Fu;
  const std::uint32_t e = mag >> 3, man = mag & 7u;
  if (e == 0) return bits_float(sign | float_bits(static_cast<float>(man) * 0.0009765625f));
  return bits_float(sign | ((e + 119u) << 23) | (man << 20));
}

// e4m3 FNUZ bits -> bf16 bits (exact: every FNUZ value is a bf16 value).
TDMSIM_GPU_HD std::uint32_t e4m3fnuz_to_bf16_bits(std::uint8_t q) {
  const std::uint32_t mag = q & 0x7Fu;
  if (mag >= 8u) return (std::uint32_t{q & 0x80u} << 8) | ((mag << 4) + (119u << 7));
  return bf16_bits(e4m3fnuz_value(q));
}

// The kernels' fp8: e4m3 in the flavour of the compile target. FNUZ on AMD
// gfx940-942 (whose fp8 MFMA reads FNUZ operands), OCP ("FN") everywhere else:
// NVIDIA, gfx90a (no fp8 hardware: e4m3 is converted to bf16, so the OCP
// encoding keeps gfx90a's results those of the NVIDIA build), gfx950 (OCP fp8
// MFMA). Known only in a device pass (__gfx94x__ are device macros): the host
// never encodes or decodes fp8. The scale of a group is amax / (the flavour's
// largest finite value), so a group's largest element lands on it in either.
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define TDMSIM_FP8_FNUZ 1
#else
#define TDMSIM_FP8_FNUZ 0
#endif

TDMSIM_GPU_HD std::uint8_t fp8_bits(float v) {
#if TDMSIM_FP8_FNUZ
  return e4m3fnuz_bits(v);
#else
  return e4m3_bits(v);
#endif
}
TDMSIM_GPU_HD float fp8_value(std::uint8_t q) {
#if TDMSIM_FP8_FNUZ
  return e4m3fnuz_value(q);
#else
  return e4m3_value(q);
#endif
}
TDMSIM_GPU_HD std::uint32_t fp8_to_bf16_fast(std::uint8_t q) {
#if TDMSIM_FP8_FNUZ
  return e4m3fnuz_to_bf16_bits(q);
#else
  return e4m3_to_bf16_fast(q);
#endif
}
TDMSIM_GPU_HD float fp8_scale(float amax) {
#if TDMSIM_FP8_FNUZ
  return amax > 0.0f ? amax / kE4m3FnuzMax : 1.0f;
#else
  return e4m3_scale(amax);
#endif
}

}  // namespace tdmsim::gpu
