// Synthetic inputs and weights: the documented formulas, chunk independence
// and shared-slot padding.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "descriptors/emulator/quantize.h"
#include "descriptors/emulator/synthetic.h"
#include "descriptors/plan/tensor_rng.h"
#include "tests/emulator/test_support.h"

namespace tdmsim::emu {

TEST_CASE("TensorStream equals tensor_value element for element", "[synthetic]") {
  for (std::uint64_t seed : {0ull, 1ull, 0xDEADBEEFull}) {
    for (std::uint64_t part : {0ull, 3ull, 257ull}) {
      const TensorStream s(seed, plan::TensorId::w_down, part, 0.125f);
      for (std::uint64_t i = 0; i < 5000; i += 7) {
        REQUIRE(s.value(i) == plan::tensor_value(seed, plan::TensorId::w_down, part, i, 0.125f));
      }
    }
  }
}

TEST_CASE("activations and raw weights follow the documented formulas", "[synthetic]") {
  test::ShapeSpec spec;
  spec.hidden = 48;
  spec.inter = 40;
  const auto shape = test::make_shape(spec);
  const auto x = seeded_activations(9, 3, 48);
  CHECK(x[2 * 48 + 5] == plan::tensor_value(9, plan::TensorId::activations, 0, 2 * 48 + 5, 1.0f));
  std::vector<float> gu(2 * 40 * 48), down(48 * 40);
  expert_gate_up_rows(shape, 9, 2, 0, 40, gu.data());
  expert_down_rows(shape, 9, 2, 0, 48, down.data());
  const float bh = 1.0f / std::sqrt(48.0f), bi = 1.0f / std::sqrt(40.0f);
  CHECK(weight_bound(48) == bh);
  CHECK(gu[7 * 48 + 3] == plan::tensor_value(9, plan::TensorId::w_gate_up, 2, 7 * 48 + 3, bh));
  CHECK(gu[(40 + 7) * 48 + 3] ==
        plan::tensor_value(9, plan::TensorId::w_gate_up, 2, (40 + 7) * 48 + 3, bh));
  CHECK(down[11 * 40 + 39] == plan::tensor_value(9, plan::TensorId::w_down, 2, 11 * 40 + 39, bi));
}

TEST_CASE("weight chunks equal the rows of the whole matrix for every scheme", "[synthetic]") {
  const std::pair<DType, Quant> schemes[] = {
      {DType::bf16, Quant::none},          {DType::fp8_e4m3, Quant::per_tensor},
      {DType::fp8_e4m3, Quant::per_token}, {DType::fp8_e4m3, Quant::block_128},
      {DType::int8, Quant::block_128},     {DType::mxfp4, Quant::none},
      {DType::mxfp4, Quant::per_1x32},     {DType::fp8_e4m3, Quant::per_1x32},
      {DType::fp8_e4m3_fnuz, Quant::block_128}, {DType::int4, Quant::group_32},
      {DType::int4, Quant::group_128},     {DType::int4, Quant::per_token}};
  for (const auto& [dtype, quant] : schemes) {
    test::ShapeSpec spec;
    spec.hidden = 200;
    spec.inter = 300;
    spec.dtype = dtype;
    spec.quant = quant;
    const auto shape = test::make_shape(spec);
    std::vector<float> whole(2 * 300 * 200), part(2 * 128 * 200);
    expert_gate_up_rows(shape, 5, 1, 0, 300, whole.data());
    expert_gate_up_rows(shape, 5, 1, 128, 256, part.data());
    for (std::size_t r = 0; r < 128; ++r) {
      for (std::size_t h = 0; h < 200; ++h) {
        REQUIRE(part[r * 200 + h] == whole[(128 + r) * 200 + h]);                  // gate
        REQUIRE(part[(128 + r) * 200 + h] == whole[(300 + 128 + r) * 200 + h]);    // up
      }
    }
    std::vector<float> dwhole(200 * 300), dpart(72 * 300);
    expert_down_rows(shape, 5, 1, 0, 200, dwhole.data());
    expert_down_rows(shape, 5, 1, 128, 200, dpart.data());
    CHECK(std::equal(dpart.begin(), dpart.end(), dwhole.begin() + 128 * 300));
  }
}

TEST_CASE("a shared slot carries weights only in its real columns", "[synthetic]") {
  test::ShapeSpec spec;
  spec.experts = 4;
  spec.hidden = 16;
  spec.inter = 32;
  spec.shared_experts = 1;
  spec.shared_inter = 40;  // two chunks: 32 columns, then 8 + 24 padding
  const auto shape = test::make_shape(spec);
  REQUIRE(shape.shared == 2);
  CHECK(expert_columns(shape, 3) == 32);
  CHECK(expert_columns(shape, 4) == 32);
  CHECK(expert_columns(shape, 5) == 8);
  CHECK(down_fan_in(shape, 5) == 40);
  CHECK_THROWS_AS(expert_columns(shape, 6), std::out_of_range);
  std::vector<float> gu(2 * 32 * 16), down(16 * 32);
  expert_gate_up_rows(shape, 1, 5, 0, 32, gu.data());
  expert_down_rows(shape, 1, 5, 0, 16, down.data());
  for (std::size_t j = 0; j < 32; ++j) {
    for (std::size_t h = 0; h < 16; ++h) {
      const bool real = j < 8;
      REQUIRE((gu[j * 16 + h] != 0.0f) == real);
      REQUIRE((gu[(32 + j) * 16 + h] != 0.0f) == real);
      REQUIRE((down[h * 32 + j] != 0.0f) == real);
    }
  }
}

}  // namespace tdmsim::emu
