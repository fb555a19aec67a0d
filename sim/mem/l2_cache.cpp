#include "sim/mem/l2_cache.h"

#include <algorithm>
#include <bit>
#include <vector>

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif


namespace tdmsim::sim {

L2Cache::L2Cache(sc_core::sc_module_name name, const L2Spec& spec, units::Frequency clock,
                 Tick miss_latency, Tick near_miss_latency, StatRegistry& stats, const SimClock& time)
    : sc_module(name), target("target"), initiator("initiator"), time_(time), spec_(spec),
      tags_(spec.size_per_die.bytes, static_cast<std::uint32_t>(spec.line.bytes), spec.ways,
            kBlockLines),
      channel_bw_{static_cast<std::uint64_t>(spec.bytes_per_clock_per_channel) * clock.hz},
      mshr_hold_per_line_((near_miss_latency > 0 ? near_miss_latency : miss_latency) / spec.mshrs_per_channel),
      far_hold_per_line_(near_miss_latency > 0 ? miss_latency / spec.mshrs_per_channel - mshr_hold_per_line_ : 0),
      near_miss_latency_(near_miss_latency),
      channels_(spec.channels_per_die), channel_(spec.channels_per_die), mshr_(spec.channels_per_die),
      lines_per_channel_(spec.channels_per_die), misses_per_channel_(spec.channels_per_die),
      atomic_bytes_per_channel_(spec.channels_per_die) {
  atomic_unit_.resize(spec.channels_per_die);
  atomic_bw_ = units::Bandwidth{std::uint64_t{spec.atomic_bytes_per_clock_per_channel} * clock.hz};
  line_shift_ = static_cast<std::uint32_t>(std::countr_zero(spec.line.bytes));
  reserve_count_.assign(spec.channels_per_die, 0u);
  line_time_ = transfer_ticks(spec.line.bytes, channel_bw_);
  hit_latency_ = ticks(spec.hit_latency);
  channels_pow2_ = std::has_single_bit(spec.channels_per_die);
  channel_shift_ = static_cast<std::uint32_t>(std::countr_zero(spec.channels_per_die));
  channel_mask_ = std::uint64_t{spec.channels_per_die} - 1;
#if defined(__x86_64__) && defined(__GNUC__)
  avx2_rows_ = __builtin_cpu_supports("avx2") && spec.channels_per_die == 16;
  bmi2_ = __builtin_cpu_supports("bmi2");
  avx2_ = __builtin_cpu_supports("avx2") && spec.channels_per_die % 4 == 0 &&
          line_time_ <= 0xFFFFFFFFull;
#endif
  target.register_b_transport(this, &L2Cache::b_transport);
  const std::string me = this->name();
  stats.add(me, "hits", &hits_, "lines", "L2 line hits");
  stats.add(me, "misses", &misses_count_, "lines", "L2 line misses");
  stats.add(me, "writebacks", &writebacks_, "lines", "dirty lines written back");
  stats.add(me, "read_bytes", &read_bytes_, "bytes", "bytes read by requesters");
  stats.add(me, "write_bytes", &write_bytes_, "bytes", "bytes written by requesters");
  stats.add(me, "atomic_bytes", &atomic_bytes_, "bytes", "bytes written by atomic read-modify-writes");
  stats.share(me, "hit_rate", &hits_, &misses_count_, "L2 hits / line accesses");
}

void L2Cache::count_lines_any(std::uint64_t line, std::uint64_t n, std::vector<std::uint32_t>& per_channel,
                          std::uint64_t& every) const {
  std::uint32_t* const pc = per_channel.data();  // not reloaded after every count
  if (channels_pow2_) {
    // With c = 2^s channels, line c*q + j (j < c) goes to channel j ^ g(q),
    // g(q) = (q ^ q >> s ^ q >> 2s) mod c: an aligned group of c lines
    // touches every channel once, and part of a group touches distinct
    // channels, with one g for all of them.
    const std::uint32_t s = channel_shift_;
    const std::uint64_t c = channel_mask_ + 1;
    while (n > 0) {
      const std::uint64_t j0 = line & channel_mask_;
      if (j0 == 0 && n >= c) {  // whole groups
        every += n / c;
        line += n / c * c;
        n %= c;
        continue;
      }
      const std::uint64_t q = line >> s;
      const std::uint64_t g = (q ^ (q >> s) ^ (q >> 2 * s)) & channel_mask_;
      const std::uint64_t end = std::min(c, j0 + n);
      for (std::uint64_t j = j0; j < end; ++j) ++pc[j ^ g];
      n -= end - j0;
      line += end - j0;
    }
    return;
  }
  for (; n > 0; --n) ++pc[channel_of(line++)];
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

#if defined(__x86_64__) && defined(__GNUC__)
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

void L2Cache::count_for_reserve(const MemAccess& a) {
  // Everything the count loops read is copied to locals first: the counts are
  // 32-bit stores, which could alias this object's and the access's fields
  // and would force them to be reloaded for every line.
  const std::uint64_t addr = a.addr, stride = a.row_stride, line = spec_.line.bytes;
  const std::uint32_t rows = a.rows, row_bytes = a.row_bytes;
  const std::uint64_t* const gather = a.gather;
  std::uint32_t* const count = reserve_count_.data();
  const std::size_t channels = channel_.size();
  std::uint64_t every = 0;  // added to reserve_every_ at the end
  // The common case: a slice of one K step of each tile row, one line per
  // row (two where a row straddles a line boundary).
  if (channels_pow2_ && row_bytes > 0 && row_bytes <= line) {
    const std::uint32_t ls = line_shift_, s = channel_shift_;
    const std::uint64_t mask = channel_mask_;
    const auto channel = [s, mask](std::uint64_t l) {
      return (l ^ (l >> s) ^ (l >> 2 * s) ^ (l >> 3 * s)) & mask;
    };
    const auto row = [&](std::uint32_t r) { return gather != nullptr ? addr + gather[r] : addr + r * stride; };
#if defined(__SSE2__)
    if (channels == 16 && rows < 0x8000) {  // 16-bit counts in two registers
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
      count_lines(first, last - first, reserve_count_, every);
    }
  }
  reserve_every_ += every;
}

Tick L2Cache::reserve_counted(Tick arrive) {
  // A channel serves its lines one after another from max(arrive, free):
  // one reservation of all its lines ends where line-by-line ones would.
  Tick served = arrive;
  const Tick line_time = line_time_;
  BusyUntil* const ch_busy = channel_.data();
  std::uint32_t* const count = reserve_count_.data();
  const std::uint64_t every = reserve_every_;
  reserve_every_ = 0;
  for (std::size_t ch = 0; ch < channel_.size(); ++ch) {
    const std::uint64_t n = count[ch] + every;
    if (n == 0) continue;
    count[ch] = 0;
    served = std::max(served, ch_busy[ch].reserve(arrive, line_time * n));
  }
  return served + hit_latency_;
}

void L2Cache::count_iterations(const MemAccess& a, std::int64_t iter_stride, std::uint32_t g,
                               std::uint16_t* table) const {
  const std::uint64_t line = spec_.line.bytes;
  const std::uint32_t ls = line_shift_;
  const std::size_t channels = channel_.size();
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
  const bool by_offset = channels_pow2_ && along && k == 1 && g <= channels &&
                         a.rows >= 2 * channels && channels <= 64;
  std::uint64_t offset[kOffsets];
  std::size_t offsets = 0;
  // [offset][group: first, next][term]; 16-bit like the table (sums mod 2^16 either way).
  alignas(32) std::uint16_t per_term[kOffsets][2][64];
  for (std::uint32_t r = 0; r < a.rows; ++r) {
    std::uint64_t begin = a.row(r);
    std::uint16_t* row = table;
    if (by_offset && (begin & (line - 1)) == 0) {
      const std::uint32_t s = channel_shift_;
      const std::uint64_t mask = channel_mask_;
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
    if (channels_pow2_ && along && (begin & (line - 1)) == 0) {
      // The common case: each iteration reads the next k whole lines of the
      // row, so the row's lines over the group are consecutive; walked a
      // channel group (one hash term) at a time.
      const std::uint32_t s = channel_shift_;
      const std::uint64_t mask = channel_mask_;
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
    } else if (channels_pow2_) {
      const std::uint32_t s = channel_shift_;
      const std::uint64_t mask = channel_mask_;
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
  for (std::size_t e = 0; e < offsets; ++e) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx2_rows_) {
      add_rows_avx2(per_term[e], offset[e], g, table);
      continue;
    }
#endif
#if defined(__SSE2__)
    if (channels == 16) {
      // Row j gets the counts permuted by XOR with b = (o + j) mod 16: bit 3
      // swaps the two registers, bit 2 their 64-bit halves, bit 1 their
      // 32-bit pairs, bit 0 their 16-bit pairs.
      const auto* h = reinterpret_cast<const __m128i*>(&per_term[e][0][0]);
      for (std::uint32_t j = 0; j < g; ++j) {
        const std::uint64_t p = offset[e] + j;
        const std::size_t part = p >= channels ? 8 : 0;  // 64 counts = 8 registers a group
        const std::uint64_t b = p & channel_mask_;
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
      continue;
    }
#endif
    for (std::uint32_t j = 0; j < g; ++j) {
      const std::uint64_t p = offset[e] + j;
      const std::uint16_t* counts = per_term[e][p >= channels ? 1 : 0];
      const std::size_t base = p & channel_mask_;
      std::uint16_t* row = table + j * channels;
      for (std::size_t t = 0; t < channels; ++t) {
        row[base ^ t] = static_cast<std::uint16_t>(row[base ^ t] + counts[t]);
      }
    }
  }
}

void L2Cache::reset_terms(LineTerms& t, std::uint32_t g) const {
  t.g = g;
  // (o + j) / c for o < c and j < g: at most (c - 1 + g - 1) / c + 1 terms.
  const std::uint64_t c = channel_.size();
  t.terms = g == 0 ? 0 : static_cast<std::uint32_t>((c - 1 + g - 1) / c + 1);
  t.offsets = 0;
}

bool L2Cache::add_terms_base(const MemAccess& a, std::int64_t iter_stride, LineTerms& t) const {
  return add_terms_rows(a, iter_stride, t);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("bmi2"))) bool L2Cache::add_terms_bmi2(const MemAccess& a, std::int64_t iter_stride,
                                                             LineTerms& t) const {
  return add_terms_rows(a, iter_stride, t);
}
#endif

[[gnu::always_inline]] inline bool L2Cache::add_terms_rows(const MemAccess& a, std::int64_t iter_stride,
                                                          LineTerms& t) const {
  const std::uint64_t line = spec_.line.bytes;
  const std::size_t channels = channel_.size();
  // As count_iterations' offset path: whole single lines moving on by one
  // line an iteration, and rows enough to be worth it.
  if (!channels_pow2_ || channels > 64 || t.g == 0 || a.row_bytes != line ||
      iter_stride != static_cast<std::int64_t>(line) || a.rows < 2 * channels) {
    return false;
  }
  const std::uint32_t ls = line_shift_, s = channel_shift_;
  const std::uint64_t mask = channel_mask_;
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

void L2Cache::terms_rows(const LineTerms& t, std::uint32_t j0, std::uint32_t n, std::uint16_t* table) const {
  const std::size_t channels = channel_.size();
  const std::size_t per_offset = std::size_t{t.terms} * channels;
  for (std::uint32_t e = 0; e < t.offsets; ++e) {
    const std::uint16_t* counts = &t.counts[e * per_offset];
    const std::uint64_t p0 = t.offset[e] + j0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx2_rows_) {
      add_term_rows_avx2(counts, p0, n, table);
      continue;
    }
#endif
    for (std::uint32_t j = 0; j < n; ++j) {
      const std::uint64_t p = p0 + j;
      const std::uint16_t* term = counts + (p >> channel_shift_) * channels;
      const std::size_t b = p & channel_mask_;
      std::uint16_t* row = table + j * channels;
      for (std::size_t x = 0; x < channels; ++x) row[x] = static_cast<std::uint16_t>(row[x] + term[x ^ b]);
    }
  }
}

namespace {
#if defined(__x86_64__) && defined(__GNUC__)
// reserve_lines() four channels at a time where the host has AVX2 (checked
// at run time: the build targets baseline x86-64). The same integer
// arithmetic, so the same result: times are below 2^63 ps, so signed 64-bit
// compares order them, and line_time * n fits 32 x 32 -> 64 bits (n < 2^16,
// line_time < 2^32, checked by the caller).
// Four channels of a reservation arriving at `at`: each with lines is busy
// from max(at, its free time) for lines x line_time (`lt`); `served` keeps
// the latest end.
__attribute__((target("avx2"), always_inline)) inline void reserve_four(__m256i at, __m256i lt,
                                                                        const std::uint16_t* lines,
                                                                        BusyUntil* busy, __m256i& served) {
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

__attribute__((target("avx2"))) Tick reserve_lines_avx2(const std::uint16_t* lines, Tick arrive,
                                                         Tick line_time, BusyUntil* busy,
                                                         std::size_t channels) {
  static_assert(sizeof(BusyUntil) == sizeof(Tick));
  const __m256i at = _mm256_set1_epi64x(static_cast<long long>(arrive));
  const __m256i lt = _mm256_set1_epi64x(static_cast<long long>(line_time));
  __m256i served = at;
  for (std::size_t ch = 0; ch < channels; ch += 4) reserve_four(at, lt, lines + ch, busy + ch, served);
  return lane_max(served);
}


// b_transport()'s MSHR reservations for an access's misses, four channels at
// a time: channel ch with n = per_channel[ch] + every > 0 misses holds its
// MSHRs from max(arrive, free) for n x hold (as BusyUntil::reserve);
// returns the latest such start, or `arrive`. The scalar loop's integer
// arithmetic (times below 2^63; n and hold below 2^32, checked by the caller).
__attribute__((target("avx2"))) Tick reserve_mshrs_avx2(const std::uint32_t* per_channel, std::uint64_t every,
                                                         Tick hold, Tick arrive, BusyUntil* busy,
                                                         std::size_t channels) {
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
}  // namespace

#if defined(__x86_64__) && defined(__GNUC__)
// reserve_runs() with the same steps as reserve_lines_avx2: one call and one
// reduction of the latest end for all of an iteration's runs (for one run,
// the same steps as reserve_lines_avx2's).
__attribute__((target("avx2"))) Tick L2Cache::reserve_runs_avx2(const std::uint16_t* rows, std::size_t stride,
                                                               const Tick* offsets, std::size_t runs, Tick at0,
                                                               Tick line_time, BusyUntil* busy,
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
#endif

Tick L2Cache::reserve_runs_any(const std::uint16_t* rows, std::size_t stride, const Tick* offsets,
                               std::size_t runs, Tick at) {
  Tick back = at;
  for (std::size_t k = 0; k < runs; ++k) back = std::max(back, reserve_lines(rows + k * stride, at + offsets[k]));
  return back;
}

Tick L2Cache::reserve_lines(const std::uint16_t* lines, Tick arrive) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (avx2_) return reserve_lines_avx2(lines, arrive, line_time_, channel_.data(), channel_.size()) + hit_latency_;
#endif
  Tick served = arrive;
  const Tick line_time = line_time_;
  BusyUntil* const ch_busy = channel_.data();
  for (std::size_t ch = 0; ch < channel_.size(); ++ch) {
    // As ch_busy[ch].reserve(arrive, line_time * n) where n > 0, without a
    // branch (whether a channel has lines is unpredictable).
    const std::uint64_t n = lines[ch];
    const Tick free = ch_busy[ch].free_at;
    const Tick end = std::max(arrive, free) + line_time * n;
    const Tick has = Tick{0} - static_cast<Tick>(n != 0);  // all ones where n > 0
    ch_busy[ch].free_at = free + ((end - free) & has);
    served = std::max(served, end & has);
  }
  return served + hit_latency_;
}

void L2Cache::b_transport(int, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  auto* ext = p.get_extension<MemAccessExt>();
  const MemAccess& a = ext->access;
  const Tick now = time_.now();
  const Tick arrive = now + delay.value();
  const std::uint64_t line = spec_.line.bytes;
  const Tick hit_latency = ticks(spec_.hit_latency);
  (a.write ? write_bytes_ : read_bytes_) += a.bytes();
  if (a.atomic) atomic_bytes_ += a.bytes();
  // Tags first (a run of lines per block), then one bandwidth reservation per
  // channel. Loads whose channel time comes later (`channel_time_later`)
  // need only their misses per channel (for the MSHRs), not their lines.
  const bool channels_now = !(a.channel_time_later && !a.write);
  if (channels_now) std::fill(lines_per_channel_.begin(), lines_per_channel_.end(), 0u);
  std::fill(misses_per_channel_.begin(), misses_per_channel_.end(), 0u);
  if (a.atomic) std::fill(atomic_bytes_per_channel_.begin(), atomic_bytes_per_channel_.end(), 0u);
  std::uint64_t every_lines = 0, every_misses = 0;  // lines on each channel (whole groups)
  std::uint64_t missed_lines = 0, looked_up = 0;
  const bool fetch = !a.write || a.atomic;  // full-line plain writes allocate without a fetch
  misses_.clear();
  victims_.clear();
  // What the run loop reads is copied to locals first: its stores (tag
  // records, counts) could alias this object's fields, which would then be
  // reloaded for every block.
  CacheTags::Walker tags = tags_.walker();
  const std::uint32_t ls = line_shift_;
  const bool pow2 = channels_pow2_;
  const std::uint32_t cs = channel_shift_;
  const std::uint64_t cmask = channel_mask_;
  // count_lines() with its common case (whole aligned groups of `channels`
  // lines: a 4 KiB block on 16 channels) on the locals.
  const auto count_run = [&](std::uint64_t first, std::uint64_t n, std::vector<std::uint32_t>& per_channel,
                             std::uint64_t& every) __attribute__((always_inline)) {
    if (pow2 && ((first | n) & cmask) == 0) {
      every += n >> cs;
      return;
    }
    count_lines_any(first, n, per_channel, every);
  };
  // The misses' last run, kept out of misses_ while it grows (append_run's
  // merge, without reading the vector back for every block).
  std::uint64_t run_addr = 0, run_bytes = 0;
  const auto missed_run = [&](std::uint64_t at, std::uint64_t bytes) __attribute__((always_inline)) {
    if (run_bytes != 0 && run_addr + run_bytes == at) {
      run_bytes += bytes;
      return;
    }
    if (run_bytes != 0) misses_.push_back({run_addr, run_bytes});
    run_addr = at;
    run_bytes = bytes;
  };
  // The tag sets of the row kAhead rows on (its first kAhead blocks), and of
  // the block kAhead blocks on in this row, are asked for while this block is
  // looked up, so that their host cache misses overlap.
  constexpr std::uint32_t kAhead = 4;
  const std::uint64_t block = tags.block_bytes();
  const std::uint32_t block_lines = tags_.block_lines();
  const std::uint32_t whole = block_lines >= 32 ? ~0u : (1u << block_lines) - 1;  // a block's lines
  const auto block_shift = static_cast<std::uint32_t>(std::countr_zero(block));
  const auto prefetch_row = [&](std::uint32_t r) __attribute__((always_inline)) {
    const std::uint64_t begin = a.row(r);
    const std::uint64_t first = begin & ~(block - 1);
    const std::uint64_t end = std::min(begin + a.row_bytes, first + kAhead * block);
    for (std::uint64_t b = first; b < end; b += block) tags.prefetch(b);
  };
  // (A single row's first blocks would be asked for just before their
  // lookups: only rows further on gain.)
  if (a.rows > 1) {
    for (std::uint32_t r = 0; r < a.rows && r < kAhead; ++r) prefetch_row(r);
  }
  for (std::uint32_t r = 0; r < a.rows; ++r) {
    if (r + kAhead < a.rows) prefetch_row(r + kAhead);
    const std::uint64_t begin = a.row(r);
    const std::uint64_t end = begin + a.row_bytes;
    const std::uint64_t last = (end + line - 1) & ~(line - 1);
    if (a.atomic) {  // the atomic units work through the bytes each line holds
      for (std::uint64_t l = begin & ~(line - 1); l < end; l += line) {
        atomic_bytes_per_channel_[channel_of(l >> ls)] += std::min(end, l + line) - std::max(begin, l);
      }
    }
    for (std::uint64_t l = begin & ~(line - 1); l < last;) {
      if ((l & (block - 1)) == 0 && last - l >= block) {
        // Whole blocks (a tile row streamed in a K group): the same steps
        // as below for a run of a whole block. (Written out twice: the
        // accounting of misses and victims shared through a lambda cost 1.9%
        // more instructions on the DeepSeek-V3 64-token TDM fixture.)
        // (No look-ahead here: an L2's tag sets are few, 12.5 KiB on mi355x,
        // and stay in the host's caches; asking for them cost more than it saved.)
        const std::uint64_t stop = last & ~(block - 1);
        while (l < stop) {
          // First the blocks that miss whole and evict nothing dirty (a
          // stream's), in a tight loop of their own (miss_streak): a
          // streak counts as those blocks one by one below would (a
          // channel's lines or misses are a sum, and their runs merge).
          const CacheTags::Walker::Streak st = tags.miss_streak(l, (stop - l) >> block_shift, a.write);
          if (st.missed_whole > 0) {
            const std::uint64_t lines = st.missed_whole * block_lines, bytes = st.missed_whole * block;
            if (channels_now) count_run(l >> ls, lines, lines_per_channel_, every_lines);
            looked_up += lines;
            missed_lines += lines;
            if (fetch) {
              missed_run(l, bytes);
              count_run(l >> ls, lines, misses_per_channel_, every_misses);
            }
            l += bytes;
          }
          if (!st.stopped) break;
          // The block it stopped at, looked up there.
          const CacheTags::Run res = st.next;
          if (channels_now) count_run(l >> ls, block_lines, lines_per_channel_, every_lines);
          looked_up += block_lines;
          if (res.missed == whole) {
            missed_lines += block_lines;
            if (fetch) {
              missed_run(l, block);
              count_run(l >> ls, block_lines, misses_per_channel_, every_misses);
            }
          } else if (res.missed != 0) {
            missed_lines += CacheTags::count(res.missed);
            if (fetch) {
              for_each_bit_run(res.missed, [&](std::uint32_t first, std::uint32_t len) {
                missed_run(l + first * line, std::uint64_t{len} * line);
                count_run((l >> ls) + first, len, misses_per_channel_, every_misses);
              });
            }
          }
          if (res.dirty_victim()) {
            for_each_bit_run(res.victim_dirty, [&](std::uint32_t first, std::uint32_t len) {
              victims_.push_back({res.victim + first * line, std::uint64_t{len} * line});
            });
          }
          l += block;
        }
        continue;
      }
      const auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>(tags.lines_to_block_end(l), (last - l) >> ls));
      if (l + kAhead * block < last) tags.prefetch(l + kAhead * block);
      const CacheTags::Run res = tags.access(l, n, a.write);
      if (channels_now) count_run(l >> ls, n, lines_per_channel_, every_lines);
      const auto missed = CacheTags::count(res.missed);
      looked_up += n;  // (the stats are added after the loop: kept in registers)
      missed_lines += missed;
      if (fetch) {
        for_each_bit_run(res.missed, [&](std::uint32_t first, std::uint32_t len) {
          missed_run(l + first * line, std::uint64_t{len} * line);
          count_run((l >> ls) + first, len, misses_per_channel_, every_misses);
        });
      }
      if (res.dirty_victim()) {
        for_each_bit_run(res.victim_dirty, [&](std::uint32_t first, std::uint32_t len) {
          victims_.push_back({res.victim + first * line, std::uint64_t{len} * line});
        });
      }
      l += std::uint64_t{n} * line;
    }
  }
  if (run_bytes != 0) misses_.push_back({run_addr, run_bytes});
  hits_ += looked_up - missed_lines;
  misses_count_ += missed_lines;
  Tick served = arrive;
  Tick miss_ready = arrive;
  Tick wait = 0;
  bool mshrs_done = false;
#if defined(__x86_64__) && defined(__GNUC__)
  // Misses alone (loads whose channel time comes later): four channels at a
  // time where the host has AVX2 (a channel's misses and hold fit 32 bits:
  // no channel has more misses than the access).
  if (!channels_now && avx2_ && mshr_hold_per_line_ <= 0xFFFFFFFFull && missed_lines <= 0xFFFFFFFFull) {
    miss_ready = reserve_mshrs_avx2(misses_per_channel_.data(), every_misses, mshr_hold_per_line_, arrive,
                                    mshr_.data(), mshr_.size());
    mshrs_done = true;
  }
#endif
  for (std::size_t ch = 0; ch < channel_.size() && !mshrs_done; ++ch) {
    if (channels_now) {
      const std::uint64_t lines = lines_per_channel_[ch] + every_lines;
      if (lines == 0) continue;  // (nor misses)
      const Tick end = channel_[ch].reserve(arrive, line_time_ * lines);
      served = std::max(served, end);
      wait = std::max(wait, end - line_time_ * lines - arrive);
    }
    const std::uint64_t misses = misses_per_channel_[ch] + every_misses;
    if (misses > 0) {
      // Each miss holds an MSHR for the miss round trip: with `mshrs` of
      // them, a channel starts at most mshrs misses per round trip.
      const Tick hold = mshr_hold_per_line_ * misses;
      miss_ready = std::max(miss_ready, mshr_[ch].reserve(arrive, hold) - hold);
    }
  }
  Tick done = served + hit_latency;
  Tick unloaded = hit_latency + line_time_;
  Tick below = 0;  // the unloaded round trip below the L2 of this access's misses
  if (!a.write && missed_lines * line == a.bytes() && a.line_aligned(line)) {
    // Everything missed (a tile streamed for the first time): forward the
    // access whole rather than row by row.
    MemAccess m = a;
    done = std::max(done, port_.send(initiator, m, miss_ready, now) + hit_latency);
    unloaded = std::max(unloaded, hit_latency + port_.unloaded());
    below = std::max(below, port_.unloaded());
    wait = std::max(wait, miss_ready - arrive + port_.wait());
    misses_.clear();
  }
  // Misses go below as runs of consecutive lines.
  for_each_run(misses_, false, a.die, [&](const MemAccess& m) {
    done = std::max(done, port_.send(initiator, m, miss_ready, now) + hit_latency);
    unloaded = std::max(unloaded, hit_latency + port_.unloaded());
    below = std::max(below, port_.unloaded());
    wait = std::max(wait, miss_ready - arrive + port_.wait());
  });
  if (far_hold_per_line_ > 0 && below > near_miss_latency_) {
    // Some of the misses went on to HBM: their MSHRs were held for the HBM
    // round trip, not the MALL's (a MALL-served miss frees its MSHR sooner,
    // which is what lets several XCDs read one expert's weights through the
    // MALL at its rate). Added after the fact: the channels' next misses wait.
    for (std::size_t ch = 0; ch < mshr_.size(); ++ch) {
      const std::uint64_t misses = misses_per_channel_[ch] + every_misses;
      if (misses > 0) mshr_[ch].free_at += far_hold_per_line_ * misses;
    }
  }
  if (a.atomic) {
    // Read-modify-write: each channel's atomic unit works through its bytes
    // once the old data is there (hit or fetched).
    const Tick ready = done;
    for (std::size_t ch = 0; ch < atomic_unit_.size(); ++ch) {
      if (atomic_bytes_per_channel_[ch] == 0) continue;
      done = std::max(done, atomic_unit_[ch].reserve(
                                ready, transfer_ticks(atomic_bytes_per_channel_[ch], atomic_bw_)));
    }
  }
  // Dirty victims are written back off the critical path, merged into runs.
  std::sort(victims_.begin(), victims_.end(),
            [](const ByteRun& x, const ByteRun& y) { return x.addr < y.addr; });
  for (const auto& v : victims_) writebacks_ += v.bytes / line;
  for_each_run(victims_, true, a.die,
               [&](const MemAccess& wb) { port_.send(initiator, wb, served, now); });
  ext->unloaded = unloaded;
  ext->wait = wait;
  delay = to_sc_time(done - now);
}

Tick L2Cache::flush(Tick at) {
  const std::uint64_t line = spec_.line.bytes;
  victims_.clear();
  for (const std::uint64_t l : tags_.clean()) append_run(victims_, l, line);
  for (const auto& v : victims_) writebacks_ += v.bytes / line;
  Tick done = at;
  const Tick now = time_.now();
  for_each_run(victims_, true, 0, [&](const MemAccess& wb) {
    done = std::max(done, port_.send(initiator, wb, at, now));
  });
  return done;
}

}  // namespace tdmsim::sim
