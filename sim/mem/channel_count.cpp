#include "sim/mem/channel_count.h"

#include <algorithm>
#include <bit>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if TDMSIM_X86_VARIANTS
#include <immintrin.h>
#endif

namespace tdmsim::sim {

ChannelCounter::ChannelCounter(std::size_t channels, std::uint64_t line_bytes, Paths paths)
    : paths_(paths), channels_(channels), div_(channels) {
  pow2_ = std::has_single_bit(channels);
  shift_ = static_cast<std::uint32_t>(std::countr_zero(channels));
  mask_ = std::uint64_t{channels} - 1;
  line_ = line_bytes;
  line_shift_ = static_cast<std::uint32_t>(std::countr_zero(line_bytes));
  // Versions the host cannot run fall back to the widest it can.
  while (!host_runs(paths_.simd)) paths_.simd = static_cast<Simd>(static_cast<int>(paths_.simd) - 1);
  paths_.bmi2 = paths_.bmi2 && host_has_bmi2();
}

namespace {
#if defined(__SSE2__)
// Row c: a 1 in 16-bit lane c. Adding row c to a pair of registers counts a
// line on channel c without a store (a counter in memory would make lines
// on the same channel wait for each other's store).
struct OneHot16 {
  alignas(16) std::uint16_t lane[16][16] = {};
  constexpr OneHot16() {
    for (int c = 0; c < 16; ++c) lane[c][c] = 1;
  }
};
constexpr OneHot16 kOneHot16{};
#endif

#if TDMSIM_X86_VARIANTS
// Byte shuffles XOR-ing a 16-bit lane's index with b (b < 8) inside each
// 128-bit half: byte k takes byte 2 * ((k / 2) ^ b) + k % 2.
struct XorShuffles {
  alignas(32) std::uint8_t mask[8][32] = {};
  constexpr XorShuffles() {
    for (int b = 0; b < 8; ++b) {
      for (int k = 0; k < 32; ++k) mask[b][k] = static_cast<std::uint8_t>(2 * ((k % 16 / 2) ^ b) + k % 2);
    }
  }
};
constexpr XorShuffles kXorShuffles{};

// count_iterations()'s table rows on 16 channels where the host has AVX2:
// row j += counts[(o + j) >= 16][ch ^ ((o + j) mod 16)], one register a row
// (the SSE2 version takes two registers and up to four shuffles a row). The
// same 16-bit sums.
__attribute__((target("avx2"))) void add_rows_avx2(const std::uint16_t (*counts)[64], std::uint64_t o,
                                                   std::uint32_t g, std::uint16_t* table) {
  __m256i c[2][2];  // [group][halves swapped]
  for (int part = 0; part < 2; ++part) {
    c[part][0] = _mm256_load_si256(reinterpret_cast<const __m256i*>(counts[part]));
    c[part][1] = _mm256_permute4x64_epi64(c[part][0], 0x4E);
  }
  for (std::uint32_t j = 0; j < g; ++j) {
    const std::uint64_t p = o + j;
    const std::uint64_t b = p & 15;
    const __m256i src = c[p >= 16 ? 1 : 0][(b >> 3) & 1];
    const __m256i v = _mm256_shuffle_epi8(
        src, _mm256_load_si256(reinterpret_cast<const __m256i*>(kXorShuffles.mask[b & 7])));
    auto* row = reinterpret_cast<__m256i*>(table + j * 16);
    _mm256_storeu_si256(row, _mm256_add_epi16(_mm256_loadu_si256(row), v));
  }
}

// terms_rows() on 16 channels where the host has AVX2: row j += the counts
// of term (p0 + j) / 16 with lane x taking lane x ^ ((p0 + j) mod 16) (the
// halves swapped for bit 3, a byte shuffle for the rest). The same 16-bit sums.
__attribute__((target("avx2"))) void add_term_rows_avx2(const std::uint16_t* counts, std::uint64_t p0,
                                                        std::uint32_t n, std::uint16_t* table) {
  for (std::uint32_t j = 0; j < n; ++j) {
    const std::uint64_t p = p0 + j;
    const std::uint64_t b = p & 15;
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(counts + (p >> 4) * 16));
    if ((b & 8) != 0) v = _mm256_permute4x64_epi64(v, 0x4E);
    v = _mm256_shuffle_epi8(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kXorShuffles.mask[b & 7])));
    auto* row = reinterpret_cast<__m256i*>(table + j * 16);
    _mm256_storeu_si256(row, _mm256_add_epi16(_mm256_loadu_si256(row), v));
  }
}
#endif
}  // namespace

