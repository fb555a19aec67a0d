#include "sim/mem/channel_reserve.h"

#include <algorithm>
#include <cstring>

#if TDMSIM_X86_VARIANTS
#include <immintrin.h>
#endif

namespace tdmsim::sim::channel_reserve {

Tick lines_scalar(const std::uint16_t* lines, Tick arrive, Tick line_time, BusyUntil* busy, std::size_t channels) {
  Tick served = arrive;
  for (std::size_t ch = 0; ch < channels; ++ch) {
    // As busy[ch].reserve(arrive, line_time * n) where n > 0, without a
    // branch (whether a channel has lines is unpredictable).
    const std::uint64_t n = lines[ch];
    const Tick free = busy[ch].free_at;
    const Tick end = std::max(arrive, free) + line_time * n;
    const Tick has = Tick{0} - static_cast<Tick>(n != 0);  // all ones where n > 0
    busy[ch].free_at = free + ((end - free) & has);
    served = std::max(served, end & has);
  }
  return served;
}

Tick runs_scalar(const std::uint16_t* rows, std::size_t stride, const Tick* offsets, std::size_t runs, Tick at,
                 Tick line_time, BusyUntil* busy, std::size_t channels) {
  Tick back = at;
  for (std::size_t k = 0; k < runs; ++k) {
    back = std::max(back, lines_scalar(rows + k * stride, at + offsets[k], line_time, busy, channels));
  }
  return back;
}

Tick mshrs_scalar(const std::uint32_t* per_channel, std::uint64_t every, Tick hold, Tick arrive, BusyUntil* busy,
                  std::size_t channels) {
  Tick ready = arrive;
  for (std::size_t ch = 0; ch < channels; ++ch) {
    const std::uint64_t misses = per_channel[ch] + every;
    if (misses > 0) {
      // Each miss holds an MSHR for the miss round trip: with `mshrs` of
      // them, a channel starts at most mshrs misses per round trip.
      const Tick h = hold * misses;
      ready = std::max(ready, busy[ch].reserve(arrive, h) - h);
    }
  }
  return ready;
}

#if TDMSIM_X86_VARIANTS
namespace {
// The AVX2 versions do the scalar ones' integer arithmetic, so give the same
// results: times are below 2^63 ps, so signed 64-bit compares order them, and
// a count times the line time fits 32 x 32 -> 64 bits (checked by the
// caller: avx2_fits).
// Four channels of a reservation arriving at `at`: each with lines is busy
// from max(at, its free time) for lines x line_time (`lt`); `served` keeps
// the latest end.
__attribute__((target("avx2"), always_inline)) inline void reserve_four(__m256i at, __m256i lt,
                                                                        const std::uint16_t* lines,
                                                                        BusyUntil* busy, __m256i& served) {
  static_assert(sizeof(BusyUntil) == sizeof(Tick));
  auto* f = reinterpret_cast<__m256i*>(&busy->free_at);
  const __m256i free = _mm256_loadu_si256(f);
  std::uint64_t four;
  std::memcpy(&four, lines, sizeof four);
  const __m256i n = _mm256_cvtepu16_epi64(_mm_cvtsi64_si128(static_cast<long long>(four)));
  const __m256i start = _mm256_blendv_epi8(at, free, _mm256_cmpgt_epi64(free, at));
  const __m256i end = _mm256_add_epi64(start, _mm256_mul_epu32(n, lt));
  const __m256i none = _mm256_cmpeq_epi64(n, _mm256_setzero_si256());  // channels without lines keep their time
  _mm256_storeu_si256(f, _mm256_blendv_epi8(end, free, none));
  const __m256i mine = _mm256_andnot_si256(none, end);
  served = _mm256_blendv_epi8(served, mine, _mm256_cmpgt_epi64(mine, served));
}

// The largest of the four lanes.
__attribute__((target("avx2"), always_inline)) inline Tick lane_max(__m256i v) {
  alignas(32) Tick four[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(four), v);
  return std::max(std::max(four[0], four[1]), std::max(four[2], four[3]));
}
}  // namespace

__attribute__((target("avx2"))) Tick lines_avx2(const std::uint16_t* lines, Tick arrive, Tick line_time,
                                                BusyUntil* busy, std::size_t channels) {
  const __m256i at = _mm256_set1_epi64x(static_cast<long long>(arrive));
  const __m256i lt = _mm256_set1_epi64x(static_cast<long long>(line_time));
  __m256i served = at;
  for (std::size_t ch = 0; ch < channels; ch += 4) reserve_four(at, lt, lines + ch, busy + ch, served);
  return lane_max(served);
}

// One call and one reduction of the latest end for all of an iteration's
// runs (for one run, the same steps as lines_avx2's).
__attribute__((target("avx2"))) Tick runs_avx2(const std::uint16_t* rows, std::size_t stride, const Tick* offsets,
                                               std::size_t runs, Tick at0, Tick line_time, BusyUntil* busy,
                                               std::size_t channels) {
  const __m256i lt = _mm256_set1_epi64x(static_cast<long long>(line_time));
  __m256i served = _mm256_set1_epi64x(static_cast<long long>(at0));
  for (std::size_t k = 0; k < runs; ++k, rows += stride) {
    const __m256i at = _mm256_set1_epi64x(static_cast<long long>(at0 + offsets[k]));
    served = _mm256_blendv_epi8(served, at, _mm256_cmpgt_epi64(at, served));
    for (std::size_t ch = 0; ch < channels; ch += 4) reserve_four(at, lt, rows + ch, busy + ch, served);
  }
  return lane_max(served);
}

__attribute__((target("avx2"))) Tick mshrs_avx2(const std::uint32_t* per_channel, std::uint64_t every, Tick hold,
                                                Tick arrive, BusyUntil* busy, std::size_t channels) {
  const __m256i at = _mm256_set1_epi64x(static_cast<long long>(arrive));
  const __m256i h = _mm256_set1_epi64x(static_cast<long long>(hold));
  const __m256i ev = _mm256_set1_epi64x(static_cast<long long>(every));
  __m256i ready = at;
  for (std::size_t ch = 0; ch < channels; ch += 4) {
    auto* f = reinterpret_cast<__m256i*>(&busy[ch].free_at);
    const __m256i n = _mm256_add_epi64(
        _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(per_channel + ch))), ev);
    const __m256i free = _mm256_loadu_si256(f);
    const __m256i start = _mm256_blendv_epi8(at, free, _mm256_cmpgt_epi64(free, at));
    const __m256i none = _mm256_cmpeq_epi64(n, _mm256_setzero_si256());  // channels without misses keep their time
    _mm256_storeu_si256(f, _mm256_blendv_epi8(_mm256_add_epi64(start, _mm256_mul_epu32(n, h)), free, none));
    const __m256i mine = _mm256_andnot_si256(none, start);
    ready = _mm256_blendv_epi8(ready, mine, _mm256_cmpgt_epi64(mine, ready));
  }
  return lane_max(ready);
}
#endif

}  // namespace tdmsim::sim::channel_reserve
