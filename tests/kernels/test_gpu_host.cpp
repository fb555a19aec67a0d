// Host-side checks of the GPU kernels' pieces that CI can run without a GPU:
// the kernels' element codecs against the emulator's, and GPU case files.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>

#include <catch2/catch.hpp>

#include "descriptors/emulator/numerics.h"
#include "descriptors/plan/moe_plan.h"
#include "kernels/hip/gpu_numerics.h"
#include "kernels/host/case_from_plan.h"
#include "workloads/config/loader.h"

namespace fs = std::filesystem;
using namespace tdmsim;

namespace {

float bits_to_float(std::uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tdmsim-kernels-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("kernel e4m3 and bf16 encoders equal the emulator's", "[kernels]") {
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::uniform_real_distribution<float> mag(-12.0f, 10.0f);  // exponents around e4m3's range
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    // Half random bit patterns (NaN, Inf, subnormals, huge), half values near e4m3's range.
    const float v = i % 2 ? bits_to_float(bits(rng))
                          : std::ldexp(1.0f + mag(rng) / 16.0f, static_cast<int>(mag(rng)));
    const std::uint8_t want = emu::fp32_to_fp8_e4m3_bits(v, emu::Overflow::saturate);
    REQUIRE(gpu::e4m3_bits(v) == want);
    const std::uint16_t bw = emu::fp32_to_bf16_bits(v);
    const std::uint16_t bg = gpu::bf16_bits(v);
    if (std::isnan(v)) {
      REQUIRE(std::isnan(gpu::bf16_value(bg)));
    } else {
      REQUIRE(bg == bw);
    }
    ++checked;
  }
  REQUIRE(checked == 200000);
}

TEST_CASE("kernel e4m3 decoding is exact and every value converts exactly to bf16", "[kernels]") {
  for (int q = 0; q < 256; ++q) {
    const auto b = static_cast<std::uint8_t>(q);
    const float want = emu::fp8_e4m3_bits_to_fp32(b);
    const float got = gpu::e4m3_value(b);
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got));
      continue;
    }
    REQUIRE(got == want);
    REQUIRE(gpu::bf16_value(gpu::e4m3_to_bf16_bits(b)) == want);
    REQUIRE(gpu::e4m3_to_bf16_fast(b) == gpu::e4m3_to_bf16_bits(b));
  }
  REQUIRE(gpu::e4m3_scale(0.0f) == 1.0f);
  REQUIRE(gpu::e4m3_scale(448.0f) == 1.0f);
}

TEST_CASE("a GPU case round-trips through its files and carries the plan's layout", "[kernels]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR);
  const config::Loader loader({root / "workloads"});
  const auto sc = loader.resolve_scenario(root / "validation/gpu/scenarios/dsv3-fp8-16tok-router.yaml");
  const plan::MoePlan p = plan::build_plan(sc);
  const gpu::MoeCase c = gpu::make_case(sc, p);
  const fs::path dir = temp_dir("case");
  gpu::write_case(dir.string(), c);
  const gpu::MoeCase r = gpu::read_case(dir.string());
  CHECK(r.name == "dsv3-fp8-16tok-router");
  CHECK(r.tokens == 16);
  CHECK(r.hidden == 7168);
  CHECK(r.experts_fused() == 257);
  CHECK(r.dtype == "fp8_e4m3");
  CHECK(r.quant == "block_128");
  CHECK(r.routing_source == "router");
  CHECK(r.scoring == "sigmoid");
  CHECK(r.correction_bias);
  CHECK(r.n_group == 8);
  CHECK(r.routed_scaling == c.routed_scaling);            // hex floats: exact
  CHECK(r.router_weight_scale == c.router_weight_scale);
  CHECK(r.block_m == p.kernel.block_m);
  CHECK(r.gate_up_tile.n == p.kernel.gate_up_tile.n);
  CHECK(r.routing_ids == p.routing.ids);
  CHECK(r.sorted_rows == p.layout.sorted_rows);
  CHECK(r.sorted_weights == p.layout.sorted_weights);
  CHECK(r.block_expert == p.layout.block_expert);
  CHECK(r.expert_first_block == p.layout.expert_first_block);
  fs::remove_all(dir);
}

