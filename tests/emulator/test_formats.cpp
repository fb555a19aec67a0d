// The AITER quantisation formats, against hand-worked values: fp8 e4m3 FNUZ
// (gfx942), OCP MX scales (MXFP8, MXFP4), fp4 ties, int4 range and packing,
// int4 group scales. docs/emulator.md ("Numerics", "Quantisation") derives
// each expected value.
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "descriptors/emulator/minifloat.h"
#include "descriptors/emulator/numerics.h"
#include "descriptors/emulator/quantize.h"

namespace tdmsim::emu {

TEST_CASE("fp8 e4m3 FNUZ: bias 8, max 240, 0x80 NaN, no -0", "[numerics][formats]") {
  CHECK(fp32_to_fp8_e4m3fnuz_bits(1.0f) == 0x40);   // 0 1000 000: 2^(8-8)
  CHECK(fp32_to_fp8_e4m3fnuz_bits(-2.0f) == 0xC8);  // 1 1001 000
  CHECK(fp32_to_fp8_e4m3fnuz_bits(240.0f) == 0x7F);  // 1.875 x 2^7, the largest
  CHECK(fp32_to_fp8_e4m3fnuz_bits(0x1p-7f) == 0x08);  // smallest normal
  CHECK(fp32_to_fp8_e4m3fnuz_bits(0x1p-10f) == 0x01);  // smallest subnormal
  CHECK(fp32_to_fp8_e4m3fnuz_bits(0x1p-11f) == 0x00);  // half of it: tie -> even (0)
  CHECK(fp32_to_fp8_e4m3fnuz_bits(0x1.8p-11f) == 0x01);  // above the tie
  CHECK(fp32_to_fp8_e4m3fnuz_bits(0x1.8p-10f) == 0x02);  // 1.5 units: tie -> even (2)
  // Saturation and the ieee mode's NaN: 248 is the midpoint to 256.
  CHECK(fp32_to_fp8_e4m3fnuz_bits(1000.0f) == 0x7F);
  CHECK(fp32_to_fp8_e4m3fnuz_bits(-INFINITY) == 0xFF);
  CHECK(fp32_to_fp8_e4m3fnuz_bits(247.9f, Overflow::ieee) == 0x7F);
  CHECK(fp32_to_fp8_e4m3fnuz_bits(248.0f, Overflow::ieee) == 0x80);
  CHECK(fp32_to_fp8_e4m3fnuz_bits(INFINITY, Overflow::ieee) == 0x80);
  // One zero, one NaN.
  CHECK(fp32_to_fp8_e4m3fnuz_bits(-0.0f) == 0x00);
  CHECK(fp32_to_fp8_e4m3fnuz_bits(-1e-6f) == 0x00);
  CHECK(fp32_to_fp8_e4m3fnuz_bits(NAN) == 0x80);
  CHECK(fp32_to_fp8_e4m3fnuz_bits(-NAN) == 0x80);
  CHECK(std::isnan(fp8_e4m3fnuz_bits_to_fp32(0x80)));
  CHECK(fp8_e4m3fnuz_bits_to_fp32(0x00) == 0.0f);
  CHECK_FALSE(std::signbit(fp8_e4m3fnuz_bits_to_fp32(0x00)));
  CHECK(fp8_e4m3fnuz_bits_to_fp32(0xFF) == -240.0f);
  CHECK(fp8_e4m3fnuz_bits_to_fp32(0x01) == 0x1p-10f);
  // Every code but NaN decodes and re-encodes to itself.
  for (unsigned b = 0; b < 256; ++b) {
    if (b == 0x80) continue;
    INFO("code " << b);
    CHECK(fp32_to_fp8_e4m3fnuz_bits(fp8_e4m3fnuz_bits_to_fp32(static_cast<std::uint8_t>(b))) == b);
  }
  // The same byte read as OCP e4m3 is twice the FNUZ value (bias 7 vs 8),
  // subnormals included: what the timing model's FNUZ -> OCP widening uses.
  for (unsigned b = 1; b < 0x7F; ++b) {
    const auto u = static_cast<std::uint8_t>(b);
    CHECK(fp8_e4m3_bits_to_fp32(u) == 2.0f * fp8_e4m3fnuz_bits_to_fp32(u));
    CHECK(fp8_e4m3_bits_to_fp32(u | 0x80) == 2.0f * fp8_e4m3fnuz_bits_to_fp32(u | 0x80));
  }
}

TEST_CASE("fp8 e4m3 FNUZ rounds to nearest even (brute force over 20000 values)",
          "[numerics][formats][property]") {
  std::vector<float> values;
  for (unsigned b = 0; b < 0x80; ++b) values.push_back(fp8_e4m3fnuz_bits_to_fp32(static_cast<std::uint8_t>(b)));
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-13, 9);
  for (int i = 0; i < 20000; ++i) {
    const float v = std::ldexp(mant(rng), ex(rng));
    std::uint32_t best = 0x7F;  // saturate above the largest
    for (std::uint32_t c = 0; c < 0x80; ++c) {
      const double d = std::fabs(double(values[c]) - v), db = std::fabs(double(values[best]) - v);
      if (d < db || (d == db && (c & 1u) == 0 && (best & 1u) == 1)) best = c;
    }
    INFO("v = " << v);
    REQUIRE(fp32_to_fp8_e4m3fnuz_bits(v) == best);
    REQUIRE(fp32_to_fp8_e4m3fnuz_bits(-v) == (best == 0 ? 0u : (best | 0x80u)));
  }
}

