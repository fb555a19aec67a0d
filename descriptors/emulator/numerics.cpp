#include "descriptors/emulator/numerics.h"

#include <bit>
#include <algorithm>
#include <cmath>

#include "descriptors/emulator/minifloat.h"

namespace tdmsim::emu {

using minifloat::decode;
using minifloat::encode;
using minifloat::kE2m1;
using minifloat::kE4m3;
using minifloat::kE4m3Fnuz;
using minifloat::kE5m2;
using minifloat::kFp16;

std::uint16_t fp32_to_fp16_bits(float v, Overflow mode) {
  return static_cast<std::uint16_t>(encode(v, kFp16, mode));
}
float fp16_bits_to_fp32(std::uint16_t b) { return decode(b, kFp16, 5); }

std::uint8_t fp32_to_fp8_e4m3_bits(float v, Overflow mode) {
  return static_cast<std::uint8_t>(encode(v, kE4m3, mode));
}
float fp8_e4m3_bits_to_fp32(std::uint8_t b) { return decode(b, kE4m3, 4); }

std::uint8_t fp32_to_fp8_e4m3fnuz_bits(float v, Overflow mode) {
  if (std::isnan(v)) return 0x80;
  // Overflow: |v| rounds past 240 (1.111b x 2^7) from the midpoint 248 to the
  // next binade, 256; the tie 248 goes to 256 (even mantissa), so >= 248.
  if (mode == Overflow::ieee && std::fabs(v) >= 248.0f) return 0x80;
  const std::uint32_t b = encode(v, kE4m3Fnuz, Overflow::saturate);
  if ((b & 0x7Fu) == 0) return 0x00;  // no negative zero: 0x80 is NaN
  return static_cast<std::uint8_t>(b);
}
float fp8_e4m3fnuz_bits_to_fp32(std::uint8_t b) {
  if (b == 0x80) return NAN;
  return decode(b, kE4m3Fnuz, 4);
}

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

std::uint8_t e8m0_from_exponent(int e) {
  return static_cast<std::uint8_t>(std::clamp(e, -127, 127) + 127);
}

std::int8_t fp32_to_int4(float v) {
  if (std::isnan(v)) return 0;
  const float r = round_half_even(v);
  if (r >= 7.0f) return 7;
  if (r <= -8.0f) return -8;
  return static_cast<std::int8_t>(r);
}

std::uint8_t int4_pack(std::int8_t even, std::int8_t odd) {
  return static_cast<std::uint8_t>((static_cast<std::uint8_t>(even) & 0xFu) |
                                   ((static_cast<std::uint8_t>(odd) & 0xFu) << 4));
}

std::int8_t int4_unpack(std::uint8_t byte, int which) {
  const int nibble = which == 0 ? byte & 0xF : byte >> 4;
  return static_cast<std::int8_t>(nibble >= 8 ? nibble - 16 : nibble);  // sign-extend
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