TEST_CASE("a damaged GPU case is refused with the file and key named", "[kernels]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR);
  const config::Loader loader({root / "workloads"});
  const auto sc = loader.resolve_scenario(root / "validation/gpu/scenarios/qwen3-30b-1tok.yaml");
  const gpu::MoeCase c = gpu::make_case(sc, plan::build_plan(sc));
  const fs::path dir = temp_dir("damaged");
  gpu::write_case(dir.string(), c);
  SECTION("a truncated array") {
    fs::resize_file(dir / "sorted_rows.bin", 12);
    REQUIRE_THROWS_WITH(gpu::read_case(dir.string()), Catch::Contains("sorted_rows.bin has 12 bytes"));
  }
  SECTION("a missing key") {
    std::ifstream in(dir / "case.txt");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    in.close();
    const auto at = text.find("\nhidden ");
    text.erase(at + 1, text.find('\n', at + 1) - at);
    std::ofstream(dir / "case.txt") << text;
    REQUIRE_THROWS_WITH(gpu::read_case(dir.string()), Catch::Contains("missing key 'hidden'"));
  }
  fs::remove_all(dir);
}

TEST_CASE("layers the kernels cannot run are refused with a reason", "[kernels]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR);
  const config::Loader loader({root / "workloads"});
  // gpt-oss ships MXFP4 experts; the kernels run bf16 and fp8 e4m3.
  auto sc = loader.resolve_scenario(root / "workloads/scenarios/gpt-oss-120b-prefill-mi500x-tdm.yaml");
  sc.scenario.spec.tokens = 4;
  sc.scenario.spec.dtype = DType::mxfp4;
  sc.scenario.spec.quant = Quant::per_1x32;
  REQUIRE_THROWS_WITH(gpu::make_case(sc, plan::build_plan(sc)),
                      Catch::Contains("dtype mxfp4, weight_dtype mxfp4, quant per_1x32: emulator "
                                      "and timing model only; the GPU kernels run: dtype bf16"));
  // Each emulator-only format is refused the same way; bf16 and fp8 e4m3
  // per_token / block_128 are not.
  struct F {
    DType a;
    std::optional<DType> w;
    Quant q;
    bool runs;
  };
  for (const F f : {F{DType::bf16, std::nullopt, Quant::none, true},
                    F{DType::fp8_e4m3, std::nullopt, Quant::per_token, true},
                    F{DType::fp8_e4m3, std::nullopt, Quant::block_128, true},
                    F{DType::fp8_e4m3, std::nullopt, Quant::per_tensor, false},
                    F{DType::fp8_e4m3, std::nullopt, Quant::per_1x32, false},
                    F{DType::fp8_e4m3_fnuz, std::nullopt, Quant::per_token, false},
                    F{DType::int8, std::nullopt, Quant::per_token, false},
                    F{DType::bf16, DType::mxfp4, Quant::per_1x32, false},
                    F{DType::fp8_e4m3, DType::mxfp4, Quant::per_1x32, false},
                    F{DType::bf16, DType::int4, Quant::group_128, false}}) {
    sc.scenario.spec.dtype = f.a;
    sc.scenario.spec.weight_dtype.dtype = f.w;
    sc.scenario.spec.quant = f.q;
    INFO(config::enum_name(f.a) << " / " << config::enum_name(f.q));
    if (f.runs) {
      CHECK_NOTHROW(gpu::make_case(sc, plan::build_plan(sc)));
    } else {
      CHECK_THROWS_WITH(gpu::make_case(sc, plan::build_plan(sc)),
                        Catch::Contains("emulator and timing model only"));
    }
  }
  // A plan of AITER's kernels splits K in stage 1 only; ours split both
  // stages, so such a split is refused (without a split the layer runs).
  auto aiter = loader.resolve_scenario(root / "workloads/scenarios/qwen3-235b-tp4-decode-mi300x.yaml");
  REQUIRE(aiter.scenario.spec.kernel.source == KernelCode::aiter);
  CHECK_NOTHROW(gpu::make_case(aiter, plan::build_plan(aiter)));
  aiter.scenario.spec.kernel.split_k = 2;
  CHECK_THROWS_WITH(gpu::make_case(aiter, plan::build_plan(aiter)),
                    Catch::Contains("split_k 2 on stage 1 only") && Catch::Contains("the GPU kernels split both"));
}
