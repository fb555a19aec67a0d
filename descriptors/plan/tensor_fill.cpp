// Variants of tensor_fill (tensor_fill.h). The AVX2 one runs the splitmix64
// finaliser on four indices at once (its 64-bit multiplies from 32-bit ones,
// exact modulo 2^64 like the scalar ones) and then the same float steps as tensor_value, each exact or
// rounded once in the same way: (bits >> 40) is below 2^24 and converts
// exactly, times 2^-24 and times 2 are exact (so one multiplication by
// 2^-23 gives the same), and the subtraction and the multiplication by
// `scale` round once each, as in the scalar code.
#include "descriptors/plan/tensor_fill.h"

#include <immintrin.h>

#include <stdexcept>

namespace tdmsim::plan {
namespace {

void fill_scalar(std::uint64_t seed, TensorId id, std::uint64_t part, std::uint64_t first, std::uint64_t stride,
                 std::size_t n, float scale, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = tensor_value(seed, id, part, first + i * stride, scale);
}

// a * b modulo 2^64 in each lane (AVX2 has no 64-bit multiply): the low
// halves' full product plus the two cross products shifted up; `b_hi` is b >> 32.
__attribute__((target("avx2"))) inline __m256i mul64(__m256i a, __m256i b, __m256i b_hi) {
  const __m256i lo = _mm256_mul_epu32(a, b);
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b), _mm256_mul_epu32(a, b_hi));
  return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

__attribute__((target("avx2"))) inline __m256i splat(std::uint64_t v) {
  return _mm256_set1_epi64x(static_cast<long long>(v));
}

__attribute__((target("avx2"))) std::size_t fill_avx2(std::uint64_t seed, TensorId id, std::uint64_t part,
                                                       std::uint64_t first, std::uint64_t stride, std::size_t n,
                                                       float scale, float* out) {
  // tensor_bits = mix64(key ^ index) with key = mix64(mix64(seed ^ id) ^ part).
  const std::uint64_t key = mix64(mix64(seed ^ (static_cast<std::uint64_t>(id) << 56)) ^ part);
  constexpr std::uint64_t kM1 = 0xBF58476D1CE4E5B9ull, kM2 = 0x94D049BB133111EBull;
  const __m256i vkey = splat(key), golden = splat(0x9E3779B97F4A7C15ull);
  const __m256i m1 = splat(kM1), m1_hi = splat(kM1 >> 32), m2 = splat(kM2), m2_hi = splat(kM2 >> 32);
  const __m256i step = splat(4 * stride), step8 = splat(8 * stride);
  __m256i index = _mm256_set_epi64x(static_cast<long long>(first + 3 * stride),
                                    static_cast<long long>(first + 2 * stride),
                                    static_cast<long long>(first + stride), static_cast<long long>(first));
  // The finaliser up to its last step: z ^ (z >> 31) changes only bits 0-32,
  // and only bits 40-63 are used, so that step is left out.
  const auto mixed = [&](__m256i idx) __attribute__((target("avx2"))) {
    __m256i z = _mm256_add_epi64(_mm256_xor_si256(vkey, idx), golden);
    z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), m1, m1_hi);
    return mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), m2, m2_hi);
  };
  const __m256i low_halves = _mm256_set_epi32(7, 5, 3, 1, 6, 4, 2, 0);
  // 2 * (u * 2^-24) = u * 2^-23, both exact.
  const __m128 half_unit = _mm_set1_ps(1.0f / 8388608.0f), one = _mm_set1_ps(1.0f), vscale = _mm_set1_ps(scale);
  const __m256 half_unit8 = _mm256_set1_ps(1.0f / 8388608.0f), one8 = _mm256_set1_ps(1.0f);
  const __m256 vscale8 = _mm256_set1_ps(scale);
  std::size_t i = 0;
  // Eight at a time: the float steps on one register of eight. The high
  // dwords of (z_b >> 8) are z_b >> 40; blended in between those of
  // z_a >> 40 and put in order: the 8 values' bits, i ascending.
  const __m256i order8 = _mm256_set_epi32(7, 5, 3, 1, 6, 4, 2, 0);
  for (; i + 8 <= n; i += 8, index = _mm256_add_epi64(index, step8)) {
    const __m256i za = mixed(index), zb = mixed(_mm256_add_epi64(index, step));
    const __m256i both = _mm256_blend_epi32(_mm256_srli_epi64(za, 40), _mm256_srli_epi64(zb, 8), 0xAA);
    const __m256 twice_u = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_permutevar8x32_epi32(both, order8)), half_unit8);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_sub_ps(twice_u, one8), vscale8));
  }
  for (; i + 4 <= n; i += 4, index = _mm256_add_epi64(index, step)) {
    // bits >> 40 is below 2^24: its low 32 bits, gathered into one half, convert exactly.
    const __m256i bits24 = _mm256_permutevar8x32_epi32(_mm256_srli_epi64(mixed(index), 40), low_halves);
    const __m128 twice_u = _mm_mul_ps(_mm_cvtepi32_ps(_mm256_castsi256_si128(bits24)), half_unit);
    _mm_storeu_ps(out + i, _mm_mul_ps(_mm_sub_ps(twice_u, one), vscale));
  }
  return i;
}

}  // namespace

bool fill_isa_supported(FillIsa isa) {
  switch (isa) {
    case FillIsa::scalar: return true;
    case FillIsa::avx2: return __builtin_cpu_supports("avx2");
  }
  return false;
}

FillIsa fill_isa_best() { return fill_isa_supported(FillIsa::avx2) ? FillIsa::avx2 : FillIsa::scalar; }

void tensor_fill(FillIsa isa, std::uint64_t seed, TensorId id, std::uint64_t part, std::uint64_t first,
                 std::uint64_t stride, std::size_t n, float scale, float* out) {
  if (!fill_isa_supported(isa)) throw std::logic_error("tensor_fill: instruction set not on this host");
  std::size_t done = 0;
  if (isa == FillIsa::avx2) done = fill_avx2(seed, id, part, first, stride, n, scale, out);
  fill_scalar(seed, id, part, first + done * stride, stride, n - done, scale, out + done);
}

}  // namespace tdmsim::plan
