// Variants of router_accumulate (router_accumulate.h). The vector ones keep a
// block of accumulators in registers (a few tokens x a run of experts) while
// they walk h, so W^T is read once per block of tokens rather than once per
// token, and each (t, e) pair still adds its products in increasing h.
#include "descriptors/plan/router_accumulate.h"

#include <immintrin.h>

#include <stdexcept>
#include <vector>

namespace tdmsim::plan {
namespace {

void accumulate_scalar(const float* wt, std::uint32_t rows, std::uint32_t experts, const float* x,
                       std::size_t x_stride, std::uint32_t tokens, std::uint32_t e_begin, double* acc) {
  for (std::uint32_t t = 0; t < tokens; ++t) {
    double* a = acc + std::size_t(t) * experts;
    const float* xt = x + std::size_t(t) * x_stride;
    for (std::uint32_t h = 0; h < rows; ++h) {
      const double xv = xt[h];
      const float* w = wt + std::size_t(h) * experts;
      for (std::uint32_t e = e_begin; e < experts; ++e) a[e] += xv * static_cast<double>(w[e]);
    }
  }
}

// AVX2 + FMA, on x and W^T converted to double first (exact), kept between
// calls. Blocks of 8 tokens x 4 experts: per h, one load of w and 8
// multiply-adds whose x comes straight from memory, stored there already
// broadcast (4 copies of each value), so that no broadcast instruction is
// needed: 9 instructions for 8 multiply-adds (converting w in the loop and
// broadcasting x, 6 tokens x 8 experts, took 24 for 12). The sums are named
// variables: GCC kept an array of them on the stack, storing all of them on
// every step.
__attribute__((target("avx2,fma"))) void block8_avx2(const double* wd, std::uint32_t rows, std::uint32_t experts,
                                                     const double* xb, double* a, std::size_t a_stride) {
  __m256d s0 = _mm256_loadu_pd(a), s1 = _mm256_loadu_pd(a + a_stride);
  __m256d s2 = _mm256_loadu_pd(a + 2 * a_stride), s3 = _mm256_loadu_pd(a + 3 * a_stride);
  __m256d s4 = _mm256_loadu_pd(a + 4 * a_stride), s5 = _mm256_loadu_pd(a + 5 * a_stride);
  __m256d s6 = _mm256_loadu_pd(a + 6 * a_stride), s7 = _mm256_loadu_pd(a + 7 * a_stride);
  const double* w = wd;
  const double* const x_end = xb + 32 * std::size_t(rows);
#pragma GCC unroll 4
  for (const double* x = xb; x != x_end; x += 32, w += experts) {
    const __m256d wk = _mm256_loadu_pd(w);
    s0 = _mm256_fmadd_pd(_mm256_loadu_pd(x), wk, s0), s1 = _mm256_fmadd_pd(_mm256_loadu_pd(x + 4), wk, s1);
    s2 = _mm256_fmadd_pd(_mm256_loadu_pd(x + 8), wk, s2), s3 = _mm256_fmadd_pd(_mm256_loadu_pd(x + 12), wk, s3);
    s4 = _mm256_fmadd_pd(_mm256_loadu_pd(x + 16), wk, s4), s5 = _mm256_fmadd_pd(_mm256_loadu_pd(x + 20), wk, s5);
    s6 = _mm256_fmadd_pd(_mm256_loadu_pd(x + 24), wk, s6), s7 = _mm256_fmadd_pd(_mm256_loadu_pd(x + 28), wk, s7);
  }
  _mm256_storeu_pd(a, s0), _mm256_storeu_pd(a + a_stride, s1);
  _mm256_storeu_pd(a + 2 * a_stride, s2), _mm256_storeu_pd(a + 3 * a_stride, s3);
  _mm256_storeu_pd(a + 4 * a_stride, s4), _mm256_storeu_pd(a + 5 * a_stride, s5);
  _mm256_storeu_pd(a + 6 * a_stride, s6), _mm256_storeu_pd(a + 7 * a_stride, s7);
}

// One token x 16 experts: for the tokens blocks of 8 leave over.
__attribute__((target("avx2,fma"))) void block1_avx2(const double* wd, std::uint32_t rows, std::uint32_t experts,
                                                     const double* xs, double* a) {
  __m256d s0 = _mm256_loadu_pd(a), s1 = _mm256_loadu_pd(a + 4);
  __m256d s2 = _mm256_loadu_pd(a + 8), s3 = _mm256_loadu_pd(a + 12);
  const double* w = wd;
#pragma GCC unroll 2
  for (std::uint32_t h = 0; h < rows; ++h, w += experts) {
    const __m256d v = _mm256_broadcast_sd(xs + h);
    s0 = _mm256_fmadd_pd(v, _mm256_loadu_pd(w), s0);
    s1 = _mm256_fmadd_pd(v, _mm256_loadu_pd(w + 4), s1);
    s2 = _mm256_fmadd_pd(v, _mm256_loadu_pd(w + 8), s2);
    s3 = _mm256_fmadd_pd(v, _mm256_loadu_pd(w + 12), s3);
  }
  _mm256_storeu_pd(a, s0), _mm256_storeu_pd(a + 4, s1);
  _mm256_storeu_pd(a + 8, s2), _mm256_storeu_pd(a + 12, s3);
}

__attribute__((target("avx2,fma"))) std::uint32_t accumulate_avx2(const float* wt, std::uint32_t rows,
                                                                  std::uint32_t experts, const float* x,
                                                                  std::size_t x_stride, std::uint32_t tokens,
                                                                  double* acc) {
  constexpr std::uint32_t kE = 16, kT = 8;
  const std::uint32_t e_end = experts / kE * kE;
  if (e_end == 0) return 0;
  // x as double: for the blocks of 8 tokens, each value broadcast to 4
  // copies, the block's 8 tokens side by side for each h (x[t][h] at
  // 4 * (8 * (t0 * rows + h) + t - t0)); the tokens left over row by row
  // after them. W^T as double (experts apart).
  thread_local std::vector<double> xb, xd, wd;
  const std::uint32_t t8 = tokens / kT * kT;
  xb.resize(std::size_t(t8) * rows * 4);
  for (std::uint32_t t = 0; t < t8; ++t) {
    const float* xt = x + std::size_t(t) * x_stride;
    double* d = xb.data() + 4 * (std::size_t(t - t % kT) * rows + t % kT);
    for (std::uint32_t h = 0; h < rows; ++h) _mm256_storeu_pd(d + std::size_t(h) * 4 * kT, _mm256_set1_pd(xt[h]));
  }
  xd.resize(std::size_t(tokens - t8) * rows);
  for (std::uint32_t t = t8; t < tokens; ++t) {
    const float* xt = x + std::size_t(t) * x_stride;
    double* d = xd.data() + std::size_t(t - t8) * rows;
    for (std::uint32_t h = 0; h < rows; ++h) d[h] = xt[h];
  }
  wd.resize(std::size_t(rows) * experts);
  for (std::size_t i = 0; i < wd.size(); ++i) wd[i] = wt[i];
  for (std::uint32_t t = 0; t < t8; t += kT) {
    for (std::uint32_t e = 0; e < e_end; e += 4) {
      block8_avx2(wd.data() + e, rows, experts, xb.data() + std::size_t(t) * rows * 4,
                  acc + std::size_t(t) * experts + e, experts);
    }
  }
  for (std::uint32_t t = t8; t < tokens; ++t) {
    for (std::uint32_t e = 0; e < e_end; e += kE) {
      block1_avx2(wd.data() + e, rows, experts, xd.data() + std::size_t(t - t8) * rows,
                  acc + std::size_t(t) * experts + e);
    }
  }
  return e_end;
}

}  // namespace

bool router_isa_supported(RouterIsa isa) {
  switch (isa) {
    case RouterIsa::scalar: return true;
    case RouterIsa::avx2_fma: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }
  return false;
}

RouterIsa router_isa_best() {
  if (router_isa_supported(RouterIsa::avx2_fma)) return RouterIsa::avx2_fma;
  return RouterIsa::scalar;
}

void router_accumulate(RouterIsa isa, const float* wt, std::uint32_t rows, std::uint32_t experts,
                       const float* x, std::size_t x_stride, std::uint32_t tokens, double* acc) {
  if (!router_isa_supported(isa)) throw std::logic_error("router_accumulate: instruction set not on this host");
  std::uint32_t done = 0;  // experts [0, done) handled by the vector variant
  switch (isa) {
    case RouterIsa::scalar: break;
    case RouterIsa::avx2_fma: done = accumulate_avx2(wt, rows, experts, x, x_stride, tokens, acc); break;
  }
  if (done < experts) accumulate_scalar(wt, rows, experts, x, x_stride, tokens, done, acc);
}

}  // namespace tdmsim::plan
