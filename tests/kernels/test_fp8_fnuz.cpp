// The kernels' e4m3 FNUZ codec (kernels/hip/gpu_numerics.h: the fp8 of the
// gfx940-942 builds) against hand-worked values and a brute-force nearest-
// value encoder over the 255 finite codes.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include <catch2/catch.hpp>

#include "kernels/hip/gpu_numerics.h"

namespace gpu = tdmsim::gpu;

namespace {

// Nearest FNUZ code by search: ties to the even code, +-240 beyond the range,
// 0x00 for anything that rounds to zero, 0x80 for NaN.
std::uint8_t fnuz_reference(float v) {
  if (std::isnan(v)) return 0x80;
  const double a = std::fabs(static_cast<double>(v));
  int best = 0x7F;
  if (a < 240.0) {
    for (int q = 0; q < 0x7F; ++q) {
      const double lo = gpu::e4m3fnuz_value(static_cast<std::uint8_t>(q));
      const double hi = gpu::e4m3fnuz_value(static_cast<std::uint8_t>(q + 1));
      if (a >= lo && a < hi) {
        const double dl = a - lo, dh = hi - a;
        best = dl < dh ? q : dh < dl ? q + 1 : (q % 2 == 0 ? q : q + 1);
        break;
      }
    }
  }
  if (best == 0) return 0;
  return static_cast<std::uint8_t>((std::signbit(v) ? 0x80 : 0) | best);
}

float from_bits(std::uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

}  // namespace

TEST_CASE("e4m3 FNUZ decodes with bias 8, no negative zero and NaN 0x80", "[kernels]") {
  CHECK(gpu::e4m3fnuz_value(0x00) == 0.0f);
  CHECK(std::isnan(gpu::e4m3fnuz_value(0x80)));
  CHECK(gpu::e4m3fnuz_value(0x40) == 1.0f);          // exponent 8 = bias
  CHECK(gpu::e4m3fnuz_value(0x38) == 0.5f);          // OCP 0x38 is 1.0
  CHECK(gpu::e4m3fnuz_value(0x7F) == 240.0f);        // largest: 2^7 x 1.875
  CHECK(gpu::e4m3fnuz_value(0xFF) == -240.0f);
  CHECK(gpu::e4m3fnuz_value(0x08) == std::ldexp(1.0f, -7));   // smallest normal
  CHECK(gpu::e4m3fnuz_value(0x01) == std::ldexp(1.0f, -10));  // smallest subnormal
  CHECK(gpu::e4m3fnuz_value(0x87) == -7.0f * std::ldexp(1.0f, -10));
  for (int q = 0; q < 256; ++q) {
    const auto b = static_cast<std::uint8_t>(q);
    const float v = gpu::e4m3fnuz_value(b);
    if (q == 0x80) continue;
    // Every OCP code but its NaNs (0x7F, 0xFF) means twice the FNUZ value.
    if ((q & 0x7F) != 0x7F) CHECK(gpu::e4m3_value(b) == 2.0f * v);
    // Exact in bf16, and the fast conversion agrees.
    CHECK(gpu::bf16_value(static_cast<std::uint16_t>(gpu::e4m3fnuz_to_bf16_bits(b))) == v);
    // Round trip.
    CHECK(gpu::e4m3fnuz_bits(v) == (q == 0x80 ? 0 : b));
  }
  CHECK(std::isnan(gpu::bf16_value(static_cast<std::uint16_t>(gpu::e4m3fnuz_to_bf16_bits(0x80)))));
}

TEST_CASE("e4m3 FNUZ encodes to the nearest code, ties to even, saturating", "[kernels]") {
  CHECK(gpu::e4m3fnuz_bits(-0.0f) == 0x00);  // no negative zero
  CHECK(gpu::e4m3fnuz_bits(-1e-30f) == 0x00);
  CHECK(gpu::e4m3fnuz_bits(std::nanf("")) == 0x80);
  CHECK(gpu::e4m3fnuz_bits(INFINITY) == 0x7F);
  CHECK(gpu::e4m3fnuz_bits(-INFINITY) == 0xFF);
  CHECK(gpu::e4m3fnuz_bits(1000.0f) == 0x7F);
  CHECK(gpu::e4m3fnuz_bits(232.0f) == 0x7E);  // midway 224 | 240: even code 0x7E (224)
  CHECK(gpu::e4m3fnuz_bits(1.0625f) == 0x40); // midway 1 | 1.125: even 0x40
  CHECK(gpu::e4m3fnuz_bits(std::ldexp(1.0f, -11)) == 0x00);  // half the smallest: to even 0
  CHECK(gpu::e4m3fnuz_bits(std::ldexp(3.0f, -11)) == 0x02);  // 1.5 units: to even 2
  CHECK(gpu::kE4m3FnuzMax == 240.0f);
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::uniform_real_distribution<float> mag(-14.0f, 9.0f);
  for (int i = 0; i < 100000; ++i) {
    const float v = i % 2 ? from_bits(bits(rng)) : std::ldexp(1.0f + mag(rng) / 16.0f, static_cast<int>(mag(rng)));
    REQUIRE(int(gpu::e4m3fnuz_bits(v)) == int(fnuz_reference(v)));
  }
}
