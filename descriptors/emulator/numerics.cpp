#include "descriptors/emulator/numerics.h"

#include <bit>
#include <cmath>

namespace tdmsim::emu {
namespace {

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
std::uint32_t shift_round_even(std::uint32_t m, int shift) {
  if (shift <= 0) return m << -shift;
  if (shift > 31) return 0;  // m < 2^24: far below one half
  const std::uint32_t q = m >> shift;
  const std::uint32_t rem = m & ((std::uint32_t{1} << shift) - 1);
  const std::uint32_t half = std::uint32_t{1} << (shift - 1);
  return (rem > half || (rem == half && (q & 1u) != 0)) ? q + 1 : q;
}

// Encodes v into a MiniFloat (bit pattern in the low bits of the result).
// fp32 subnormals (< 2^-126) lie far below every target's smallest subnormal,
// so they round to a signed zero.
std::uint32_t encode(float v, const MiniFloat& f, Overflow mode) {
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

float decode(std::uint32_t b, const MiniFloat& f, int exp_bits) {
  const bool neg = ((b >> f.sign_shift) & 1u) != 0;
  const std::uint32_t mag = b & ((std::uint32_t{1} << f.sign_shift) - 1);
  float r;
  if (f.inf_mag != 0 && mag == f.inf_mag) {
    r = INFINITY;
  } else if (mag > f.max_mag) {
    r = NAN;
  } else {
    const std::uint32_t man = mag & ((std::uint32_t{1} << f.man_bits) - 1);
    const int e = static_cast<int>(mag >> f.man_bits) & ((1 << exp_bits) - 1);
    // Exact: at most 11 significant bits times a power of two within fp32 range.
    r = e == 0 ? std::ldexp(static_cast<float>(man), 1 - f.bias - f.man_bits)
               : std::ldexp(static_cast<float>(man | (std::uint32_t{1} << f.man_bits)),
                            e - f.bias - f.man_bits);
  }
  return neg ? -r : r;
}

constexpr MiniFloat kFp16{10, 15, 0x7BFF, 0x7C00, 0x7E00, 15};
constexpr MiniFloat kE4m3{3, 7, 0x7E, 0, 0x7F, 7};
constexpr MiniFloat kE5m2{2, 15, 0x7B, 0x7C, 0x7E, 7};
// e2m1 has no NaN: nan_mag 0 makes NaN encode as +-0 (sign cleared below).
constexpr MiniFloat kE2m1{1, 1, 0x7, 0, 0, 3};

}  // namespace

std::uint16_t fp32_to_fp16_bits(float v, Overflow mode) {
  return static_cast<std::uint16_t>(encode(v, kFp16, mode));
}
float fp16_bits_to_fp32(std::uint16_t b) { return decode(b, kFp16, 5); }

std::uint8_t fp32_to_fp8_e4m3_bits(float v, Overflow mode) {
  return static_cast<std::uint8_t>(encode(v, kE4m3, mode));
}
float fp8_e4m3_bits_to_fp32(std::uint8_t b) { return decode(b, kE4m3, 4); }

std::uint8_t fp32_to_fp8_e5m2_bits(float v, Overflow mode) {
  return static_cast<std::uint8_t>(encode(v, kE5m2, mode));
}
float fp8_e5m2_bits_to_fp32(std::uint8_t b) { return decode(b, kE5m2, 5); }

std::uint8_t fp32_to_fp4_e2m1_bits(float v) {
  if (std::isnan(v)) return 0;
  return static_cast<std::uint8_t>(encode(v, kE2m1, Overflow::saturate));
}
float fp4_e2m1_bits_to_fp32(std::uint8_t b) { return decode(b & 0xFu, kE2m1, 2); }

float e8m0_to_fp32(std::uint8_t b) {
  if (b == 0xFF) return NAN;
  return std::ldexp(1.0f, static_cast<int>(b) - 127);
}

float round_half_even(float v) {
  if (!std::isfinite(v)) return v;
  const float t = std::trunc(v);
  const float frac = std::fabs(v - t);  // exact for |v| < 2^24; 0 above (already integral)
  if (frac < 0.5f) return t;
  const float away = t + (v < 0 ? -1.0f : 1.0f);
  if (frac > 0.5f) return away;
  return std::fmod(t, 2.0f) == 0.0f ? t : away;
}

std::int8_t fp32_to_int8(float v) {
  if (std::isnan(v)) return 0;
  const float r = round_half_even(v);
  if (r >= 127.0f) return 127;
  if (r <= -128.0f) return -128;
  return static_cast<std::int8_t>(r);
}

float round_to_fp16(float v) { return fp16_bits_to_fp32(fp32_to_fp16_bits(v)); }

}  // namespace tdmsim::emu
