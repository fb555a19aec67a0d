// Scalar conversions: known bit patterns, special values, and a brute-force
// nearest-value oracle over random inputs for every narrow format.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "descriptors/emulator/minifloat.h"
#include "descriptors/emulator/numerics.h"

namespace tdmsim::emu {
namespace {

float f(std::uint32_t bits) { return std::bit_cast<float>(bits); }

// Nearest representable value by exhaustive search over the format's
// non-negative finite codes; ties go to the code with an even last bit.
// Values beyond the largest finite saturate (the encoders' saturate mode).
struct Oracle {
  std::vector<std::pair<double, std::uint32_t>> codes;  // (value, code), ascending

  Oracle(std::uint32_t n_codes, const std::function<float(std::uint32_t)>& decode) {
    for (std::uint32_t c = 0; c < n_codes; ++c) {
      const float v = decode(c);
      if (std::isfinite(v) && !std::signbit(v)) codes.emplace_back(v, c);
    }
  }
  std::uint32_t nearest(double a) const {  // a >= 0
    auto hi = std::lower_bound(codes.begin(), codes.end(), a,
                               [](const auto& c, double v) { return c.first < v; });
    if (hi == codes.end()) return codes.back().second;  // saturate
    if (hi == codes.begin()) return hi->second;
    const auto lo = hi - 1;
    const double dl = a - lo->first, dh = hi->first - a;
    if (dl != dh) return dl < dh ? lo->second : hi->second;
    return (lo->second & 1u) == 0 ? lo->second : hi->second;
  }
};

// Random floats spread over many binades around the format's range.
float random_value(std::mt19937_64& rng, int min_exp, int max_exp) {
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(min_exp, max_exp);
  return std::ldexp(mant(rng), ex(rng));
}

}  // namespace

TEST_CASE("bf16 encodes known patterns", "[numerics]") {
  CHECK(fp32_to_bf16_bits(1.0f) == 0x3F80);
  CHECK(fp32_to_bf16_bits(-2.0f) == 0xC000);
  CHECK(fp32_to_bf16_bits(f(0x3F808000)) == 0x3F80);  // tie -> even
  CHECK(fp32_to_bf16_bits(f(0x3F818000)) == 0x3F82);  // tie -> even (up)
  CHECK(fp32_to_bf16_bits(f(0x3F808001)) == 0x3F81);  // above the tie
  CHECK(fp32_to_bf16_bits(f(0x7F7FFFFF)) == 0x7F80);  // max float rounds to Inf
  CHECK(fp32_to_bf16_bits(INFINITY) == 0x7F80);
  CHECK(fp32_to_bf16_bits(-INFINITY) == 0xFF80);
  CHECK(fp32_to_bf16_bits(-0.0f) == 0x8000);
  CHECK(fp32_to_bf16_bits(f(0x00010000)) == 0x0001);  // subnormal kept
  CHECK(fp32_to_bf16_bits(f(0x00008000)) == 0x0000);  // half the smallest subnormal: tie -> 0
  CHECK(fp32_to_bf16_bits(f(0x7FC00001)) == 0x7FC0);
  CHECK(fp32_to_bf16_bits(f(0x7F800001)) == 0x7FC0);  // signalling NaN stays NaN (quieted)
  CHECK(fp32_to_bf16_bits(f(0xFF800001)) == 0xFFC0);
  CHECK(bf16_bits_to_fp32(0x3F80) == 1.0f);
  CHECK(std::isnan(bf16_bits_to_fp32(0x7FC0)));
  CHECK(round_to_bf16(3.14159265f) == 3.140625f);
}

TEST_CASE("fp16 encodes known patterns", "[numerics]") {
  CHECK(fp32_to_fp16_bits(1.0f) == 0x3C00);
  CHECK(fp32_to_fp16_bits(-2.0f) == 0xC000);
  CHECK(fp32_to_fp16_bits(0.1f) == 0x2E66);
  CHECK(fp32_to_fp16_bits(65504.0f) == 0x7BFF);
  CHECK(fp32_to_fp16_bits(65519.0f) == 0x7BFF);
  CHECK(fp32_to_fp16_bits(65520.0f) == 0x7C00);  // tie with 65536 -> even -> Inf
  CHECK(fp32_to_fp16_bits(65520.0f, Overflow::saturate) == 0x7BFF);
  CHECK(fp32_to_fp16_bits(std::ldexp(1.0f, -14)) == 0x0400);     // smallest normal
  CHECK(fp32_to_fp16_bits(std::ldexp(1.0f, -24)) == 0x0001);     // smallest subnormal
  CHECK(fp32_to_fp16_bits(std::ldexp(1.0f, -25)) == 0x0000);     // tie -> even 0
  CHECK(fp32_to_fp16_bits(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(fp32_to_fp16_bits(std::ldexp(1023.5f, -24)) == 0x0400);  // rounds up into the normals
  CHECK(fp32_to_fp16_bits(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);       // tie -> even
  CHECK(fp32_to_fp16_bits(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);   // tie -> even (up)
  CHECK(fp32_to_fp16_bits(INFINITY) == 0x7C00);
  CHECK(fp32_to_fp16_bits(-INFINITY, Overflow::saturate) == 0xFBFF);
  CHECK(fp32_to_fp16_bits(NAN) == 0x7E00);
  CHECK(fp32_to_fp16_bits(f(0x00000001)) == 0x0000);  // fp32 subnormal
  CHECK(fp16_bits_to_fp32(0x7BFF) == 65504.0f);
  CHECK(fp16_bits_to_fp32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(std::isinf(fp16_bits_to_fp32(0xFC00)));
  CHECK(std::isnan(fp16_bits_to_fp32(0x7C01)));
}

TEST_CASE("fp8 e4m3 (OCP FN) encodes known patterns", "[numerics]") {
  CHECK(fp32_to_fp8_e4m3_bits(1.0f) == 0x38);
  CHECK(fp32_to_fp8_e4m3_bits(-1.75f) == 0xBE);
  CHECK(fp32_to_fp8_e4m3_bits(448.0f) == 0x7E);
  CHECK(fp32_to_fp8_e4m3_bits(464.0f) == 0x7E);  // tie between 448 and (480): even
  CHECK(fp32_to_fp8_e4m3_bits(480.0f) == 0x7E);  // saturates
  CHECK(fp32_to_fp8_e4m3_bits(1e30f) == 0x7E);
  CHECK(fp32_to_fp8_e4m3_bits(-1e30f) == 0xFE);
  CHECK(fp32_to_fp8_e4m3_bits(INFINITY) == 0x7E);
  CHECK(fp32_to_fp8_e4m3_bits(480.0f, Overflow::ieee) == 0x7F);  // non-saturating: NaN
  CHECK(fp32_to_fp8_e4m3_bits(INFINITY, Overflow::ieee) == 0x7F);
  CHECK(fp32_to_fp8_e4m3_bits(NAN) == 0x7F);
  CHECK(fp32_to_fp8_e4m3_bits(-NAN) == 0xFF);
  CHECK(fp32_to_fp8_e4m3_bits(std::ldexp(1.0f, -6)) == 0x08);   // smallest normal
  CHECK(fp32_to_fp8_e4m3_bits(std::ldexp(7.0f, -9)) == 0x07);   // largest subnormal
  CHECK(fp32_to_fp8_e4m3_bits(std::ldexp(1.0f, -9)) == 0x01);   // smallest subnormal
  CHECK(fp32_to_fp8_e4m3_bits(std::ldexp(1.0f, -10)) == 0x00);  // tie -> even 0
  CHECK(fp32_to_fp8_e4m3_bits(std::ldexp(1.5f, -10)) == 0x01);
  CHECK(fp32_to_fp8_e4m3_bits(std::ldexp(7.5f, -9)) == 0x08);   // tie -> the even normal
  CHECK(fp8_e4m3_bits_to_fp32(0x7E) == 448.0f);
  CHECK(fp8_e4m3_bits_to_fp32(0xFE) == -448.0f);
  CHECK(fp8_e4m3_bits_to_fp32(0x01) == std::ldexp(1.0f, -9));
  CHECK(fp8_e4m3_bits_to_fp32(0x78) == 256.0f);  // an FN finite value (IEEE-style would be Inf)
  CHECK(std::isnan(fp8_e4m3_bits_to_fp32(0x7F)));
  CHECK(std::isnan(fp8_e4m3_bits_to_fp32(0xFF)));
  for (std::uint32_t b = 0; b < 256; ++b) {  // every finite code round-trips
    const float v = fp8_e4m3_bits_to_fp32(static_cast<std::uint8_t>(b));
    if (!std::isnan(v)) CHECK(fp32_to_fp8_e4m3_bits(v) == b);
  }
}

TEST_CASE("fp8 e5m2 encodes known patterns", "[numerics]") {
  CHECK(fp32_to_fp8_e5m2_bits(1.0f) == 0x3C);
  CHECK(fp32_to_fp8_e5m2_bits(57344.0f) == 0x7B);
  CHECK(fp32_to_fp8_e5m2_bits(61440.0f) == 0x7B);                  // tie to Inf saturates
  CHECK(fp32_to_fp8_e5m2_bits(61440.0f, Overflow::ieee) == 0x7C);  // ... or becomes Inf
  CHECK(fp32_to_fp8_e5m2_bits(INFINITY, Overflow::ieee) == 0x7C);
  CHECK(fp32_to_fp8_e5m2_bits(-INFINITY) == 0xFB);
  CHECK(fp32_to_fp8_e5m2_bits(NAN) == 0x7E);
  CHECK(fp32_to_fp8_e5m2_bits(std::ldexp(1.0f, -16)) == 0x01);
  CHECK(std::isinf(fp8_e5m2_bits_to_fp32(0x7C)));
  CHECK(std::isnan(fp8_e5m2_bits_to_fp32(0x7D)));
  for (std::uint32_t b = 0; b < 256; ++b) {
    const float v = fp8_e5m2_bits_to_fp32(static_cast<std::uint8_t>(b));
    if (std::isfinite(v)) CHECK(fp32_to_fp8_e5m2_bits(v) == b);
  }
}

TEST_CASE("fp4 e2m1, e8m0 and int8 encode known patterns", "[numerics]") {
  const float values[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (std::uint8_t b = 0; b < 8; ++b) {
    CHECK(fp4_e2m1_bits_to_fp32(b) == values[b]);
    CHECK(fp4_e2m1_bits_to_fp32(static_cast<std::uint8_t>(b | 8)) == -values[b]);
    CHECK(fp32_to_fp4_e2m1_bits(values[b]) == b);
  }
  CHECK(fp32_to_fp4_e2m1_bits(0.25f) == 0x0);  // tie -> even (0)
  CHECK(fp32_to_fp4_e2m1_bits(0.75f) == 0x2);  // tie -> even (1.0)
  CHECK(fp32_to_fp4_e2m1_bits(5.0f) == 0x6);   // tie -> even (4)
  CHECK(fp32_to_fp4_e2m1_bits(7.0f) == 0x7);   // saturates at 6
  CHECK(fp32_to_fp4_e2m1_bits(-100.0f) == 0xF);
  CHECK(fp32_to_fp4_e2m1_bits(NAN) == 0x0);
  CHECK(e8m0_to_fp32(127) == 1.0f);
  CHECK(e8m0_to_fp32(0) == std::ldexp(1.0f, -127));
  CHECK(e8m0_to_fp32(254) == std::ldexp(1.0f, 127));
  CHECK(std::isnan(e8m0_to_fp32(255)));
  CHECK(fp32_to_int8(2.5f) == 2);
  CHECK(fp32_to_int8(3.5f) == 4);
  CHECK(fp32_to_int8(-2.5f) == -2);
  CHECK(fp32_to_int8(-2.6f) == -3);
  CHECK(fp32_to_int8(126.5f) == 126);
  CHECK(fp32_to_int8(200.0f) == 127);
  CHECK(fp32_to_int8(-127.5f) == -128);
  CHECK(fp32_to_int8(-1e9f) == -128);
  CHECK(fp32_to_int8(NAN) == 0);
  CHECK(round_half_even(0.5f) == 0.0f);
  CHECK(round_half_even(1.5f) == 2.0f);
  CHECK(round_half_even(-0.5f) == 0.0f);
  CHECK(std::signbit(round_half_even(-0.5f)));
  CHECK(round_half_even(8388609.0f) == 8388609.0f);  // 2^23 + 1: already integral
}

TEST_CASE("encoders return the nearest value, ties to even (oracle, 20000 values each)",
          "[numerics][property]") {
  std::mt19937_64 rng(7);
  struct Format {
    const char* name;
    std::uint32_t codes;
    std::function<float(std::uint32_t)> decode;
    std::function<std::uint32_t(float)> encode;  // saturating
    int min_exp, max_exp;
  };
  const Format formats[] = {
      {"fp16", 1u << 16, [](std::uint32_t b) { return fp16_bits_to_fp32(static_cast<std::uint16_t>(b)); },
       [](float v) { return std::uint32_t{fp32_to_fp16_bits(v, Overflow::saturate)}; }, -27, 17},
      {"e4m3", 256, [](std::uint32_t b) { return fp8_e4m3_bits_to_fp32(static_cast<std::uint8_t>(b)); },
       [](float v) { return std::uint32_t{fp32_to_fp8_e4m3_bits(v)}; }, -12, 10},
      {"e5m2", 256, [](std::uint32_t b) { return fp8_e5m2_bits_to_fp32(static_cast<std::uint8_t>(b)); },
       [](float v) { return std::uint32_t{fp32_to_fp8_e5m2_bits(v)}; }, -19, 17},
      {"e2m1", 16, [](std::uint32_t b) { return fp4_e2m1_bits_to_fp32(static_cast<std::uint8_t>(b)); },
       [](float v) { return std::uint32_t{fp32_to_fp4_e2m1_bits(v)}; }, -4, 4},
  };
  for (const Format& fmt : formats) {
    const Oracle oracle(fmt.codes, fmt.decode);
    const std::uint32_t sign_bit = fmt.codes / 2;
    for (int i = 0; i < 20000; ++i) {
      float v = random_value(rng, fmt.min_exp, fmt.max_exp);
      if (i % 7 == 0) {  // exact midpoints between neighbouring codes
        const auto k = std::uniform_int_distribution<std::size_t>(0, oracle.codes.size() - 2)(rng);
        v = static_cast<float>((oracle.codes[k].first + oracle.codes[k + 1].first) / 2);
      }
      const bool neg = i % 2 == 1;
      const std::uint32_t want = oracle.nearest(v) | (neg ? sign_bit : 0u);
      INFO(fmt.name << " value " << (neg ? -v : v));
      REQUIRE(fmt.encode(neg ? -v : v) == want);
    }
  }
}

TEST_CASE("fp16 agrees with the compiler's _Float16 conversion", "[numerics][property]") {
#if defined(__FLT16_MAX__)
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    const float v = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (std::isnan(v)) continue;
    const _Float16 h = static_cast<_Float16>(v);
    INFO("bits " << std::bit_cast<std::uint32_t>(v));
    REQUIRE(fp32_to_fp16_bits(v) == std::bit_cast<std::uint16_t>(h));
  }
#else
  SUCCEED("no _Float16 on this compiler");
#endif
}

}  // namespace tdmsim::emu

namespace tdmsim::emu {

TEST_CASE("the fp32-domain fp8 rounding equals the codec bit for bit", "[numerics][property]") {
  using namespace minifloat;
  std::mt19937_64 rng(13);
  for (const auto& [f, exp_bits] : {std::pair{kE4m3, 4}, std::pair{kE5m2, 5}}) {
    const RoundParams r = round_params(f, exp_bits);
    std::vector<float> values = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, r.max, -r.max,
                                 r.min_normal, r.quantum, r.quantum / 2, 1.5f * r.quantum / 2,
                                 std::nextafter(r.min_normal, 0.0f), 464.0f, 480.0f, 61440.0f,
                                 std::bit_cast<float>(0x00000001u), 3.0e38f};
    for (int i = 0; i < 300000; ++i) {
      const float v = i % 3 == 0 ? std::bit_cast<float>(static_cast<std::uint32_t>(rng()))
                                 : random_value(rng, -20, 18) * (i % 2 == 0 ? 1.0f : -1.0f);
      values.push_back(v);
    }
    for (const float v : values) {
      const float want = decode(encode(v, f, Overflow::saturate), f, exp_bits);
      const float got = round_saturating(v, r);
      INFO("value bits " << std::bit_cast<std::uint32_t>(v));
      REQUIRE(std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want));
    }
  }
}

}  // namespace tdmsim::emu
