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
// calls. Blocks of 3 tokens x 16 experts (12 registers of 4 doubles): per h,
// 3 broadcasts of x, 4 loads of w and 12 multiply-adds, 19 instructions
// (16 registers: 12 sums, 3 x, 1 w), where converting w in the loop (6
// tokens x 8 experts) took 24; W^T is converted once per call instead. The
// sums are named variables: GCC kept an array of them on the stack, storing
// all 12 on every step.
__attribute__((target("avx2,fma"))) void block3_avx2(const double* wd, std::uint32_t rows, std::uint32_t experts,
                                                     const double* x3, double* a) {
  double* a1 = a + experts;
  double* a2 = a1 + experts;
  __m256d s00 = _mm256_loadu_pd(a), s01 = _mm256_loadu_pd(a + 4);
  __m256d s02 = _mm256_loadu_pd(a + 8), s03 = _mm256_loadu_pd(a + 12);
  __m256d s10 = _mm256_loadu_pd(a1), s11 = _mm256_loadu_pd(a1 + 4);
  __m256d s12 = _mm256_loadu_pd(a1 + 8), s13 = _mm256_loadu_pd(a1 + 12);
  __m256d s20 = _mm256_loadu_pd(a2), s21 = _mm256_loadu_pd(a2 + 4);
  __m256d s22 = _mm256_loadu_pd(a2 + 8), s23 = _mm256_loadu_pd(a2 + 12);
  const double* w = wd;
  const double* const x_end = x3 + 3 * std::size_t(rows);
#pragma GCC unroll 2
  for (const double* x = x3; x != x_end; x += 3, w += experts) {
    const __m256d v0 = _mm256_broadcast_sd(x), v1 = _mm256_broadcast_sd(x + 1), v2 = _mm256_broadcast_sd(x + 2);
    __m256d wk = _mm256_loadu_pd(w);
    s00 = _mm256_fmadd_pd(v0, wk, s00), s10 = _mm256_fmadd_pd(v1, wk, s10), s20 = _mm256_fmadd_pd(v2, wk, s20);
    wk = _mm256_loadu_pd(w + 4);
    s01 = _mm256_fmadd_pd(v0, wk, s01), s11 = _mm256_fmadd_pd(v1, wk, s11), s21 = _mm256_fmadd_pd(v2, wk, s21);
    wk = _mm256_loadu_pd(w + 8);
    s02 = _mm256_fmadd_pd(v0, wk, s02), s12 = _mm256_fmadd_pd(v1, wk, s12), s22 = _mm256_fmadd_pd(v2, wk, s22);
    wk = _mm256_loadu_pd(w + 12);
    s03 = _mm256_fmadd_pd(v0, wk, s03), s13 = _mm256_fmadd_pd(v1, wk, s13), s23 = _mm256_fmadd_pd(v2, wk, s23);
  }
  _mm256_storeu_pd(a, s00), _mm256_storeu_pd(a + 4, s01), _mm256_storeu_pd(a + 8, s02);
  _mm256_storeu_pd(a + 12, s03), _mm256_storeu_pd(a1, s10), _mm256_storeu_pd(a1 + 4, s11);
  _mm256_storeu_pd(a1 + 8, s12), _mm256_storeu_pd(a1 + 12, s13), _mm256_storeu_pd(a2, s20);
  _mm256_storeu_pd(a2 + 4, s21), _mm256_storeu_pd(a2 + 8, s22), _mm256_storeu_pd(a2 + 12, s23);
}

// One token x 16 experts: for the 1 or 2 tokens a block of 3 leaves over.
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
  constexpr std::uint32_t kE = 16, kT = 3;
  const std::uint32_t e_end = experts / kE * kE;
  if (e_end == 0) return 0;
  // x as double: the blocks of 3 tokens interleaved (x[t][h] at
  // 3 * (t0 * rows + h) + t - t0, so one step reads 3 neighbours), the
  // tokens left over row by row after them; W^T as double (experts apart).
  thread_local std::vector<double> xd, wd;
  const std::uint32_t t3 = tokens / kT * kT;
  xd.resize(std::size_t(tokens) * rows);
  for (std::uint32_t t = 0; t < tokens; ++t) {
    const float* xt = x + std::size_t(t) * x_stride;
    if (t < t3) {
      double* d = xd.data() + std::size_t(t - t % kT) * rows + t % kT;
      for (std::uint32_t h = 0; h < rows; ++h) d[std::size_t(h) * kT] = xt[h];
    } else {
      double* d = xd.data() + std::size_t(t) * rows;
      for (std::uint32_t h = 0; h < rows; ++h) d[h] = xt[h];
    }
  }
  wd.resize(std::size_t(rows) * experts);
  for (std::size_t i = 0; i < wd.size(); ++i) wd[i] = wt[i];
  for (std::uint32_t t = 0; t < t3; t += kT) {
    for (std::uint32_t e = 0; e < e_end; e += kE) {
      block3_avx2(wd.data() + e, rows, experts, xd.data() + std::size_t(t) * rows, acc + std::size_t(t) * experts + e);
    }
  }
  for (std::uint32_t t = t3; t < tokens; ++t) {
    for (std::uint32_t e = 0; e < e_end; e += kE) {
      block1_avx2(wd.data() + e, rows, experts, xd.data() + std::size_t(t) * rows, acc + std::size_t(t) * experts + e);
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