void ChannelCounter::count_rows(const MemAccess& a, std::uint32_t* count, std::uint64_t& every_out) const {
  // Everything the count loops read is copied to locals first: the counts are
  // 32-bit stores, which could alias this object's and the access's fields
  // and would force them to be reloaded for every line.
  const std::uint64_t addr = a.addr, stride = a.row_stride, line = line_;
  const std::uint32_t rows = a.rows, row_bytes = a.row_bytes;
  const std::uint64_t* const gather = a.gather;
  std::uint64_t every = 0;  // added to every_out at the end
  // The common case: a slice of one K step of each tile row, one line per
  // row (two where a row straddles a line boundary).
  if (pow2_ && row_bytes > 0 && row_bytes <= line) {
    const std::uint32_t ls = line_shift_, s = shift_;
    const std::uint64_t mask = mask_;
    const auto channel = [s, mask](std::uint64_t l) {
      return (l ^ (l >> s) ^ (l >> 2 * s) ^ (l >> 3 * s)) & mask;
    };
    const auto row = [&](std::uint32_t r) { return gather != nullptr ? addr + gather[r] : addr + r * stride; };
#if defined(__SSE2__)
    if (simd16(Simd::sse2) && rows < 0x8000) {  // 16-bit counts in two registers
      __m128i lo = _mm_setzero_si128(), hi = _mm_setzero_si128();
      const auto add = [&](std::uint64_t l) {
        const std::uint16_t* one = kOneHot16.lane[channel(l)];
        lo = _mm_add_epi16(lo, _mm_load_si128(reinterpret_cast<const __m128i*>(one)));
        hi = _mm_add_epi16(hi, _mm_load_si128(reinterpret_cast<const __m128i*>(one + 8)));
      };
      for (std::uint32_t r = 0; r < rows; ++r) {
        const std::uint64_t begin = row(r);
        const std::uint64_t first = begin >> ls, last = (begin + row_bytes - 1) >> ls;
        add(first);
        if (last != first) add(last);
      }
      alignas(16) std::uint16_t c16[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(c16), lo);
      _mm_store_si128(reinterpret_cast<__m128i*>(c16 + 8), hi);
      for (std::size_t ch = 0; ch < 16; ++ch) count[ch] += c16[ch];
    } else
#endif
    {
      for (std::uint32_t r = 0; r < rows; ++r) {
        const std::uint64_t begin = row(r);
        const std::uint64_t first = begin >> ls, last = (begin + row_bytes - 1) >> ls;
        ++count[channel(first)];
        if (last != first) ++count[channel(last)];
      }
    }
  } else {
    for (std::uint32_t r = 0; r < rows; ++r) {
      const std::uint64_t begin = a.row(r);
      const std::uint64_t first = begin >> line_shift_;
      const std::uint64_t last = (begin + row_bytes + line - 1) >> line_shift_;
      count_lines(first, last - first, count, every);
    }
  }
  every_out += every;
}

