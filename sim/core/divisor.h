// Division by a value fixed at elaboration (channel counts, interleave
// sizes): a shift when it is a power of two, as it nearly always is, and an
// ordinary division otherwise. Address decoding runs per cache line, and
// hardware divides are slow enough to show up there.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>

namespace tdmsim::sim {

class Divisor {
 public:
  Divisor() = default;
  explicit Divisor(std::uint64_t d)
      : d_(d == 0 ? 1 : d), pow2_(std::has_single_bit(d_)),
        shift_(static_cast<std::uint32_t>(std::countr_zero(d_))) {}
  std::uint64_t value() const { return d_; }
  std::uint64_t div(std::uint64_t x) const { return pow2_ ? x >> shift_ : x / d_; }
  std::uint64_t mod(std::uint64_t x) const { return pow2_ ? x & (d_ - 1) : x % d_; }
  bool pow2() const { return pow2_; }
  // div() and mod() for a power of two, without the check: for callers that
  // check pow2() once, outside their loops (Pow2 true), or not (false).
  template <bool Pow2>
  std::uint64_t div_as(std::uint64_t x) const { return Pow2 ? x >> shift_ : div(x); }
  template <bool Pow2>
  std::uint64_t mod_as(std::uint64_t x) const { return Pow2 ? x & (d_ - 1) : mod(x); }

 private:
  std::uint64_t d_ = 1;
  bool pow2_ = true;
  std::uint32_t shift_ = 0;
};

// Exact division of any 64-bit value by a divisor fixed at elaboration,
// without a divide instruction: a multiply by its reciprocal and shifts
// (Granlund and Montgomery, "Division by invariant integers using
// multiplication", PLDI 1994, figure 4.1), a shift for a power of two.
// tests/sim/test_divisor.cpp compares it with `/` on random values.
class Reciprocal {
 public:
  Reciprocal() = default;
  explicit Reciprocal(std::uint64_t d) : d_(d == 0 ? 1 : d) {
    __extension__ typedef unsigned __int128 u128;
    if (std::has_single_bit(d_)) {
      shift_ = static_cast<std::uint32_t>(std::countr_zero(d_));
      return;
    }
    // l = ceil(log2 d), at least 2 here; m = floor(2^64 (2^l - d) / d) + 1
    // fits in 64 bits as 2^(l-1) < d.
    const auto l = static_cast<std::uint32_t>(64 - std::countl_zero(d_ - 1));
    const u128 two_l = static_cast<u128>(1) << l;
    m_ = static_cast<std::uint64_t>(((two_l - d_) << 64) / d_) + 1;
    shift_ = l - 1;
  }
  std::uint64_t value() const { return d_; }
  std::uint64_t div(std::uint64_t n) const {
    __extension__ typedef unsigned __int128 u128;
    if (m_ == 0) return n >> shift_;
    const auto t = static_cast<std::uint64_t>((static_cast<u128>(m_) * n) >> 64);
    return (t + ((n - t) >> 1)) >> shift_;
  }

 private:
  std::uint64_t d_ = 1;
  std::uint64_t m_ = 0;  // 0: a power of two (a shift)
  std::uint32_t shift_ = 0;
};

// ceil(x * num / den) for num and den fixed at elaboration (a transfer's
// ticks at a fixed bandwidth: num 10^12 ps, den bytes/s), exactly as the
// 128-bit product and quotient give it (transfer_ticks), without the
// 128-bit division: the ratio is reduced, and while x * num + den - 1 fits
// in 64 bits (every x below `limit_`; 2^61 bytes for an MI355X fabric link,
// 8/17 ps a byte) it is one 64-bit product and Reciprocal's division; above
// that the 128-bit division as before. den 0 gives 0 (transfer_ticks' zero
// bandwidth).
class CeilRatio {
 public:
  CeilRatio() = default;
  CeilRatio(std::uint64_t num, std::uint64_t den) : zero_(den == 0 || num == 0) {
    if (zero_) return;
    const std::uint64_t g = std::gcd(num, den);
    num_ = num / g;
    den_ = Reciprocal(den / g);
    limit_ = (std::numeric_limits<std::uint64_t>::max() - (den / g - 1)) / num_;
  }
  std::uint64_t operator()(std::uint64_t x) const {
    __extension__ typedef unsigned __int128 u128;
    if (zero_) return 0;
    if (x <= limit_) return den_.div(x * num_ + den_.value() - 1);
    return static_cast<std::uint64_t>((static_cast<u128>(x) * num_ + den_.value() - 1) / den_.value());
  }

 private:
  bool zero_ = true;
  std::uint64_t num_ = 0;
  Reciprocal den_;
  std::uint64_t limit_ = 0;
};

}  // namespace tdmsim::sim
