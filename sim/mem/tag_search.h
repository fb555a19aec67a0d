// The key search of a cache set record (cache_tags.h): which way holds a
// block's key. A scalar reference and the SSE2 version the lookups use (four
// keys a compare; SSE2 is the baseline x86-64 target, so chosen at compile
// time). The same answers: tests/sim/test_host_variants.cpp.
#pragma once

#include <bit>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tdmsim::sim {

// The first of `ways` keys equal to `key`, or `ways` if none.
inline std::uint32_t find_way_scalar(const std::uint32_t* keys, std::uint32_t ways, std::uint32_t key) {
  for (std::uint32_t i = 0; i < ways; ++i) {
    if (keys[i] == key) return i;
  }
  return ways;
}

// Whether any of 16 keys is `key`.
inline bool has_key16_scalar(const std::uint32_t* keys, std::uint32_t key) {
  return find_way_scalar(keys, 16, key) != 16;
}

#if defined(__SSE2__)
[[gnu::always_inline]] inline std::uint32_t find_way_sse2(const std::uint32_t* keys, std::uint32_t ways,
                                                          std::uint32_t key) {
  std::uint32_t i = 0;
  const __m128i want = _mm_set1_epi32(static_cast<int>(key));
  if (ways == 16) {  // the common geometry: all four compares, one branch
    const auto eq = [&](std::uint32_t w) {
      const __m128i k = _mm_loadu_si128(reinterpret_cast<const __m128i*>(keys + w));
      return static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(k, want))));
    };
    const unsigned mask = eq(0) | eq(4) << 4 | eq(8) << 8 | eq(12) << 12;
    // Bit 16 stands for "none" (ways): no branch on whether the key is there
    // (a hit or a miss, data-dependent, mispredicted a third of the time).
    return static_cast<std::uint32_t>(std::countr_zero(mask | 1u << 16));
  }
  if (ways <= 16 && ways % 4 == 0) {  // (an L1's 4 ways): every compare, then one count, no branch on the key
    unsigned mask = 0;
    for (; i < ways; i += 4) {
      const __m128i k = _mm_loadu_si128(reinterpret_cast<const __m128i*>(keys + i));
      mask |= static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(k, want)))) << i;
    }
    return static_cast<std::uint32_t>(std::countr_zero(mask | 1u << ways));
  }
  for (; i + 4 <= ways; i += 4) {
    const __m128i k = _mm_loadu_si128(reinterpret_cast<const __m128i*>(keys + i));
    const int mask = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(k, want)));
    if (mask != 0) return i + static_cast<std::uint32_t>(std::countr_zero(static_cast<unsigned>(mask)));
  }
  for (; i < ways; ++i) {
    if (keys[i] == key) return i;
  }
  return ways;
}

// (One OR of the four compares and one branch: the stream loops ask only
// whether the block is present.)
[[gnu::always_inline]] inline bool has_key16_sse2(const std::uint32_t* keys, std::uint32_t key) {
  const __m128i want = _mm_set1_epi32(static_cast<int>(key));
  const auto* k = reinterpret_cast<const __m128i*>(keys);
  const __m128i eq = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi32(_mm_loadu_si128(k), want),
                                               _mm_cmpeq_epi32(_mm_loadu_si128(k + 1), want)),
                                  _mm_or_si128(_mm_cmpeq_epi32(_mm_loadu_si128(k + 2), want),
                                               _mm_cmpeq_epi32(_mm_loadu_si128(k + 3), want)));
  return _mm_movemask_epi8(eq) != 0;
}
#endif

// The versions the lookups use.
[[gnu::always_inline]] inline std::uint32_t find_way(const std::uint32_t* keys, std::uint32_t ways,
                                                     std::uint32_t key) {
#if defined(__SSE2__)
  return find_way_sse2(keys, ways, key);
#else
  return find_way_scalar(keys, ways, key);
#endif
}
[[gnu::always_inline]] inline bool has_key16(const std::uint32_t* keys, std::uint32_t key) {
#if defined(__SSE2__)
  return has_key16_sse2(keys, key);
#else
  return has_key16_scalar(keys, key);
#endif
}

}  // namespace tdmsim::sim
