// The AITER formats on the timing model: matrix rates per architecture,
// weight bytes streamed at the weight dtype (4 bits for fp4/int4) plus
// scales, and in-register dequantisation of mixed pairs.
#include <catch2/catch.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <tuple>

#include "descriptors/plan/moe_plan.h"
#include "isa/matrix_table.h"
#include "sim/platform/gpu.h"
#include "sim/programs/moe_kernels.h"
#include "workloads/config/loader.h"
#include "tests/sim/shipped_inputs.h"

namespace {

using tdmsim::test::kernel_of;

using namespace tdmsim;
namespace fs = std::filesystem;

config::ResolvedScenario scenario(DType a, std::optional<DType> w, Quant q, std::uint32_t tokens) {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR);
  const config::Loader loader({root / "workloads"});
  auto sc = loader.resolve_scenario(root / "workloads/scenarios/deepseek-v3-decode-mi355x.yaml");
  sc.scenario.spec.tokens = tokens;
  sc.scenario.spec.dtype = a;
  sc.scenario.spec.weight_dtype.dtype = w;
  sc.scenario.spec.quant = q;
  sc.scenario.spec.kernel.stages = 2;
  return sc;
}

}  // namespace

TEST_CASE("matrix rates per format and architecture", "[moe][formats]") {
  using isa::matrix_flops_per_clock_per_cu;
  // CDNA3's fp8 MFMA is the FNUZ one: 4096 FLOP/clk/CU (4 SIMDs), like OCP's slot.
  CHECK(matrix_flops_per_clock_per_cu(IsaFamily::cdna3, DType::fp8_e4m3_fnuz, 4) == 4096.0);
  CHECK(matrix_flops_per_clock_per_cu(IsaFamily::cdna3, DType::int8, 4) == 4096.0);
  // CDNA4: fp4 twice fp8 through f8f6f4 (ROCm blog: 32 vs 64 cycles).
  CHECK(matrix_flops_per_clock_per_cu(IsaFamily::cdna4, DType::mxfp4, 4) == 16384.0);
  CHECK(matrix_flops_per_clock_per_cu(IsaFamily::cdna4, DType::fp8_e4m3, 4) == 8192.0);
  CHECK(matrix_flops_per_clock_per_cu(IsaFamily::cdna4, DType::int8, 4) == 8192.0);
  CHECK(matrix_flops_per_clock_per_cu(IsaFamily::cdna4, DType::fp8_e4m3_fnuz, 4) == 0.0);
  CHECK(matrix_flops_per_clock_per_cu(IsaFamily::hopper, DType::mxfp4, 4) == 0.0);
  // Where there is no instruction the kernels widen: fp4 -> fp8 (exact),
  // FNUZ -> OCP fp8 (same bytes, scale x 2), integers -> bf16.
  const fs::path w = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({w});
  const auto machine = [&](const char* n) {
    return loader.machine(w / "machines" / (std::string(n) + ".yaml")).spec;
  };
  const MachineSpec h200 = machine("h200"), mi300x = machine("mi300x"), mi355x = machine("mi355x");
  CHECK(isa::matrix_dtype(h200, DType::mxfp4) == DType::fp8_e4m3);
  CHECK(isa::matrix_dtype(mi300x, DType::mxfp4) == DType::fp8_e4m3);
  CHECK(isa::matrix_dtype(mi355x, DType::mxfp4) == DType::mxfp4);
  CHECK(isa::matrix_dtype(mi355x, DType::fp8_e4m3_fnuz) == DType::fp8_e4m3);
  CHECK(isa::matrix_dtype(mi300x, DType::fp8_e4m3_fnuz) == DType::fp8_e4m3_fnuz);
  CHECK(isa::matrix_dtype(h200, DType::int8) == DType::int8);
  // Dequantisation work of the mixed pairs.
  using sim::programs::dequant_ops_per_weight;
  CHECK(dequant_ops_per_weight(mi355x, DType::fp8_e4m3, DType::mxfp4) == 0.0);  // f8f6f4 mixed
  CHECK(dequant_ops_per_weight(mi355x, DType::bf16, DType::mxfp4) == 1.0);
  CHECK(dequant_ops_per_weight(h200, DType::bf16, DType::mxfp4) == 2.0);
  CHECK(dequant_ops_per_weight(mi300x, DType::bf16, DType::int4) == 2.0);
  CHECK(dequant_ops_per_weight(mi355x, DType::mxfp4, DType::mxfp4) == 0.0);
}

