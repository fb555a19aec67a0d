// Counting an L2's lines per channel, for its channel reservations: the
// channel hash of a line, and the counts of a load's lines per channel (one
// iteration, or a K group's iterations at once, or a group's one-line rows by
// hash term). Host-speed machinery beside the L2 (l2_cache.h): the counts are
// what counting line by line with channel_of() gives (the *_reference
// functions), in scalar, SSE2, AVX2 and BMI2 versions chosen by Paths, each
// with the same results (tests/sim/test_host_variants.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/core/divisor.h"
#include "sim/core/host_isa.h"
#include "sim/mem/mem_access.h"

namespace tdmsim::sim {

class ChannelCounter {
 public:
  // The versions it takes: vectors up to `simd` (where the channels are 16:
  // the SSE2 and AVX2 versions are written for that), BMI2 for add_terms.
  struct Paths {
    Simd simd = Simd::scalar;
    bool bmi2 = false;
  };
  // The widest the host runs.
  static Paths host_paths() { return {host_simd(), host_has_bmi2()}; }

  ChannelCounter(std::size_t channels, std::uint64_t line_bytes, Paths paths = host_paths());
  const Paths& paths() const { return paths_; }
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

  // Adds the lines of every row of `a` to count[channel] (or to `every`,
  // lines on every channel alike).
  void count_rows(const MemAccess& a, std::uint32_t* count, std::uint64_t& every) const;
  // Adds the lines of `g` iterations of a load, iteration j being `a` moved
  // by j x iter_stride, to table[j x channels() + channel]. A row's lines over
  // consecutive iterations are consecutive lines, so the channel hash is
  // redone only when a row enters the next aligned group of `channels` lines
  // (whose lines share one hash term, see count_lines_any).
  void count_iterations(const MemAccess& a, std::int64_t iter_stride, std::uint32_t g, std::uint16_t* table) const;

  // Loads of one whole line per row and iteration (a K step of one line, the
  // common fp8 case), counted once per K group instead of once per chunk of
  // it: iteration j of a row whose first line is l reads line l + j, on
  // channel ((o + j) mod c) ^ term(q + (o + j) / c) with o = l mod c,
  // q = l / c and term() the hash term of a group of c lines. So a row is
  // counted once per term it reaches, by its offset o; the table rows of any
  // chunk of the group are then built from those counts (terms_rows).
  struct LineTerms {
    static constexpr std::size_t kOffsets = 4;  // distinct offsets kept
    std::uint32_t g = 0;        // the group's iterations
    std::uint32_t terms = 0;    // terms per offset: every (o + j) / c for j < g
    std::uint32_t offsets = 0;  // offsets in use
    std::uint64_t offset[kOffsets] = {};
    std::vector<std::uint16_t> counts;  // [offset][term][channel]: rows
  };
  // Empties `t` for a group of `g` iterations.
  void reset_terms(LineTerms& t, std::uint32_t g) const;
  // Adds the rows of `a` (iteration 0 of a group whose iterations move it by
  // `iter_stride`) to `t`, if its loads are one whole line per row and
  // iteration, its rows many (at least twice the channels; fewer are cheaper
  // counted line by line) and they bring at most kOffsets offsets in all;
  // else returns false with `t` unchanged.
  bool add_terms(const MemAccess& a, std::int64_t iter_stride, LineTerms& t) const {
#if TDMSIM_X86_VARIANTS
    if (paths_.bmi2) return add_terms_bmi2(a, iter_stride, t);
#endif
    return add_terms_base(a, iter_stride, t);
  }
  // Adds iterations j0 .. j0 + n - 1 of the group counted in `t` to table
  // rows 0 .. n - 1 (as count_iterations would for those loads).
  void terms_rows(const LineTerms& t, std::uint32_t j0, std::uint32_t n, std::uint16_t* table) const;

  // The references: every line of every row, one channel_of() each.
  void count_rows_reference(const MemAccess& a, std::uint32_t* count) const;
  void count_iterations_reference(const MemAccess& a, std::int64_t iter_stride, std::uint32_t g,
                                  std::uint16_t* table) const;

 private:
  // add_terms(), as compiled for the baseline target and for hosts with
  // BMI2 (its shifts by the channel bits, a count in a register, need no
  // move to CL first; a row's counting is a handful of instructions).
  [[gnu::always_inline]] bool add_terms_rows(const MemAccess& a, std::int64_t iter_stride, LineTerms& t) const;
  bool add_terms_base(const MemAccess& a, std::int64_t iter_stride, LineTerms& t) const;
#if TDMSIM_X86_VARIANTS
  __attribute__((target("bmi2"))) bool add_terms_bmi2(const MemAccess& a, std::int64_t iter_stride,
                                                      LineTerms& t) const;
#endif
  // The table rows of count_iterations' one-line rows counted by offset `o`
  // and term (counts[0]: the first group of lines, [1]: the next).
  void offset_rows(const std::uint16_t (*counts)[64], std::uint64_t o, std::uint32_t g, std::uint16_t* table) const;
  // The 16-channel vector paths (channels_ == 16 and paths_.simd at least
  // the version's).
  bool simd16(Simd s) const { return channels_ == 16 && paths_.simd >= s; }

  Paths paths_;
  std::size_t channels_;
  Divisor div_;
  bool pow2_ = true;
  std::uint32_t shift_ = 0;   // log2(channels) when pow2_
  std::uint64_t mask_ = 0;    // channels - 1 when pow2_
  std::uint64_t line_ = 128;  // line bytes (a power of two)
  std::uint32_t line_shift_ = 7;
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

}  // namespace tdmsim::sim
