// Counting an L2's lines per channel, for its channel reservations: the
// channel hash of a line, and the counts of a run of lines per channel.
// Host-speed machinery beside the L2 (l2_cache.h): the counts are what
// counting line by line with channel_of() gives
// (tests/sim/test_host_variants.cpp).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "sim/core/divisor.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tdmsim::sim {

class ChannelCounter {
 public:
  explicit ChannelCounter(std::size_t channels);
  std::size_t channels() const { return channels_; }

  // The channel serving a line: the line number XOR-folded with its higher
  // bits, so that power-of-two strides (a tile's rows) spread over channels.
  std::size_t channel_of(std::uint64_t line) const {
    if (pow2_) {  // the same fold by shifts (runs per line: keep it branch-light)
      const std::uint32_t s = shift_;
      return static_cast<std::size_t>((line ^ (line >> s) ^ (line >> 2 * s) ^ (line >> 3 * s)) & mask_);
    }
    const std::uint64_t a = div_.div(line), b = div_.div(a), c = div_.div(b);
    return static_cast<std::size_t>(div_.mod(line ^ a ^ b ^ c));
  }
  // Bit ch set where counts[ch] != 0, for n <= 64 counts: SSE2 compares four
  // at a time where n is a multiple of 4 (an L2's channels with lines).
  // The same as nonzero_reference (tests/sim/test_host_variants.cpp).
  static std::uint64_t nonzero(const std::uint32_t* counts, std::size_t n) {
#if defined(__SSE2__)
    if (n % 4 == 0) {
      std::uint64_t zero = 0;
      const __m128i z = _mm_setzero_si128();
      for (std::size_t i = 0; i < n; i += 4) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(counts + i));
        zero |= static_cast<std::uint64_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, z)))) << i;
      }
      return ~zero & (n == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1);
    }
#endif
    return nonzero_reference(counts, n);
  }
  static std::uint64_t nonzero_reference(const std::uint32_t* counts, std::size_t n) {
    std::uint64_t m = 0;
    for (std::size_t i = 0; i < n; ++i) m |= std::uint64_t{counts[i] != 0} << i;
    return m;
  }

  // The channels are a power of two, 2^shift(), mask() = channels - 1.
  bool pow2() const { return pow2_; }
  std::uint32_t shift() const { return shift_; }
  std::uint64_t mask() const { return mask_; }

  // Adds `n` consecutive lines from line number `line` to their channels'
  // counts (`every`: lines that fell on every channel alike).
  void count_lines(std::uint64_t line, std::uint64_t n, std::uint32_t* per_channel, std::uint64_t& every) const {
    // Whole aligned groups of `channels` lines (a 4 KiB block on 16 channels
    // of 128 B lines, the common run) touch every channel alike.
    if (pow2_ && ((line | n) & mask_) == 0) {
      every += n >> shift_;
      return;
    }
    count_lines_any(line, n, per_channel, every);
  }
  // (Inline: the L2's tag walk calls it for every run that is not whole groups.)
  void count_lines_any(std::uint64_t line, std::uint64_t n, std::uint32_t* per_channel, std::uint64_t& every) const;

  // count_lines() for a walk's runs of any shape, inline, with part of a
  // group counted in aligned pieces (below) rather than line by line.
  [[gnu::always_inline]] void count_lines_pieces(std::uint64_t line, std::uint64_t n, std::uint32_t* per_channel,
                                                 std::uint64_t& every) const;

 private:
  std::size_t channels_;
  Divisor div_;
  bool pow2_ = true;
  std::uint32_t shift_ = 0;   // log2(channels) when pow2_
  std::uint64_t mask_ = 0;    // channels - 1 when pow2_
};

inline void ChannelCounter::count_lines_any(std::uint64_t line, std::uint64_t n, std::uint32_t* per_channel,
                                            std::uint64_t& every) const {
  std::uint32_t* const pc = per_channel;
  if (pow2_) {
    // With c = 2^s channels, line c*q + j (j < c) goes to channel j ^ g(q),
    // g(q) = (q ^ q >> s ^ q >> 2s) mod c: an aligned group of c lines
    // touches every channel once, and part of a group touches distinct
    // channels, with one g for all of them.
    const std::uint32_t s = shift_;
    const std::uint64_t c = mask_ + 1;
    while (n > 0) {
      const std::uint64_t j0 = line & mask_;
      if (j0 == 0 && n >= c) {  // whole groups
        every += n / c;
        line += n / c * c;
        n %= c;
        continue;
      }
      const std::uint64_t q = line >> s;
      const std::uint64_t g = (q ^ (q >> s) ^ (q >> 2 * s)) & mask_;
      const std::uint64_t end = std::min(c, j0 + n);
      for (std::uint64_t j = j0; j < end; ++j) ++pc[j ^ g];
      n -= end - j0;
      line += end - j0;
    }
    return;
  }
  for (; n > 0; --n) ++pc[channel_of(line++)];
}

// With c = 2^s channels, line j of a group goes to channel j ^ g (one g for
// the group): an aligned piece of 2^k lines lands on an aligned 2^k of
// channels, counted four at a time (SSE2). A gathered fp8 token row's
// part-block (8, 16 or 24 lines from a multiple of 8) is one piece of 8
// besides whole groups: two vector adds instead of eight increments.
inline void ChannelCounter::count_lines_pieces(std::uint64_t line, std::uint64_t n, std::uint32_t* per_channel,
                                               std::uint64_t& every) const {
  if (!pow2_) {
    count_lines_any(line, n, per_channel, every);
    return;
  }
  const std::uint32_t s = shift_;
  const std::uint64_t c = mask_ + 1;
  while (n > 0) {
    const std::uint64_t j0 = line & mask_;
    if (j0 == 0 && n >= c) {  // whole groups
      every += n >> s;
      line += n & ~mask_;
      n &= mask_;
      continue;
    }
    const std::uint64_t q = line >> s;
    const std::uint64_t g = (q ^ (q >> s) ^ (q >> 2 * s)) & mask_;
    const std::uint64_t end = std::min(c, j0 + n);
    for (std::uint64_t j = j0; j < end;) {
      // The largest aligned power of two of lines from j that ends by `end`.
      const auto k = std::min(static_cast<std::uint32_t>(std::countr_zero(j | c)),
                              static_cast<std::uint32_t>(std::bit_width(end - j)) - 1);
      const std::uint64_t len = std::uint64_t{1} << k;
      std::uint32_t* const p = per_channel + ((j ^ g) & ~(len - 1));
#if defined(__SSE2__)
      if (len >= 4) {
        const __m128i one = _mm_set1_epi32(1);
        for (std::uint64_t i = 0; i < len; i += 4) {
          auto* const v = reinterpret_cast<__m128i*>(p + i);
          _mm_storeu_si128(v, _mm_add_epi32(_mm_loadu_si128(v), one));
        }
      } else {
        for (std::uint64_t i = 0; i < len; ++i) ++p[i];
      }
#else
      for (std::uint64_t i = 0; i < len; ++i) ++p[i];
#endif
      j += len;
    }
    n -= end - j0;
    line += end - j0;
  }
}

}  // namespace tdmsim::sim
