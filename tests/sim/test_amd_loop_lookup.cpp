// The AMD main-loop mix and LDS a program is charged (moe_detail::amd_loop_of)
// come from Layer::amd_loops, looked up once per layer; a tile other than the
// one looked up is looked up as it comes (the reference). Both must give
// every program the same loop and LDS, bit for bit.
#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

#include "sim/programs/moe_program_common.h"

namespace {

using namespace tdmsim;
using namespace tdmsim::sim::programs::moe_detail;
using plan::LoopKernel;

// What amd_loop_of sets, for comparison.
struct Charged {
  std::uint32_t instructions = 0, valu = 0, lds_bytes = 0;
  DType dtype = DType::fp8_e4m3;
  bool operator==(const Charged&) const = default;
};

Charged charge(const Layer& l, LoopKernel kind, const KernelTile& tile) {
  isa::TileProgram p;
  p.lds_bytes = 12345;  // left alone when there is no mix
  isa::Loop loop;
  loop.dtype = DType::fp8_e4m3;
  amd_loop_of(l, kind, tile, p, loop);
  return {loop.wave_issue.instructions, loop.wave_issue.valu, p.lds_bytes, loop.dtype};
}

}  // namespace

TEST_CASE("amd_loop_of charges the same from the per-layer lookup as from its own", "[amd-loop-lookup]") {
  std::vector<KernelTile> tiles;
  for (const std::uint32_t m : {16u, 32u, 64u, 128u}) {
    for (const std::uint32_t n : {64u, 128u, 256u}) {
      for (const std::uint32_t k : {64u, 128u, 256u}) tiles.push_back({256, m, n, k});
    }
  }
  std::size_t with_mix = 0;
  for (const DType dt : {DType::fp8_e4m3, DType::bf16}) {
    for (const Quant q : {Quant::none, Quant::block_128}) {
      for (const plan::CdnaTarget t : {plan::CdnaTarget::gfx90a, plan::CdnaTarget::gfx940}) {
        for (const std::uint32_t stages : {1u, 2u, 3u}) {
          Layer looked_up;  // amd_loops filled, as build() does
          looked_up.shape.dtype = dt;
          looked_up.shape.quant = q;
          looked_up.amd_target = t;
          looked_up.kernel.pipeline_stages = stages;
          Layer reference = looked_up;  // amd_loops empty: every call looks up
          for (const KernelTile& tile : tiles) {
            for (const LoopKernel kind : {LoopKernel::gate_up, LoopKernel::down, LoopKernel::fused}) {
              looked_up.amd_loops[static_cast<std::size_t>(kind)] = amd_loop_lookup(looked_up, kind, tile);
              INFO("dtype " << static_cast<int>(dt) << " quant " << static_cast<int>(q) << " stages " << stages
                            << " kind " << static_cast<int>(kind) << " tile " << tile.m << "x" << tile.n << "x"
                            << tile.k);
              const Charged a = charge(looked_up, kind, tile);
              const Charged b = charge(reference, kind, tile);
              CHECK(a == b);
              if (a.instructions > 0) ++with_mix;
              // A tile other than the one looked up: looked up as it comes.
              const KernelTile other{256, tile.m * 2, tile.n, tile.k};
              CHECK(charge(looked_up, kind, other) == charge(reference, kind, other));
            }
          }
        }
      }
    }
  }
  CHECK(with_mix > 0);  // the comparison covered loops that are charged a mix
  // No CDNA target (AITER's kernels, other machines): nothing charged.
  Layer none;
  none.amd_loops[0] = amd_loop_lookup(none, LoopKernel::gate_up, tiles[0]);
  CHECK(charge(none, LoopKernel::gate_up, tiles[0]) == Charged{0, 0, 12345, DType::fp8_e4m3});
}
