// Microbenchmark kernels for the timing model, mirroring the ones we run on
// real GPUs (kernels/microbench/memory_bench.hip, validation/microbench/
// gemm_roofline.py): streaming copy/read, pointer chase, GEMM.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/tile_program.h"
#include "sim/mem/address_space.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim::programs {

// dst <- src over `bytes`, each workgroup one `chunk` (16-byte accesses
// coalesced into whole rows).
isa::KernelLaunch stream_copy(AddressSpace& as, std::uint64_t bytes, std::uint64_t chunk = 64 * 1024);
isa::KernelLaunch stream_read(AddressSpace& as, std::uint64_t bytes, std::uint64_t chunk = 64 * 1024);

// One thread following a random single cycle over `footprint` bytes at
// `stride`, `hops` dependent loads (the same cycle construction as the HIP
// benchmark: Sattolo's algorithm, seeded).
// Returns two kernels: a warm-up walk of `hops` and the timed walk that
// continues the cycle from where the warm-up stopped (as the device
// benchmark does), so a footprint that fits in a cache is measured warm.
std::vector<isa::KernelLaunch> pointer_chase(AddressSpace& as, std::uint64_t footprint,
                                             std::uint32_t stride, std::uint32_t hops,
                                             std::uint64_t seed = 20261129);

struct GemmShape {
  std::uint32_t m = 0, n = 0, k = 0;
  DType dtype = DType::bf16;
};
// C[M][N] = A[M][K] x B[N][K]^T with a tile choice like a vendor BLAS's:
// 256x128 (bf16) output tiles, K step 64 (128 for fp8), smaller tiles for
// small M or N, and split-K when the output grid cannot fill the machine.
isa::KernelLaunch gemm(AddressSpace& as, const GemmShape& g, const MachineSpec& machine);

// The same GEMM on buffers already placed (A, B, C), with its epilogue's
// output element size (bf16 by default; 4: fp32) and extra vector element
// operations per output (a bias add: 1).
struct GemmBuffers {
  std::uint64_t a = 0, b = 0, c = 0;
};
struct GemmEpilogue {
  std::uint32_t c_bytes = 2;
  std::uint32_t ops_per_output = 0;
};
isa::KernelLaunch gemm_at(const GemmBuffers& at, const GemmShape& g, const MachineSpec& machine,
                          const GemmEpilogue& epilogue = {});

}  // namespace tdmsim::sim::programs
