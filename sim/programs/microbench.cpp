#include "sim/programs/microbench.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

namespace tdmsim::sim::programs {

namespace {
isa::KernelLaunch stream(AddressSpace& as, std::uint64_t bytes, std::uint64_t chunk, bool copy) {
  const std::uint64_t src = as.allocate(bytes);
  const std::uint64_t dst = copy ? as.allocate(bytes) : 0;
  isa::KernelLaunch k;
  k.name = copy ? "stream_copy" : "stream_read";
  k.workgroups = static_cast<std::uint32_t>((bytes + chunk - 1) / chunk);
  k.program = [=](std::uint32_t wg) {
    isa::TileProgram p;
    p.threads = 256;
    p.vgprs_per_thread = 32;
    const std::uint64_t off = wg * chunk;
    const auto len = static_cast<std::uint32_t>(std::min(chunk, bytes - off));
    p.prologue_loads.push_back(isa::strided(src + off, len));
    if (copy) p.stores.push_back(isa::strided(dst + off, len));
    return p;
  };
  return k;
}
}  // namespace

isa::KernelLaunch stream_copy(AddressSpace& as, std::uint64_t bytes, std::uint64_t chunk) {
  return stream(as, bytes, chunk, true);
}
isa::KernelLaunch stream_read(AddressSpace& as, std::uint64_t bytes, std::uint64_t chunk) {
  return stream(as, bytes, chunk, false);
}

std::vector<isa::KernelLaunch> pointer_chase(AddressSpace& as, std::uint64_t footprint,
                                             std::uint32_t stride, std::uint32_t hops,
                                             std::uint64_t seed) {
  const std::uint64_t base = as.allocate(footprint);
  const std::uint64_t slots = footprint / stride;
  std::vector<std::uint64_t> order(slots);
  std::iota(order.begin(), order.end(), 0ull);
  std::mt19937_64 rng(seed);
  for (std::uint64_t i = slots - 1; i > 0; --i) {
    std::uniform_int_distribution<std::uint64_t> pick(0, i - 1);
    std::swap(order[i], order[pick(rng)]);
  }
  std::vector<std::uint64_t> next(slots);
  for (std::uint64_t i = 0; i < slots; ++i) next[order[i]] = order[(i + 1) % slots];
  std::vector<isa::KernelLaunch> kernels;
  std::uint64_t p = 0;  // follows the cycle from slot 0, like the device kernel
  for (const char* name : {"pointer_chase_warmup", "pointer_chase"}) {
    auto chase = std::make_shared<std::vector<std::uint64_t>>();
    chase->reserve(hops);
    for (std::uint32_t h = 0; h < hops; ++h) {
      p = next[p];
      chase->push_back(base + p * stride);
    }
    isa::KernelLaunch k;
    k.name = name;
    k.workgroups = 1;
    k.program = [chase](std::uint32_t) {
      isa::TileProgram prog;
      prog.threads = 64;
      prog.vgprs_per_thread = 16;
      prog.chase = *chase;
      return prog;
    };
    kernels.push_back(std::move(k));
  }
  return kernels;
}

isa::KernelLaunch gemm(AddressSpace& as, const GemmShape& g, const MachineSpec& machine) {
  const std::uint32_t elem = std::max(1u, dtype_bits(g.dtype) / 8);
  const std::uint64_t a = as.allocate(std::uint64_t(g.m) * g.k * elem);
  const std::uint64_t b = as.allocate(std::uint64_t(g.n) * g.k * elem);
  const std::uint64_t c = as.allocate(std::uint64_t(g.m) * g.n * 2);
  return gemm_at({a, b, c}, g, machine);
}

isa::KernelLaunch gemm_at(const GemmBuffers& at, const GemmShape& g, const MachineSpec& machine,
                          const GemmEpilogue& epi) {
  const std::uint32_t elem = std::max(1u, dtype_bits(g.dtype) / 8);
  const std::uint64_t a = at.a, b = at.b, c = at.c;
  const std::uint32_t c_elem = std::max(1u, epi.c_bytes);
  auto fit = [](std::uint32_t dim, std::uint32_t big) {
    std::uint32_t t = 16;
    while (t < big && t < dim) t *= 2;
    return t;
  };
  const std::uint32_t tm = fit(g.m, 256);
  const std::uint32_t tn = fit(g.n, 128);
  // K step: as deep as double-buffered operand tiles fit in LDS.
  std::uint32_t tk = std::min<std::uint32_t>(g.k, elem == 1 ? 128 : 64);
  while (tk > 16 && std::uint64_t(tm + tn) * tk * elem * 2 > machine.compute.lds_per_cu.bytes) tk /= 2;
  const std::uint32_t gm = (g.m + tm - 1) / tm;
  const std::uint32_t gn = (g.n + tn - 1) / tn;
  // Split K while the output grid covers less than half the CUs.
  std::uint32_t split = 1;
  const std::uint32_t iters_total = (g.k + tk - 1) / tk;
  while (gm * gn * split * 2 <= machine.compute.total_cus() && iters_total / (split * 2) >= 4) split *= 2;
  isa::KernelLaunch k;
  k.name = "gemm";
  k.workgroups = gm * gn * split;
  k.matrix_flops = 2.0 * g.m * g.n * g.k;
  k.matrix_dtype = g.dtype;
  k.program = [=](std::uint32_t wg) {
    const std::uint32_t s = wg % split;
    const std::uint32_t tile = wg / split;
    // Grouped rasterisation (as tuned BLAS kernels do): workgroups sweep
    // kGroupM tile rows at a time, so the B panel they share stays in L2.
    constexpr std::uint32_t kGroupM = 8;
    const std::uint32_t group = tile / (kGroupM * gn);
    const std::uint32_t first_m = group * kGroupM;
    const std::uint32_t group_rows = std::min(gm - first_m, kGroupM);
    const std::uint32_t bm = first_m + (tile % (kGroupM * gn)) % group_rows;
    const std::uint32_t bn = (tile % (kGroupM * gn)) / group_rows;
    const std::uint32_t rows_a = std::min(tm, g.m - bm * tm);
    const std::uint32_t rows_b = std::min(tn, g.n - bn * tn);
    const std::uint32_t iters = iters_total / split + (s < iters_total % split ? 1 : 0);
    const std::uint32_t first = s * (iters_total / split) + std::min(s, iters_total % split);
    isa::TileProgram p;
    p.threads = 256;
    p.vgprs_per_thread = 128;
    p.lds_bytes = (tm + tn) * tk * elem * 2;  // double-buffered operand tiles
    p.pipeline_depth = 2;
    isa::Loop loop;
    loop.iterations = iters;
    const std::uint64_t k_bytes = std::uint64_t(tk) * elem;
    loop.loads.push_back(isa::strided(a + (std::uint64_t(bm) * tm * g.k + std::uint64_t(first) * tk) * elem,
                                      static_cast<std::uint32_t>(k_bytes), rows_a,
                                      std::uint64_t(g.k) * elem, static_cast<std::int64_t>(k_bytes)));
    loop.loads.push_back(isa::strided(b + (std::uint64_t(bn) * tn * g.k + std::uint64_t(first) * tk) * elem,
                                      static_cast<std::uint32_t>(k_bytes), rows_b,
                                      std::uint64_t(g.k) * elem, static_cast<std::int64_t>(k_bytes)));
    loop.dtype = g.dtype;
    loop.m = rows_a;
    loop.n = rows_b;
    loop.k = tk;
    p.loops.push_back(std::move(loop));
    // Convert/scale the accumulators, and whatever else the epilogue does per output.
    p.epilogue_vector_ops = std::uint64_t(rows_a) * rows_b * (1 + epi.ops_per_output);
    p.stores.push_back(isa::strided(c + (std::uint64_t(bm) * tm * g.n + std::uint64_t(bn) * tn) * c_elem,
                                    rows_b * c_elem, rows_a, std::uint64_t(g.n) * c_elem));
    return p;
  };
  return k;
}

}  // namespace tdmsim::sim::programs