void ChannelCounter::count_iterations(const MemAccess& a, std::int64_t iter_stride, std::uint32_t g,
                               std::uint16_t* table) const {
  const std::uint64_t line = line_;
  const std::uint32_t ls = line_shift_;
  const std::size_t channels = channels_;
  const auto stride = static_cast<std::uint64_t>(iter_stride);  // modular: may step back
  // Whole lines per iteration, each iteration the next ones (k > 0), or not.
  const bool along = a.row_bytes > 0 && a.row_bytes % line == 0 && stride == a.row_bytes;
  const std::uint64_t k = a.row_bytes / line;
  // One line per row and iteration over at most `channels` iterations (a K
  // step of one line, the common case): a row whose first line is l0 puts
  // iteration j's line on channel ((o + j) mod c) ^ t, o = l0 mod c, with t
  // the hash term of l0's aligned group of lines while o + j < c and of the
  // next group after. Rows are then only counted by offset o and term
  // (two counts a row instead of g), and the table is built from those
  // counts: the same counts as line by line when the rows are many.
  constexpr std::size_t kOffsets = 4;  // distinct offsets kept (rows with others: line by line)
  const bool by_offset = pow2_ && along && k == 1 && g <= channels &&
                         a.rows >= 2 * channels && channels <= 64;
  std::uint64_t offset[kOffsets];
  std::size_t offsets = 0;
  // [offset][group: first, next][term]; 16-bit like the table (sums mod 2^16 either way).
  alignas(32) std::uint16_t per_term[kOffsets][2][64];
  for (std::uint32_t r = 0; r < a.rows; ++r) {
    std::uint64_t begin = a.row(r);
    std::uint16_t* row = table;
    if (by_offset && (begin & (line - 1)) == 0) {
      const std::uint32_t s = shift_;
      const std::uint64_t mask = mask_;
      const std::uint64_t l = begin >> ls;
      const std::uint64_t o = l & mask;
      std::size_t e = 0;
      while (e < offsets && offset[e] != o) ++e;
      if (e == offsets && offsets < kOffsets) {
        offset[offsets++] = o;
        std::fill_n(&per_term[e][0][0], 2 * 64, std::uint16_t{0});
      }
      if (e < offsets) {
        const std::uint64_t q = l >> s;
        ++per_term[e][0][(q ^ (q >> s) ^ (q >> 2 * s)) & mask];
        if (o + g > channels) {  // the row's lines reach the next group
          const std::uint64_t q1 = q + 1;
          ++per_term[e][1][(q1 ^ (q1 >> s) ^ (q1 >> 2 * s)) & mask];
        }
        continue;
      }
    }
    if (pow2_ && along && (begin & (line - 1)) == 0) {
      // The common case: each iteration reads the next k whole lines of the
      // row, so the row's lines over the group are consecutive; walked a
      // channel group (one hash term) at a time.
      const std::uint32_t s = shift_;
      const std::uint64_t mask = mask_;
      std::uint64_t l = begin >> ls;
      const std::uint64_t end = l + std::uint64_t{g} * k;
      std::uint16_t* cell = row;
      std::uint64_t left = k;  // lines of the current iteration still to count
      while (l < end) {
        const std::uint64_t q = l >> s;
        const std::uint64_t term = (q ^ (q >> s) ^ (q >> 2 * s)) & mask;
        const std::uint64_t group_end = std::min(end, (q + 1) << s);
        if (k == 1) {  // one line an iteration (a K step of one line per row)
          for (; l < group_end; ++l, cell += channels) ++cell[(l & mask) ^ term];
          continue;
        }
        for (; l < group_end; ++l) {
          ++cell[(l & mask) ^ term];
          if (--left == 0) {
            left = k;
            cell += channels;
          }
        }
      }
    } else if (pow2_) {
      const std::uint32_t s = shift_;
      const std::uint64_t mask = mask_;
      std::uint64_t q_at = ~0ull, term = 0;  // the hash term of the group of lines q_at
      for (std::uint32_t j = 0; j < g; ++j, begin += stride, row += channels) {
        // Lines [begin / line, ceil((begin + row_bytes) / line)), as count_for_reserve.
        const std::uint64_t first = begin >> ls, end = (begin + a.row_bytes + line - 1) >> ls;
        for (std::uint64_t l = first; l < end; ++l) {
          const std::uint64_t q = l >> s;
          if (q != q_at) {
            q_at = q;
            term = (q ^ (q >> s) ^ (q >> 2 * s)) & mask;
          }
          ++row[(l & mask) ^ term];
        }
      }
    } else {
      for (std::uint32_t j = 0; j < g; ++j, begin += stride, row += channels) {
        const std::uint64_t first = begin >> ls, end = (begin + a.row_bytes + line - 1) >> ls;
        for (std::uint64_t l = first; l < end; ++l) ++row[channel_of(l)];
      }
    }
  }
  for (std::size_t e = 0; e < offsets; ++e) offset_rows(per_term[e], offset[e], g, table);
}

