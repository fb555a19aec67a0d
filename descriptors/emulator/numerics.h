// Exact scalar conversions between fp32 and the narrow formats the MoE kernels
// use. Every encoder rounds to nearest, ties to even, on the bit pattern (no
// dependence on the FPU rounding mode or on compiler flags), so the emulator,
// its tests and the GPU kernels can agree bit for bit. Formats and their
// special values are described in docs/emulator.md ("Numerics").
#pragma once

#include <bit>
#include <cstdint>

namespace tdmsim::emu {

// What an encoder does with a value beyond the format's largest finite value.
enum class Overflow : std::uint8_t {
  saturate,  // clamp to +-max finite (what quantising kernels do)
  ieee,      // Inf where the format has one, NaN otherwise (OCP "non-saturating" mode)
};

// ---- bf16: 1 sign, 8 exponent, 7 mantissa bits (the top half of an fp32).
// NaN stays a quiet NaN with its sign; overflow rounds to Inf as IEEE does.
// Inline: weight generation rounds every element of an expert through it.
inline std::uint16_t fp32_to_bf16_bits(float v) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    // Quiet the NaN (a payload living only in the dropped low bits would
    // otherwise turn it into Inf).
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  }
  // Adding 0x7FFF plus the lowest kept bit rounds to nearest even; a carry
  // propagates into the exponent (up to Inf) exactly as IEEE rounding does.
  const std::uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7FFFu + lsb) >> 16);
}
inline float bf16_bits_to_fp32(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// ---- fp16 (IEEE binary16): 1/5/10, bias 15, subnormals, Inf, NaN, max 65504.
std::uint16_t fp32_to_fp16_bits(float v, Overflow mode = Overflow::ieee);
float fp16_bits_to_fp32(std::uint16_t b);

// ---- fp8 e4m3, OCP "FN" variant (as on MI355X/H100; not the gfx942 "FNUZ"):
// 1/4/3, bias 7, subnormals down to 2^-9, max +-448 (S.1111.110), no Inf;
// S.1111.111 is NaN (two NaN patterns, 0x7F and 0xFF). NaN input -> NaN
// (sign kept); Inf and out-of-range values saturate to +-448 in saturate
// mode, become NaN in ieee mode.
std::uint8_t fp32_to_fp8_e4m3_bits(float v, Overflow mode = Overflow::saturate);
float fp8_e4m3_bits_to_fp32(std::uint8_t b);

// ---- fp8 e4m3 "FNUZ" (gfx942 / MI300X, torch.float8_e4m3fnuz): 1/4/3, bias
// 8, subnormals down to 2^-10, max +-240 (S.1111.111), no Inf, a single
// unsigned zero (0x00) and a single NaN (0x80, the pattern OCP uses for -0).
// NaN input -> 0x80; a result that rounds to zero is +0 whatever its sign;
// Inf and out-of-range values saturate to +-240 in saturate mode and become
// NaN (0x80) in ieee mode.
std::uint8_t fp32_to_fp8_e4m3fnuz_bits(float v, Overflow mode = Overflow::saturate);
float fp8_e4m3fnuz_bits_to_fp32(std::uint8_t b);

// ---- fp8 e5m2 (OCP): 1/5/2, bias 15, IEEE-like Inf and NaN, max +-57344.
std::uint8_t fp32_to_fp8_e5m2_bits(float v, Overflow mode = Overflow::saturate);
float fp8_e5m2_bits_to_fp32(std::uint8_t b);

// ---- fp4 e2m1 (the OCP MX element of MXFP4): 1/2/1, bias 1, values
// {0, 0.5, 1, 1.5, 2, 3, 4, 6}; no Inf or NaN: out-of-range values saturate
// to +-6 and NaN encodes as +0 (MX carries NaN in the shared scale instead).
std::uint8_t fp32_to_fp4_e2m1_bits(float v);
float fp4_e2m1_bits_to_fp32(std::uint8_t b);

// ---- E8M0 (the OCP MX shared scale): a biased power of two 2^(b - 127);
// 0xFF is NaN.
float e8m0_to_fp32(std::uint8_t b);
// The E8M0 byte of 2^e, e clamped to the representable [-127, 127].
std::uint8_t e8m0_from_exponent(int e);

// ---- int4 (signed, two's complement in a nibble): round v to the nearest
// integer, ties to even, then clamp to [-8, 7]; NaN -> 0. Packed two per
// byte, element 2i in the low nibble (int4_pack / int4_unpack).
std::int8_t fp32_to_int4(float v);
std::uint8_t int4_pack(std::int8_t even, std::int8_t odd);
std::int8_t int4_unpack(std::uint8_t byte, int which);  // which: 0 low nibble, 1 high

// ---- int8: round v to the nearest integer, ties to even, then clamp to
// [-128, 127]; NaN -> 0.
std::int8_t fp32_to_int8(float v);

// Round to nearest integer with ties to even, independent of the FPU mode.
float round_half_even(float v);

// Convenience: the fp32 value nearest to v in each format (encode + decode).
inline float round_to_bf16(float v) { return bf16_bits_to_fp32(fp32_to_bf16_bits(v)); }
float round_to_fp16(float v);

}  // namespace tdmsim::emu