TEST_CASE("E8M0 scale bytes and the OCP MX shared exponent", "[numerics][formats]") {
  CHECK(e8m0_from_exponent(0) == 127);
  CHECK(e8m0_from_exponent(-127) == 0);
  CHECK(e8m0_from_exponent(-200) == 0);  // clamped: 0xFF is NaN, 0x00 is 2^-127
  CHECK(e8m0_from_exponent(127) == 254);
  CHECK(e8m0_from_exponent(300) == 254);
  CHECK(e8m0_to_fp32(e8m0_from_exponent(-3)) == 0.125f);
  // floor(log2 amax) - emax_elem: e2m1 emax 2 (6 = 1.5 x 2^2), e4m3 emax 8
  // (448 = 1.75 x 2^8).
  CHECK(mx_scale_exponent(448.0f, DType::fp8_e4m3) == 0);
  CHECK(mx_scale_exponent(511.0f, DType::fp8_e4m3) == 0);  // 511 / 1 saturates to 448
  CHECK(mx_scale_exponent(512.0f, DType::fp8_e4m3) == 1);
  CHECK(mx_scale_exponent(1.0f, DType::fp8_e4m3) == -8);
  CHECK(mx_scale_exponent(0x1p-140f, DType::fp8_e4m3) == -127);  // clamped to E8M0
  CHECK(mx_scale_exponent(1.0f, DType::mxfp4) == -2);
  CHECK(mx_scale_exponent(7.0f, DType::mxfp4) == 0);  // 7 / 1 saturates to 6
  CHECK(mx_scale_exponent(0.0f, DType::fp8_e4m3) == 0);
  CHECK(mx_scale_exponent(INFINITY, DType::mxfp4) == 0);
}

TEST_CASE("fp4 e2m1 rounds ties to even", "[numerics][formats]") {
  // Neighbours: 0 | 0.5 (m=1) | 1 (m=0) | 1.5 (m=1) | 2 (m=0) | 3 (m=1) | 4 (m=0) | 6 (m=1).
  CHECK(fp4_e2m1_bits_to_fp32(fp32_to_fp4_e2m1_bits(0.25f)) == 0.0f);
  CHECK(fp4_e2m1_bits_to_fp32(fp32_to_fp4_e2m1_bits(0.75f)) == 1.0f);
  CHECK(fp4_e2m1_bits_to_fp32(fp32_to_fp4_e2m1_bits(1.25f)) == 1.0f);
  CHECK(fp4_e2m1_bits_to_fp32(fp32_to_fp4_e2m1_bits(1.75f)) == 2.0f);
  CHECK(fp4_e2m1_bits_to_fp32(fp32_to_fp4_e2m1_bits(2.5f)) == 2.0f);
  CHECK(fp4_e2m1_bits_to_fp32(fp32_to_fp4_e2m1_bits(3.5f)) == 4.0f);
  CHECK(fp4_e2m1_bits_to_fp32(fp32_to_fp4_e2m1_bits(5.0f)) == 4.0f);
  CHECK(fp4_e2m1_bits_to_fp32(fp32_to_fp4_e2m1_bits(-5.0f)) == -4.0f);
  CHECK(fp4_e2m1_bits_to_fp32(fp32_to_fp4_e2m1_bits(5.01f)) == 6.0f);
  CHECK(fp32_to_fp4_e2m1_bits(6.0f) == 0x7);
  CHECK(fp32_to_fp4_e2m1_bits(-6.0f) == 0xF);
  CHECK(fp32_to_fp4_e2m1_bits(0.5f) == 0x1);  // the subnormal
  CHECK(fp32_to_fp4_e2m1_bits(100.0f) == 0x7);  // saturates
}

