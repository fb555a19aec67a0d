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

// AVX2 + FMA. The tokens' x are converted to double first (exact), so that
// each step broadcasts them straight from memory. Blocks of 6 tokens x 8
// experts (12 registers of 4 doubles): per h, 2 conversions of w, 6 loads
// and 12 multiply-adds; the conversions compete with the multiply-adds for
// the host's floating-point pipes, so the more tokens share each converted
// w, the faster (about 20% faster than 2 tokens x 16 experts on the
// project's Zen 3 host). The tokens left over: 2 x 16, then 1 x 16.
__attribute__((target("avx2,fma"))) std::uint32_t accumulate_avx2(const float* wt, std::uint32_t rows,
                                                                  std::uint32_t experts, const float* x,
                                                                  std::size_t x_stride, std::uint32_t tokens,
                                                                  double* acc) {
  constexpr std::uint32_t kE = 16, kT = 2, kT6 = 6, kE6 = 8;
  const std::uint32_t e_end = experts / kE * kE;
  if (e_end == 0) return 0;
  // x as double, row by row (rows apart); kept between calls.
  thread_local std::vector<double> xd;
  xd.resize(std::size_t(tokens) * rows);
  for (std::uint32_t t = 0; t < tokens; ++t) {
    const float* xt = x + std::size_t(t) * x_stride;
    double* d = xd.data() + std::size_t(t) * rows;
    for (std::uint32_t h = 0; h < rows; ++h) d[h] = xt[h];
  }
  std::uint32_t t = 0;
  for (; t + kT6 <= tokens; t += kT6) {
    const double* xs = xd.data() + std::size_t(t) * rows;
    double* a = acc + std::size_t(t) * experts;
    for (std::uint32_t e = 0; e < e_end; e += kE6) {
      __m256d s[kT6][2];
      for (std::uint32_t j = 0; j < kT6; ++j) {
        s[j][0] = _mm256_loadu_pd(a + j * experts + e);
        s[j][1] = _mm256_loadu_pd(a + j * experts + e + 4);
      }
      const float* w = wt + e;
      for (std::uint32_t h = 0; h < rows; ++h, w += experts) {
        const __m256d w0 = _mm256_cvtps_pd(_mm_loadu_ps(w)), w1 = _mm256_cvtps_pd(_mm_loadu_ps(w + 4));
        for (std::uint32_t j = 0; j < kT6; ++j) {  // (unrolled by the compiler)
          const __m256d v = _mm256_broadcast_sd(xs + std::size_t(j) * rows + h);
          s[j][0] = _mm256_fmadd_pd(v, w0, s[j][0]);
          s[j][1] = _mm256_fmadd_pd(v, w1, s[j][1]);
        }
      }
      for (std::uint32_t j = 0; j < kT6; ++j) {
        _mm256_storeu_pd(a + j * experts + e, s[j][0]);
        _mm256_storeu_pd(a + j * experts + e + 4, s[j][1]);
      }
    }
  }
  for (; t + kT <= tokens; t += kT) {
    const double* x0 = xd.data() + std::size_t(t) * rows;
    const double* x1 = x0 + rows;
    double* a0 = acc + std::size_t(t) * experts;
    double* a1 = a0 + experts;
    for (std::uint32_t e = 0; e < e_end; e += kE) {
      __m256d s00 = _mm256_loadu_pd(a0 + e), s01 = _mm256_loadu_pd(a0 + e + 4);
      __m256d s02 = _mm256_loadu_pd(a0 + e + 8), s03 = _mm256_loadu_pd(a0 + e + 12);
      __m256d s10 = _mm256_loadu_pd(a1 + e), s11 = _mm256_loadu_pd(a1 + e + 4);
      __m256d s12 = _mm256_loadu_pd(a1 + e + 8), s13 = _mm256_loadu_pd(a1 + e + 12);
      const float* w = wt + e;
      for (std::uint32_t h = 0; h < rows; ++h, w += experts) {
        const __m256d w0 = _mm256_cvtps_pd(_mm_loadu_ps(w)), w1 = _mm256_cvtps_pd(_mm_loadu_ps(w + 4));
        const __m256d w2 = _mm256_cvtps_pd(_mm_loadu_ps(w + 8)), w3 = _mm256_cvtps_pd(_mm_loadu_ps(w + 12));
        const __m256d v0 = _mm256_broadcast_sd(x0 + h), v1 = _mm256_broadcast_sd(x1 + h);
        s00 = _mm256_fmadd_pd(v0, w0, s00);
        s01 = _mm256_fmadd_pd(v0, w1, s01);
        s02 = _mm256_fmadd_pd(v0, w2, s02);
        s03 = _mm256_fmadd_pd(v0, w3, s03);
        s10 = _mm256_fmadd_pd(v1, w0, s10);
        s11 = _mm256_fmadd_pd(v1, w1, s11);
        s12 = _mm256_fmadd_pd(v1, w2, s12);
        s13 = _mm256_fmadd_pd(v1, w3, s13);
      }
      _mm256_storeu_pd(a0 + e, s00), _mm256_storeu_pd(a0 + e + 4, s01);
      _mm256_storeu_pd(a0 + e + 8, s02), _mm256_storeu_pd(a0 + e + 12, s03);
      _mm256_storeu_pd(a1 + e, s10), _mm256_storeu_pd(a1 + e + 4, s11);
      _mm256_storeu_pd(a1 + e + 8, s12), _mm256_storeu_pd(a1 + e + 12, s13);
    }
  }
  // A last odd token: one row of accumulators.
  for (; t < tokens; ++t) {
    const double* x0 = xd.data() + std::size_t(t) * rows;
    double* a0 = acc + std::size_t(t) * experts;
    for (std::uint32_t e = 0; e < e_end; e += kE) {
      __m256d s0 = _mm256_loadu_pd(a0 + e), s1 = _mm256_loadu_pd(a0 + e + 4);
      __m256d s2 = _mm256_loadu_pd(a0 + e + 8), s3 = _mm256_loadu_pd(a0 + e + 12);
      const float* w = wt + e;
      for (std::uint32_t h = 0; h < rows; ++h, w += experts) {
        const __m256d v = _mm256_broadcast_sd(x0 + h);
        s0 = _mm256_fmadd_pd(v, _mm256_cvtps_pd(_mm_loadu_ps(w)), s0);
        s1 = _mm256_fmadd_pd(v, _mm256_cvtps_pd(_mm_loadu_ps(w + 4)), s1);
        s2 = _mm256_fmadd_pd(v, _mm256_cvtps_pd(_mm_loadu_ps(w + 8)), s2);
        s3 = _mm256_fmadd_pd(v, _mm256_cvtps_pd(_mm_loadu_ps(w + 12)), s3);
      }
      _mm256_storeu_pd(a0 + e, s0), _mm256_storeu_pd(a0 + e + 4, s1);
      _mm256_storeu_pd(a0 + e + 8, s2), _mm256_storeu_pd(a0 + e + 12, s3);
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
