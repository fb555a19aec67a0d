// Overflow-checked unsigned arithmetic for size and address computations on
// untrusted descriptor fields: a product of two 32-bit counts and a 48-bit
// stride can exceed 64 bits, and a wrapped result would let a hostile
// descriptor pass a bounds check. nullopt means "overflowed".
#pragma once

#include <cstdint>
#include <optional>

namespace tdmsim::format {

inline std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a * b + c, or nullopt if any step overflows.
inline std::optional<std::uint64_t> checked_mul_add(std::uint64_t a, std::uint64_t b,
                                                    std::uint64_t c) {
  const auto p = checked_mul(a, b);
  return p ? checked_add(*p, c) : std::nullopt;
}

inline bool is_pow2(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace tdmsim::format
