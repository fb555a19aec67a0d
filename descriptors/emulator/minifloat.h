// The generic narrow binary floating-point codec behind numerics.h, inline so
// that quantisation loops (which run over every expert weight) can use it
// without a call per element. Internal to the emulator.
#pragma once

#include <bit>
#include <cstdint>

#include "descriptors/emulator/numerics.h"

namespace tdmsim::emu::minifloat {

// A binary floating-point format narrower than fp32, described by its fields.
struct MiniFloat {
  int man_bits;             // stored mantissa bits
  int bias;                 // exponent bias
  std::uint32_t max_mag;    // magnitude bits (no sign) of the largest finite value
  std::uint32_t inf_mag;    // magnitude bits of Inf, 0 if the format has none
  std::uint32_t nan_mag;    // magnitude bits of the canonical (quiet) NaN, 0 if none
  int sign_shift;           // position of the sign bit
};

// Rounds m / 2^shift to the nearest integer, ties to even (shift may exceed 31).
inline std::uint32_t shift_round_even(std::uint32_t m, int shift) {
  if (shift <= 0) return m << -shift;
  if (shift > 31) return 0;  // m < 2^24: far below one half
  const std::uint32_t q = m >> shift;
  const std::uint32_t rem = m & ((std::uint32_t{1} << shift) - 1);
  const std::uint32_t half = std::uint32_t{1} << (shift - 1);
  // Branch-free: the round-up decision is a coin flip on real data, and a
  // mispredicted branch per element would dominate weight quantisation.
  const std::uint32_t up = static_cast<std::uint32_t>(rem > half) |
                           (static_cast<std::uint32_t>(rem == half) & q);
  return q + (up & 1u);
}

// Encodes v into a MiniFloat (bit pattern in the low bits of the result).
// fp32 subnormals (< 2^-126) lie far below every target's smallest subnormal,
// so they round to a signed zero.
inline std::uint32_t encode(float v, const MiniFloat& f, Overflow mode) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
  const std::uint32_t sign = (bits >> 31) << f.sign_shift;
  const std::uint32_t abs = bits & 0x7FFFFFFFu;
  const std::uint32_t overflow_mag =
      mode == Overflow::saturate ? f.max_mag : (f.inf_mag != 0 ? f.inf_mag : f.nan_mag);
  if (abs > 0x7F800000u) return sign | f.nan_mag;   // NaN
  if (abs == 0x7F800000u) return sign | overflow_mag;  // Inf
  const int exp32 = static_cast<int>(abs >> 23);
  if (exp32 == 0) return sign;
  const std::uint32_t m = (abs & 0x7FFFFFu) | 0x800000u;  // 24-bit significand
  const int e = exp32 - 127 + f.bias;                      // target biased exponent
  std::uint32_t mag;
  if (e >= 1) {
    // Normal: keep man_bits; a carry out of the mantissa bumps the exponent.
    const std::uint32_t q = shift_round_even(m, 23 - f.man_bits);
    mag = (static_cast<std::uint32_t>(e) << f.man_bits) + q - (std::uint32_t{1} << f.man_bits);
  } else {
    // Subnormal: units of 2^(1 - bias - man_bits); rounding up may give the
    // smallest normal, whose bit pattern follows on naturally.
    mag = shift_round_even(m, 23 - f.man_bits + 1 - e);
  }
  if (mag > f.max_mag) return sign | overflow_mag;
  return sign | mag;
}

