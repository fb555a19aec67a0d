// Host-speed kernel for the router's logits (routing.cpp): the multiply-adds
// acc[t][e] += x[t][h] * W^T[h][e], in double, over h in increasing order for
// every (t, e). Kept apart from the routing model: it only changes how fast
// the documented sum is formed, never its bits.
//
// Why a vector version gives the same bits: x and W are floats, so x * w is
// exact in double (24 + 24 bits of mantissa), and a fused multiply-add
// fma(x, w, acc) rounds once, exactly like acc + x * w. Each (t, e) sum keeps
// its own accumulator and its order in h, whichever variant runs; only the
// number of (t, e) pairs worked on at once differs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tdmsim::plan {

// The instruction-set variants of router_accumulate. `scalar` is the
// reference; the others are picked at run time where the host has them.
enum class RouterIsa { scalar, avx2_fma };
// (An AVX-512 variant would do twice the work an instruction, but no machine
// of the project has AVX-512 to test it on.)

// The fastest variant this host runs.
RouterIsa router_isa_best();
// Whether the host runs `isa` (scalar always).
bool router_isa_supported(RouterIsa isa);

// For t < tokens and e < experts:
//   acc[t * experts + e] += sum over h < rows of x[t * x_stride + h] * wt[h * experts + e],
// added in increasing h, each product and sum in double. `isa` must be supported.
void router_accumulate(RouterIsa isa, const float* wt, std::uint32_t rows, std::uint32_t experts,
                       const float* x, std::size_t x_stride, std::uint32_t tokens, double* acc);

}  // namespace tdmsim::plan