void ChannelCounter::offset_rows(const std::uint16_t (*per_term)[64], std::uint64_t o, std::uint32_t g,
                                 std::uint16_t* table) const {
  const std::size_t channels = channels_;
#if TDMSIM_X86_VARIANTS
  if (simd16(Simd::avx2)) {
    add_rows_avx2(per_term, o, g, table);
    return;
  }
#endif
#if defined(__SSE2__)
  if (simd16(Simd::sse2)) {
    // Row j gets the counts permuted by XOR with b = (o + j) mod 16: bit 3
    // swaps the two registers, bit 2 their 64-bit halves, bit 1 their
    // 32-bit pairs, bit 0 their 16-bit pairs.
    const auto* h = reinterpret_cast<const __m128i*>(&per_term[0][0]);
    for (std::uint32_t j = 0; j < g; ++j) {
      const std::uint64_t p = o + j;
      const std::size_t part = p >= channels ? 8 : 0;  // 64 counts = 8 registers a group
      const std::uint64_t b = p & mask_;
      __m128i lo = _mm_load_si128(h + part), hi = _mm_load_si128(h + part + 1);
      if ((b & 8) != 0) std::swap(lo, hi);
      if ((b & 4) != 0) {
        lo = _mm_shuffle_epi32(lo, 0x4E);
        hi = _mm_shuffle_epi32(hi, 0x4E);
      }
      if ((b & 2) != 0) {
        lo = _mm_shuffle_epi32(lo, 0xB1);
        hi = _mm_shuffle_epi32(hi, 0xB1);
      }
      if ((b & 1) != 0) {
        lo = _mm_shufflehi_epi16(_mm_shufflelo_epi16(lo, 0xB1), 0xB1);
        hi = _mm_shufflehi_epi16(_mm_shufflelo_epi16(hi, 0xB1), 0xB1);
      }
      auto* row = reinterpret_cast<__m128i*>(table + j * channels);
      _mm_storeu_si128(row, _mm_add_epi16(_mm_loadu_si128(row), lo));
      _mm_storeu_si128(row + 1, _mm_add_epi16(_mm_loadu_si128(row + 1), hi));
    }
    return;
  }
#endif
  for (std::uint32_t j = 0; j < g; ++j) {
    const std::uint64_t p = o + j;
    const std::uint16_t* counts = per_term[p >= channels ? 1 : 0];
    const std::size_t base = p & mask_;
    std::uint16_t* row = table + j * channels;
    for (std::size_t t = 0; t < channels; ++t) {
      row[base ^ t] = static_cast<std::uint16_t>(row[base ^ t] + counts[t]);
    }
  }
}

void ChannelCounter::reset_terms(LineTerms& t, std::uint32_t g) const {
  t.g = g;
  // (o + j) / c for o < c and j < g: at most (c - 1 + g - 1) / c + 1 terms.
  const std::uint64_t c = channels_;
  t.terms = g == 0 ? 0 : static_cast<std::uint32_t>((c - 1 + g - 1) / c + 1);
  t.offsets = 0;
}

bool ChannelCounter::add_terms_base(const MemAccess& a, std::int64_t iter_stride, LineTerms& t) const {
  return add_terms_rows(a, iter_stride, t);
}

#if TDMSIM_X86_VARIANTS
__attribute__((target("bmi2"))) bool ChannelCounter::add_terms_bmi2(const MemAccess& a, std::int64_t iter_stride,
                                                             LineTerms& t) const {
  return add_terms_rows(a, iter_stride, t);
}
#endif