TEST_CASE("weights stream at their own dtype, plus scales", "[moe][formats]") {
  const auto bf16 = scenario(DType::bf16, std::nullopt, Quant::none, 16);
  const auto a16w4 = scenario(DType::bf16, DType::mxfp4, Quant::per_1x32, 16);
  const auto a8w4 = scenario(DType::fp8_e4m3, DType::mxfp4, Quant::per_1x32, 16);
  const auto fp4 = scenario(DType::mxfp4, std::nullopt, Quant::per_1x32, 16);
  const auto int4 = scenario(DType::bf16, DType::int4, Quant::group_128, 16);
  const MachineSpec& m = bf16.machine.spec;
  const auto floor = [&](const config::ResolvedScenario& sc) {
    return sim::programs::moe_floor(plan::build_plan(sc), m);
  };
  const double wb = floor(bf16).weight_bytes;
  CHECK(floor(a16w4).weight_bytes / wb == Approx((0.5 + 1.0 / 32) / 2));  // e2m1 + E8M0 per 32
  CHECK(floor(int4).weight_bytes / wb == Approx((0.5 + 4.0 / 128) / 2));  // int4 + fp32 per 128
  CHECK(floor(a8w4).weight_bytes == floor(a16w4).weight_bytes);
  CHECK(floor(fp4).activation_bytes < floor(a16w4).activation_bytes);

  // The gate/up tile's loads: x in the activation dtype, weights in theirs.
  const auto gate_up = [](const config::ResolvedScenario& sc) {
    const plan::MoePlan p = plan::build_plan(sc);
    sim::AddressSpace as;
    const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
    return std::pair{k.kernels[kernel_of(k, "gate_up")].program(0), p.kernel.gate_up_tile};
  };
  const auto [pb, tb] = gate_up(bf16);
  const auto [p16, t16] = gate_up(a16w4);
  const auto [p8, t8] = gate_up(a8w4);
  const auto [p4, t4] = gate_up(fp4);
  REQUIRE(pb.loops.at(0).loads.size() == 3);
  CHECK(pb.loops[0].loads[1].row_bytes == tb.k * 2);
  CHECK(p16.loops[0].loads[0].row_bytes == t16.k * 2);  // bf16 x
  CHECK(p16.loops[0].loads[1].row_bytes == t16.k / 2);  // fp4 weights
  CHECK(p8.loops[0].loads[0].row_bytes == t8.k);        // fp8 x
  CHECK(p4.loops[0].loads[0].row_bytes == t4.k / 2);    // fp4 x
  // The matrix pipe: bf16 for a16w4 (weights dequantised, vector work beside
  // it), fp8 for a8w4 (the mixed f8f6f4 MFMA, no conversion), fp4 for fp4 x fp4.
  CHECK(p16.loops[0].dtype == DType::bf16);
  CHECK(p16.loops[0].vector_ops == std::uint64_t{p16.loops[0].n} * t16.k);  // 1 op per weight
  CHECK(p8.loops[0].dtype == DType::fp8_e4m3);
  CHECK(p8.loops[0].vector_ops == 0);
  CHECK(p4.loops[0].dtype == DType::mxfp4);
  CHECK(pb.loops[0].vector_ops == 0);
  // MX scales in the prologue: E8M0 per 32 of K for the rows and the weights.
  CHECK(p16.prologue_loads.back().row_bytes > 0);
}

