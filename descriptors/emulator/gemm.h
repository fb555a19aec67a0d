// The emulator's GEMM: C = A * W^T in fp32, A [m][k], W [n][k] (one row per
// output channel, as expert weights are stored), all row-major with strides.
// Backed by Eigen's single-threaded blocked kernel: each C element is an fp32
// sum over k in an order fixed by the shape (m, n, k), the Eigen version, the
// SIMD width of the build and the CPU's cache sizes (which set Eigen's K
// blocking). The emulator only calls it with shapes fixed by the plan
// (block_m x chunk x K), so results never depend on thread count or on the
// other rows routed to an expert. See docs/emulator.md ("Accumulation order").
#pragma once

#include <cstddef>

namespace tdmsim::emu {

void gemm_abt(const float* a, std::size_t lda, const float* w, std::size_t ldw, std::size_t m,
              std::size_t n, std::size_t k, float* c, std::size_t ldc);

}  // namespace tdmsim::emu