TEST_CASE("int4: range, ties to even, two's-complement nibbles", "[numerics][formats]") {
  CHECK(fp32_to_int4(2.5f) == 2);
  CHECK(fp32_to_int4(3.5f) == 4);
  CHECK(fp32_to_int4(-2.5f) == -2);
  CHECK(fp32_to_int4(-0.5f) == 0);
  CHECK(fp32_to_int4(6.6f) == 7);
  CHECK(fp32_to_int4(7.6f) == 7);
  CHECK(fp32_to_int4(-8.4f) == -8);
  CHECK(fp32_to_int4(-100.0f) == -8);
  CHECK(fp32_to_int4(NAN) == 0);
  CHECK(int4_pack(-1, 7) == 0x7F);
  CHECK(int4_pack(-8, 0) == 0x08);
  CHECK(int4_unpack(0x7F, 0) == -1);
  CHECK(int4_unpack(0x7F, 1) == 7);
  CHECK(int4_unpack(0x08, 0) == -8);
  for (int a = -8; a <= 7; ++a) {
    for (int b = -8; b <= 7; ++b) {
      const auto byte = int4_pack(static_cast<std::int8_t>(a), static_cast<std::int8_t>(b));
      REQUIRE(int4_unpack(byte, 0) == a);
      REQUIRE(int4_unpack(byte, 1) == b);
    }
  }
}

TEST_CASE("MXFP8 and MXFP4 groups: shared power-of-two scale per 32 along K",
          "[quantize][formats]") {
  SECTION("MXFP8 (e4m3 elements) on activations") {
    std::vector<float> a(64, 0.0f);
    a[0] = 1.0f;   // group 0 amax 1: scale 2^(0 - 8); 1 -> 256 exact
    a[1] = 0.3f;   // 76.8 -> 80 (e4m3 step 8 in [64, 128)) -> 0.3125
    a[2] = -0.01f; // -2.56 -> -2.5 (step 0.25 in [2, 4)) -> -0.009765625
    a[40] = 600.0f;  // group 1 amax 600: floor(log2) 9 -> scale 2; 300 -> 288 (step 32) -> 576
    a[41] = 3.0f;    // 1.5 exact -> 3
    quantize_activations(a.data(), 1, 64, 64, DType::fp8_e4m3, Quant::per_1x32, 0.0f);
    CHECK(a[0] == 1.0f);
    CHECK(a[1] == 0.3125f);
    CHECK(a[2] == -0.009765625f);
    CHECK(a[40] == 576.0f);
    CHECK(a[41] == 3.0f);
  }
  SECTION("MXFP8: a group whose amax exceeds 448 x scale saturates") {
    std::vector<float> w(32, 0.0f);
    w[0] = 500.0f;  // floor(log2 500) = 8 -> scale 1; 500 saturates to 448
    w[1] = -479.0f;
    quantize_weights(w.data(), 1, 32, 0, DType::fp8_e4m3, Quant::per_1x32, 1.0f);
    CHECK(w[0] == 448.0f);
    CHECK(w[1] == -448.0f);
  }
  SECTION("MXFP4 activations (fp4 x fp4)") {
    std::vector<float> a(32, 0.0f);
    a[0] = 1.0f;   // amax 1: scale 2^-2; 4 -> 1
    a[1] = 0.3f;   // 1.2 -> 1 -> 0.25
    a[2] = 0.625f; // 2.5 -> tie -> 2 -> 0.5
    a[3] = -0.875f;  // -3.5 -> tie -> -4 -> -1
    quantize_activations(a.data(), 1, 32, 32, DType::mxfp4, Quant::per_1x32, 0.0f);
    CHECK(a[0] == 1.0f);
    CHECK(a[1] == 0.25f);
    CHECK(a[2] == 0.5f);
    CHECK(a[3] == -1.0f);
  }
  SECTION("mxfp4 with the legacy quant none is per_1x32") {
    std::vector<float> a(32, 0.0f), b;
    a[0] = 1.0f;
    a[1] = 0.3f;
    b = a;
    quantize_weights(a.data(), 1, 32, 0, DType::mxfp4, Quant::none, 1.0f);
    quantize_weights(b.data(), 1, 32, 0, DType::mxfp4, Quant::per_1x32, 1.0f);
    CHECK(a == b);
  }
}

