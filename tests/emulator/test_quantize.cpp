// Quantisation schemes: scale rules, group boundaries and error bounds.
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "descriptors/emulator/numerics.h"
#include "descriptors/emulator/quantize.h"

namespace tdmsim::emu {
namespace {

std::vector<float> random_matrix(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace

TEST_CASE("dtype/quant pairs the emulator runs", "[quantize]") {
  CHECK_THROWS_AS(check_quant(DType::fp8_e4m3, Quant::none), std::invalid_argument);
  CHECK_THROWS_AS(check_quant(DType::bf16, Quant::per_token), std::invalid_argument);
  CHECK_THROWS_AS(check_quant(DType::mxfp4, Quant::block_128), std::invalid_argument);
  CHECK_NOTHROW(check_quant(DType::int8, Quant::block_128));
  CHECK_NOTHROW(check_quant(DType::fp32, Quant::none));
  CHECK(storage_dtype(DType::fp8_e4m3) == DType::bf16);
  CHECK(storage_dtype(DType::fp16) == DType::fp16);
  CHECK(storage_dtype(DType::fp32) == DType::fp32);
  CHECK(quant_max(DType::fp8_e4m3) == 448.0f);
  CHECK(quant_max(DType::int8) == 127.0f);
  CHECK(scale_for_amax(0.0f, DType::fp8_e4m3) == 1.0f);
  CHECK(scale_for_amax(896.0f, DType::fp8_e4m3) == 2.0f);
}

TEST_CASE("per_token activations: the row maximum maps to the format maximum", "[quantize]") {
  for (DType t : {DType::fp8_e4m3, DType::fp8_e5m2, DType::int8}) {
    auto a = random_matrix(5 * 300, 1, 3.0f);
    const auto orig = a;
    quantize_activations(a.data(), 5, 300, 300, t, Quant::per_token, 0.0f);
    for (std::size_t r = 0; r < 5; ++r) {
      const float amax = absmax(orig.data() + r * 300, 1, 300, 300);
      const float scale = scale_for_amax(amax, t);
      for (std::size_t c = 0; c < 300; ++c) {
        const float v = orig[r * 300 + c], q = a[r * 300 + c];
        // Half a step of the format at |v|, plus the fp32 rounding of the scale.
        const float step = t == DType::int8 ? scale
                         : t == DType::fp8_e4m3 ? std::max(std::fabs(v) * 0.125f, scale * std::ldexp(1.0f, -9))
                                                : std::max(std::fabs(v) * 0.25f, scale * std::ldexp(1.0f, -16));
        REQUIRE(std::fabs(q - v) <= 0.5f * step + 1e-6f * std::fabs(v));
      }
      CHECK(std::fabs(absmax(a.data() + r * 300, 1, 300, 300) - amax) <= 1e-6f * amax);
    }
  }
}

TEST_CASE("block_128 activations quantise each 1x128 group on its own", "[quantize]") {
  std::vector<float> a(260, 0.01f);
  a[200] = 100.0f;  // only group [128, 256) sees it
  quantize_activations(a.data(), 1, 260, 260, DType::fp8_e4m3, Quant::block_128, 0.0f);
  const float small_scale = 0.01f / 448.0f;
  CHECK(a[0] == fp8_e4m3_bits_to_fp32(fp32_to_fp8_e4m3_bits(0.01f / small_scale)) * small_scale);
  CHECK(a[259] == a[0]);  // the ragged last group [256, 260) has its own scale
  CHECK(a[130] != a[0]);  // crushed by the 100 in its group
  CHECK(a[200] == Approx(100.0f).epsilon(1e-6));
}

TEST_CASE("per_tensor activations use the caller's tensor maximum", "[quantize]") {
  std::vector<float> a = {1.0f, -0.5f, 0.25f};
  quantize_activations(a.data(), 1, 3, 3, DType::int8, Quant::per_tensor, 127.0f);  // scale 1
  CHECK(a == std::vector<float>{1.0f, -0.0f, 0.0f});
}

TEST_CASE("weights: per-channel, 128x128 blocks and the static per-tensor scale", "[quantize]") {
  const std::size_t rows = 300, cols = 260;
  auto w = random_matrix(rows * cols, 2, 0.05f);
  w[129 * cols + 5] = 4.0f;  // in block (row 1, col 0) only
  SECTION("block_128") {
    auto q = w;
    quantize_weights(q.data(), rows, cols, 0, DType::fp8_e4m3, Quant::block_128, 0.05f);
    const float big = 4.0f / 448.0f, rel_big = std::fabs(q[130 * cols + 6] - w[130 * cols + 6]);
    CHECK(q[129 * cols + 5] == Approx(4.0f).epsilon(1e-6));
    CHECK(rel_big <= 0.5f * big * 0.125f * 448.0f);  // coarse: shares the big scale
    // Another block keeps fine resolution.
    for (std::size_t c = 128; c < 256; ++c) {
      REQUIRE(std::fabs(q[130 * cols + c] - w[130 * cols + c]) <=
              0.0625f * std::fabs(w[130 * cols + c]) + 0.05f / 448.0f * std::ldexp(1.0f, -9));
    }
    // Chunks that start on a block boundary give the same values as the whole.
    auto chunk = std::vector<float>(w.begin() + 128 * cols, w.begin() + 256 * cols);
    quantize_weights(chunk.data(), 128, cols, 128, DType::fp8_e4m3, Quant::block_128, 0.05f);
    CHECK(std::equal(chunk.begin(), chunk.end(), q.begin() + 128 * cols));
    CHECK_THROWS_AS(quantize_weights(chunk.data(), 64, cols, 64, DType::fp8_e4m3,
                                     Quant::block_128, 0.05f),
                    std::invalid_argument);
  }
  SECTION("per_token = per output channel") {
    auto q = w;
    quantize_weights(q.data(), rows, cols, 0, DType::int8, Quant::per_token, 0.05f);
    CHECK(q[129 * cols + 5] == Approx(4.0f).epsilon(1e-6));
    const float row_scale = absmax(w.data() + 7 * cols, 1, cols, cols) / 127.0f;
    for (std::size_t c = 0; c < cols; ++c) {
      REQUIRE(std::fabs(q[7 * cols + c] - w[7 * cols + c]) <= 0.5f * row_scale * 1.0001f);
    }
  }
  SECTION("per_tensor: the generator bound sets the scale") {
    std::vector<float> q = {0.05f, -0.025f};
    quantize_weights(q.data(), 1, 2, 0, DType::fp8_e4m3, Quant::per_tensor, 0.05f);
    const float scale = 0.05f / 448.0f;
    CHECK(q[0] == 448.0f * scale);
    CHECK(q[1] == -224.0f * scale);
  }
}

TEST_CASE("mxfp4 weights: 32-element groups with a power-of-two scale", "[quantize]") {
  CHECK(mx_scale_exponent(5.5f) == 0);   // floor(log2 5.5) = 2, minus e2m1's emax 2
  CHECK(mx_scale_exponent(0.3f) == -4);
  CHECK(mx_scale_exponent(6.0f) == 0);
  CHECK(mx_scale_exponent(8.0f) == 1);
  CHECK(mx_scale_exponent(0.0f) == 0);
  std::vector<float> w(40, 0.0f);
  w[0] = 0.3f;    // group 0: scale 2^-4, 0.3 / 2^-4 = 4.8 -> 4 -> 0.25
  w[1] = 0.1f;    // 1.6 -> 1.5 -> 0.09375
  w[33] = 7.9f;   // group 1 (ragged, 8 elements): scale 2^0, 7.9 saturates to 6
  w[34] = -2.6f;  // -> -3
  quantize_weights(w.data(), 1, 40, 0, DType::mxfp4, Quant::none, 1.0f);
  CHECK(w[0] == 0.25f);
  CHECK(w[1] == 0.09375f);
  CHECK(w[33] == 6.0f);
  CHECK(w[34] == -3.0f);
}

TEST_CASE("non-scaled dtypes round element by element", "[quantize]") {
  std::vector<float> a = {3.14159265f, 1e-3f};
  auto b = a;
  quantize_activations(a.data(), 1, 2, 2, DType::bf16, Quant::none, 0.0f);
  CHECK(a[0] == round_to_bf16(b[0]));
  // bf16 activations beside mxfp4 weights (a16w4): the layer's per_1x32
  // describes the weights; the activations are only rounded.
  quantize_activations(b.data(), 1, 2, 2, DType::bf16, Quant::per_1x32, 0.0f);
  CHECK(b == a);
  std::vector<float> c = {3.14159265f};
  quantize_weights(c.data(), 1, 1, 0, DType::fp16, Quant::none, 1.0f);
  CHECK(c[0] == round_to_fp16(3.14159265f));
}

}  // namespace tdmsim::emu