[[gnu::always_inline]] inline bool ChannelCounter::add_terms_rows(const MemAccess& a, std::int64_t iter_stride,
                                                          LineTerms& t) const {
  const std::uint64_t line = line_;
  const std::size_t channels = channels_;
  // As count_iterations' offset path: whole single lines moving on by one
  // line an iteration, and rows enough to be worth it.
  if (!pow2_ || channels > 64 || t.g == 0 || a.row_bytes != line ||
      iter_stride != static_cast<std::int64_t>(line) || a.rows < 2 * channels) {
    return false;
  }
  const std::uint32_t ls = line_shift_, s = shift_;
  const std::uint64_t mask = mask_;
  // The rows' offsets, every row line-aligned, and room for them: row r's
  // offset index in e_of[r & period_mask]. Strided rows (row r's first line
  // l0 + r * sl) repeat their offsets every c / gcd(sl mod c, c) rows, a
  // power of two: only those are looked at. Gathered rows, each.
  std::uint64_t offset[LineTerms::kOffsets];
  std::uint32_t offsets = t.offsets;
  std::copy_n(t.offset, offsets, offset);
  std::uint8_t e_of[64];
  std::uint32_t period_mask = 0;
  const auto index_of = [&](std::uint64_t o) -> int {
    std::uint32_t e = 0;
    while (e < offsets && offset[e] != o) ++e;
    if (e == offsets) {
      if (offsets == LineTerms::kOffsets) return -1;
      offset[offsets++] = o;
    }
    return static_cast<int>(e);
  };
  if (a.gather == nullptr) {
    if (((a.addr | a.row_stride) & (line - 1)) != 0) return false;
    const std::uint64_t l0 = a.addr >> ls, sl = (a.row_stride >> ls) & mask;
    const std::uint64_t period = sl == 0 ? 1 : (mask + 1) >> std::countr_zero(sl);
    period_mask = static_cast<std::uint32_t>(period - 1);
    for (std::uint64_t r = 0; r < period && r < a.rows; ++r) {
      const int e = index_of((l0 + r * sl) & mask);
      if (e < 0) return false;
      e_of[r] = static_cast<std::uint8_t>(e);
    }
  } else {
    for (std::uint32_t r = 0; r < a.rows; ++r) {
      const std::uint64_t begin = a.row(r);
      if ((begin & (line - 1)) != 0 || index_of((begin >> ls) & mask) < 0) return false;
    }
  }
  const std::size_t per_offset = std::size_t{t.terms} * channels;
  if (t.counts.size() < LineTerms::kOffsets * per_offset) t.counts.resize(LineTerms::kOffsets * per_offset);
  std::fill_n(t.counts.begin() + static_cast<std::ptrdiff_t>(t.offsets * per_offset),
              (offsets - t.offsets) * per_offset, std::uint16_t{0});
  std::copy_n(offset, offsets, t.offset);
  t.offsets = offsets;
  // Then each row once per term its lines reach: (o + j) / c for j < g.
  const std::uint64_t span = t.g - 1;
  std::uint16_t* const all = t.counts.data();
  // Row of first line l, counted at `counts` (its offset's).
  const auto add_row = [&](std::uint64_t l, std::uint16_t* counts) __attribute__((always_inline)) {
    const std::uint64_t q = l >> s, terms = ((l & mask) + span) >> s;
    for (std::uint64_t k = 0; k <= terms; ++k, counts += channels) {
      const std::uint64_t qk = q + k;
      ++counts[(qk ^ (qk >> s) ^ (qk >> 2 * s)) & mask];
    }
  };
  // (The two kinds of rows in loops of their own, strided rows' lines by
  // addition: this runs for every row of every K group's weight tile.)
  if (a.gather == nullptr) {
    const std::uint64_t step = a.row_stride >> ls;  // (line-aligned, above)
    std::uint64_t l = a.addr >> ls;
    for (std::uint32_t r = 0; r < a.rows; ++r, l += step) add_row(l, all + e_of[r & period_mask] * per_offset);
  } else {
    for (std::uint32_t r = 0; r < a.rows; ++r) {
      const std::uint64_t l = a.row(r) >> ls;
      const std::uint64_t o = l & mask;
      std::uint32_t e = 0;
      while (offset[e] != o) ++e;
      add_row(l, all + e * per_offset);
    }
  }
  return true;
}

void ChannelCounter::terms_rows(const LineTerms& t, std::uint32_t j0, std::uint32_t n, std::uint16_t* table) const {
  const std::size_t channels = channels_;
  const std::size_t per_offset = std::size_t{t.terms} * channels;
  for (std::uint32_t e = 0; e < t.offsets; ++e) {
    const std::uint16_t* counts = &t.counts[e * per_offset];
    const std::uint64_t p0 = t.offset[e] + j0;
#if TDMSIM_X86_VARIANTS
    if (simd16(Simd::avx2)) {
      add_term_rows_avx2(counts, p0, n, table);
      continue;
    }
#endif
    for (std::uint32_t j = 0; j < n; ++j) {
      const std::uint64_t p = p0 + j;
      const std::uint16_t* term = counts + (p >> shift_) * channels;
      const std::size_t b = p & mask_;
      std::uint16_t* row = table + j * channels;
      for (std::size_t x = 0; x < channels; ++x) row[x] = static_cast<std::uint16_t>(row[x] + term[x ^ b]);
    }
  }
}

void ChannelCounter::count_rows_reference(const MemAccess& a, std::uint32_t* count) const {
  for (std::uint32_t r = 0; r < a.rows; ++r) {
    const std::uint64_t begin = a.row(r);
    for (std::uint64_t l = begin / line_; l < (begin + a.row_bytes + line_ - 1) / line_; ++l) ++count[channel_of(l)];
  }
}

void ChannelCounter::count_iterations_reference(const MemAccess& a, std::int64_t iter_stride, std::uint32_t g,
                                                std::uint16_t* table) const {
  for (std::uint32_t j = 0; j < g; ++j) {
    for (std::uint32_t r = 0; r < a.rows; ++r) {
      const std::uint64_t begin = a.row(r) + static_cast<std::uint64_t>(iter_stride * j);
      for (std::uint64_t l = begin / line_; l < (begin + a.row_bytes + line_ - 1) / line_; ++l) {
        ++table[j * channels_ + channel_of(l)];
      }
    }
  }
}

}  // namespace tdmsim::sim
