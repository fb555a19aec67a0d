// Our AMD GEMM kernels' main-loop mix (amd_kernels.h).
#include "descriptors/plan/amd_kernels.h"

#include <cmath>
#include <algorithm>
#include <cstdlib>

#include "descriptors/plan/kernel_rules.h"

namespace tdmsim::plan {

namespace {

// Generated from validation/data/amd/kernels-*.csv (descriptors/plan/sources.cmake).
constexpr CompiledLoop kCompiled[] = {
#include "amd_kernels_table.inc"
};

double log_ratio(double a, double b) { return std::fabs(std::log(a / b)); }

}  // namespace

std::string_view target_name(CdnaTarget t) { return t == CdnaTarget::gfx90a ? "gfx90a" : "gfx940"; }

std::span<const CompiledLoop> compiled_loops() { return kCompiled; }

std::optional<CdnaTarget> mix_target(IsaFamily isa) {
  switch (isa) {
    case IsaFamily::cdna3:
    case IsaFamily::cdna4: return CdnaTarget::gfx940;
    case IsaFamily::gfx1250:
    case IsaFamily::hopper: return std::nullopt;
  }
  return std::nullopt;
}

std::uint32_t tile_mfmas(CdnaTarget t, bool fp8, std::uint32_t m, std::uint32_t n, std::uint32_t k) {
  const bool native = fp8 && t == CdnaTarget::gfx940 && k % 64 == 0;
  const auto g = plan::rules::warp_grid(m, n, 4);  // 4 wavefronts of 64 (kernels/moe/fused_moe.hip kWaves)
  const std::uint32_t wm = std::max(1u, g.wm), wn = std::max(1u, g.wn);
  const std::uint32_t tm = std::max(1u, m / 16 / wm), tn = std::max(1u, n / 16 / wn);
  const std::uint32_t k_bytes = k * (native ? 1 : 2);  // converted e4m3 is multiplied as bf16
  return tm * tn * std::max(1u, k_bytes / 64) * 2;
}

std::optional<MixChoice> loop_mix(CdnaTarget t, LoopKernel kernel, bool fp8, bool block_scaled, std::uint32_t m,
                                  std::uint32_t n, std::uint32_t k) {
  const CompiledLoop* best = nullptr;
  double best_mfma = 0, best_shape = 0;
  const double want = tile_mfmas(t, fp8, m, n, k);
  for (const auto& c : kCompiled) {
    if (c.target != t || c.kernel != kernel || c.fp8 != fp8 || c.block_scaled != block_scaled) continue;
    if (c.m == m && c.n == n && c.k == k) return MixChoice{c.mix, &c, true};
    const double dm = log_ratio(want, std::max(1u, c.mix.mfma));
    const double ds = log_ratio(m, c.m) + log_ratio(n, c.n) + log_ratio(k, c.k);
    // (Strictly nearer only: ties keep the first in the summary's order.)
    if (!best || dm < best_mfma - 1e-9 || (std::fabs(dm - best_mfma) <= 1e-9 && ds < best_shape - 1e-9)) {
      best = &c;
      best_mfma = dm;
      best_shape = ds;
    }
  }
  if (!best) return std::nullopt;
  const double s = want / std::max(1u, best->mix.mfma);
  const auto scaled = [s](std::uint32_t v) { return static_cast<std::uint32_t>(std::lround(v * s)); };
  LoopMix x;
  x.mfma = static_cast<std::uint32_t>(want);
  x.ds_read = scaled(best->mix.ds_read);
  x.ds_write = scaled(best->mix.ds_write);
  x.vmem_load = scaled(best->mix.vmem_load);
  x.valu = scaled(best->mix.valu);
  x.salu = scaled(best->mix.salu);
  x.barrier = best->mix.barrier;  // the loop's barriers do not grow with the tile
  // (Instructions of no category, the summary's few others, scale too.)
  const auto& b = best->mix;
  const std::uint32_t sorted = b.mfma + b.ds_read + b.ds_write + b.vmem_load + b.valu + b.salu + b.barrier;
  x.instructions = x.mfma + x.ds_read + x.ds_write + x.vmem_load + x.valu + x.salu + x.barrier +
                   scaled(b.instructions > sorted ? b.instructions - sorted : 0);
  return MixChoice{x, best, false};
}

bool compiled_tile(LoopKernel kernel, bool fp8, bool block_scaled, std::uint32_t m, std::uint32_t n,
                   std::uint32_t k) {
  for (const auto& c : kCompiled) {
    if (c.kernel == kernel && c.fp8 == fp8 && c.block_scaled == block_scaled && c.m == m && c.n == n && c.k == k) {
      return true;
    }
  }
  return false;
}

std::uint32_t amd_kernel_lds_bytes(CdnaTarget t, LoopKernel kernel, bool fp8, bool block_scaled, std::uint32_t m,
                                   std::uint32_t n, std::uint32_t k, std::uint32_t stages) {
  const auto choice = loop_mix(t, kernel, fp8, block_scaled, m, n, k);
  const std::uint32_t static_bytes = choice ? choice->from->lds_static : 0;
  const std::uint32_t elem = fp8 ? 1 : 2;
  const bool convert = rules::amd_converts_fp8(elem, k, t == CdnaTarget::gfx940);
  std::uint32_t dynamic = rules::amd_gemm_lds_bytes(m, n, k, elem, std::max(2u, stages), convert);
  if (kernel == LoopKernel::fused) dynamic = std::max(dynamic, rules::fused_phase2_lds_bytes(m, n, elem));
  return static_bytes + dynamic;
}

}  // namespace tdmsim::plan