TEST_CASE("int4 weights: group and per-channel scales amax / 7", "[quantize][formats]") {
  const std::vector<float> row = {7.0f, 2.5f, -3.5f, 0.4f};
  // 64 columns: group 0 holds row[0..3] (amax 7, scale 1), group 1 (from
  // column 32) holds -14, 5, 3, 1 (amax 14, scale 2).
  std::vector<float> w(64, 0.0f);
  std::copy(row.begin(), row.end(), w.begin());
  w[32] = -14.0f;
  w[33] = 5.0f;   // 2.5 -> 2 -> 4
  w[34] = 3.0f;   // 1.5 -> 2 -> 4
  w[35] = 1.0f;   // 0.5 -> 0 -> 0
  SECTION("group_32") {
    quantize_weights(w.data(), 1, 64, 0, DType::int4, Quant::group_32, 1.0f);
    CHECK(w[0] == 7.0f);
    CHECK(w[1] == 2.0f);
    CHECK(w[2] == -4.0f);
    CHECK(w[3] == 0.0f);
    CHECK(w[32] == -14.0f);
    CHECK(w[33] == 4.0f);
    CHECK(w[34] == 4.0f);
    CHECK(w[35] == 0.0f);
  }
  SECTION("group_128 (one group over the 64 columns: scale 2)") {
    quantize_weights(w.data(), 1, 64, 0, DType::int4, Quant::group_128, 1.0f);
    CHECK(w[0] == 8.0f);    // 3.5 -> 4
    CHECK(w[1] == 2.0f);    // 1.25 -> 1
    CHECK(w[2] == -4.0f);   // -1.75 -> -2
    CHECK(w[3] == 0.0f);    // 0.2 -> 0
    CHECK(w[32] == -14.0f);
  }
  SECTION("per_token: one scale per output channel") {
    std::vector<float> two = {7.0f, 3.5f, 14.0f, 3.0f};  // rows of 2: scales 1 and 2
    quantize_weights(two.data(), 2, 2, 0, DType::int4, Quant::per_token, 1.0f);
    CHECK(two[1] == 4.0f);
    CHECK(two[3] == 4.0f);
  }
}

TEST_CASE("FNUZ tensors: 240 range and no -0 after quantisation", "[quantize][formats]") {
  std::vector<float> a = {240.0f, -0.0004f, 60.0f, -120.0f};  // per-tensor amax 240: scale 1
  quantize_activations(a.data(), 1, 4, 4, DType::fp8_e4m3_fnuz, Quant::per_tensor, 240.0f);
  CHECK(a[0] == 240.0f);
  CHECK(a[1] == 0.0f);
  CHECK_FALSE(std::signbit(a[1]));  // FNUZ has no -0
  CHECK(a[2] == 60.0f);
  CHECK(a[3] == -120.0f);
  std::vector<float> b = {-0.0004f};  // 0.41 of the smallest subnormal 2^-10
  CHECK(quant_dequant(b[0], 1.0f, DType::fp8_e4m3_fnuz) == 0.0f);
  CHECK_FALSE(std::signbit(quant_dequant(b[0], 1.0f, DType::fp8_e4m3_fnuz)));
}

TEST_CASE("operand checks name the scheme each format needs", "[quantize][formats]") {
  CHECK_NOTHROW(check_quant(DType::fp8_e4m3, Quant::per_1x32));
  CHECK_THROWS_WITH(check_quant(DType::fp8_e4m3_fnuz, Quant::per_1x32),
                    Catch::Contains("needs quant per_tensor, per_token or block_128"));
  CHECK_THROWS_WITH(check_quant(DType::int4, Quant::per_tensor),
                    Catch::Contains("needs quant per_token, group_32 or group_128"));
  CHECK_THROWS_WITH(check_quant(DType::mxfp4, Quant::block_128), Catch::Contains("per_1x32"));
  CHECK(operand_quant(DType::bf16, Quant::per_1x32) == Quant::none);
  CHECK(operand_quant(DType::mxfp4, Quant::none) == Quant::per_1x32);
  CHECK(operand_quant(DType::int4, Quant::group_32) == Quant::group_32);
}

}  // namespace tdmsim::emu