// Builds the fp32 bit pattern directly (no libm): weight quantisation decodes
// every element, and ldexp would dominate its cost.
inline float decode(std::uint32_t b, const MiniFloat& f, int exp_bits) {
  const std::uint32_t sign = ((b >> f.sign_shift) & 1u) << 31;
  const std::uint32_t mag = b & ((std::uint32_t{1} << f.sign_shift) - 1);
  if (f.inf_mag != 0 && mag == f.inf_mag) return std::bit_cast<float>(sign | 0x7F800000u);
  if (mag > f.max_mag) return std::bit_cast<float>(sign | 0x7FC00000u);
  const std::uint32_t man = mag & ((std::uint32_t{1} << f.man_bits) - 1);
  const int e = static_cast<int>(mag >> f.man_bits) & ((1 << exp_bits) - 1);
  if (e == 0) {
    // Subnormal: man units of 2^(1 - bias - man_bits), a normal fp32 power of
    // two for every format here; the product is exact.
    const auto unit = static_cast<std::uint32_t>(127 + 1 - f.bias - f.man_bits) << 23;
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(
                                           static_cast<float>(man) * std::bit_cast<float>(unit)));
  }
  const auto exp32 = static_cast<std::uint32_t>(e - f.bias + 127);
  return std::bit_cast<float>(sign | (exp32 << 23) | (man << (23 - f.man_bits)));
}

inline constexpr MiniFloat kFp16{10, 15, 0x7BFF, 0x7C00, 0x7E00, 15};
inline constexpr MiniFloat kE4m3{3, 7, 0x7E, 0, 0x7F, 7};
inline constexpr MiniFloat kE5m2{2, 15, 0x7B, 0x7C, 0x7E, 7};
// FNUZ e4m3: magnitudes 0x01..0x7F are all finite (max 0x7F = 240); the NaN
// 0x80 is the sign bit alone, which the codec wrappers in numerics.cpp handle.
inline constexpr MiniFloat kE4m3Fnuz{3, 8, 0x7F, 0, 0, 7};
// e2m1 has no NaN: nan_mag 0 makes NaN encode as +-0 (sign cleared below).
inline constexpr MiniFloat kE2m1{1, 1, 0x7, 0, 0, 3};


// decode(encode(s, f, Overflow::saturate)) computed in the fp32 domain, for
// the quantisation loops: the mantissa rounded to nearest even on the bit
// pattern in the normal range, multiples of the subnormal quantum below it,
// then saturation. Equal to the codec bit for bit for every input (a test
// compares them); 2-3x faster because nothing is re-encoded.
struct RoundParams {
  std::uint32_t drop = 0;   // fp32 mantissa bits dropped: 23 - man_bits
  float max = 0;            // largest finite value
  float min_normal = 0;     // 2^(1 - bias)
  float quantum = 0;        // subnormal step 2^(1 - bias - man_bits)
  float inv_quantum = 0;
};

inline float pow2(int e) { return std::bit_cast<float>(static_cast<std::uint32_t>(127 + e) << 23); }

inline RoundParams round_params(const MiniFloat& f, int exp_bits) {
  return {static_cast<std::uint32_t>(23 - f.man_bits), decode(f.max_mag, f, exp_bits),
          pow2(1 - f.bias), pow2(1 - f.bias - f.man_bits), pow2(f.bias + f.man_bits - 1)};
}

inline float round_saturating(float s, const RoundParams& r) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(s);
  const std::uint32_t sign = bits & 0x80000000u;
  std::uint32_t mag = bits & 0x7FFFFFFFu;
  if (mag >= 0x7F800000u) {  // Inf saturates; NaN stays a (canonical quiet) NaN
    return std::bit_cast<float>(sign | (mag > 0x7F800000u ? 0x7FC00000u
                                                          : std::bit_cast<std::uint32_t>(r.max)));
  }
  const float a = std::bit_cast<float>(mag);
  if (a < r.min_normal) {
    // Exact: scaling by powers of two, and a * inv_quantum < 2^man_bits.
    mag = std::bit_cast<std::uint32_t>(round_half_even(a * r.inv_quantum) * r.quantum);
  } else {
    mag += ((std::uint32_t{1} << (r.drop - 1)) - 1) + ((mag >> r.drop) & 1u);
    mag &= ~((std::uint32_t{1} << r.drop) - 1);
    if (std::bit_cast<float>(mag) > r.max) mag = std::bit_cast<std::uint32_t>(r.max);
  }
  return std::bit_cast<float>(sign | mag);
}

}  // namespace tdmsim::emu::minifloat