TEST_CASE("the gate/up kernel streams half the weight bytes per halving of the weight dtype",
          "[moe][formats]") {
  // Summed over every workgroup of the gate/up kernel: the weight loads
  // (gate and up rows) times their iterations. One SystemC simulation per
  // process, so the programs are compared, not simulated.
  const auto weight_bytes = [](const config::ResolvedScenario& sc) {
    const plan::MoePlan p = plan::build_plan(sc);
    sim::AddressSpace as;
    const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
    const auto& launch = k.kernels[kernel_of(k, "gate_up")];
    std::uint64_t bytes = 0;
    for (std::uint32_t wg = 0; wg < launch.workgroups; ++wg) {
      const auto prog = launch.program(wg);
      for (const auto& loop : prog.loops) {
        for (std::size_t i = 1; i < loop.loads.size(); ++i) bytes += loop.loads[i].bytes() * loop.iterations;
      }
    }
    return static_cast<double>(bytes);
  };
  const double bf16 = weight_bytes(scenario(DType::bf16, std::nullopt, Quant::none, 16));
  CHECK(bf16 > 0);
  CHECK(weight_bytes(scenario(DType::fp8_e4m3, std::nullopt, Quant::block_128, 16)) / bf16 == Approx(0.5));
  CHECK(weight_bytes(scenario(DType::bf16, DType::mxfp4, Quant::per_1x32, 16)) / bf16 == Approx(0.25));
  CHECK(weight_bytes(scenario(DType::mxfp4, std::nullopt, Quant::per_1x32, 16)) / bf16 == Approx(0.25));
  CHECK(weight_bytes(scenario(DType::bf16, DType::int4, Quant::group_128, 16)) / bf16 == Approx(0.25));
}

TEST_CASE("the fused 1-stage kernel reads the scales of its gate/up rows along H and its w_down rows along I",
          "[moe][formats]") {
  // A job of the fused kernel covers `cols` columns of I: gate and up rows
  // (2 cols along H) and the w_down slice (H rows along cols). Its prologue's
  // last load is the scales: the token rows' activation scales along H and
  // the two weight blocks' scales, each counted along its own K.
  const auto fused = [](Quant q, DType a, std::optional<DType> w) {
    auto sc = scenario(a, w, q, 1);
    sc.scenario.spec.kernel.stages = 1;
    const plan::MoePlan p = plan::build_plan(sc);
    sim::AddressSpace as;
    const auto k = sim::programs::software_moe(as, p, sc.machine.spec);
    const auto& launch = k.kernels[kernel_of(k, "fused")];
    const auto prog = launch.program(0);
    REQUIRE(!prog.prologue_loads.empty());
    const std::uint32_t cols = prog.loops.at(0).n / 2;
    return std::tuple{prog.prologue_loads.back().row_bytes, cols, p.shape.hidden};
  };
  // One token: the block's one valid row.
  {
    const auto [bytes, cols, h] = fused(Quant::per_1x32, DType::mxfp4, std::nullopt);
    REQUIRE(cols > 0);
    CHECK(bytes == h / 32 + 2 * cols * (h / 32) + h * ((cols + 31) / 32));  // E8M0 bytes
  }
  {
    const auto [bytes, cols, h] = fused(Quant::group_32, DType::bf16, DType::int4);
    CHECK(bytes == 4 * (2 * cols * (h / 32) + h * ((cols + 31) / 32)));  // fp32, weights only
  }
  {
    const auto [bytes, cols, h] = fused(Quant::block_128, DType::fp8_e4m3, std::nullopt);
    CHECK(bytes == 4 * ((h + 127) / 128 + ((2 * cols + 127) / 128) * ((h + 127) / 128) +
                        ((h + 127) / 128) * ((cols + 127) / 128)));
  }
  {
    const auto [bytes, cols, h] = fused(Quant::per_token, DType::fp8_e4m3, std::nullopt);
    CHECK(bytes == 4 * (1 + 2 * cols + h));
  }
}
