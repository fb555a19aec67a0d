// Division by a value fixed at elaboration (channel counts, interleave
// sizes): a shift when it is a power of two, as it nearly always is, and an
// ordinary division otherwise. Address decoding runs per cache line, and
// hardware divides are slow enough to show up there.
#pragma once

#include <bit>
#include <cstdint>

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

}  // namespace tdmsim::sim
