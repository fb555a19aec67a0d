// Helpers shared by the format/ sources (not part of the formats' interface):
// building an error and showing an address. Only the enums and error header,
// so the fuzzed group of sources (sources.cmake) may use it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "descriptors/format/descriptor_error.h"

namespace tdmsim::format::detail {

inline DescriptorError err(DescriptorErrorCode c, std::uint64_t offset, std::string msg) {
  return DescriptorError{c, offset, std::move(msg)};
}

// "0x1f": lower-case hex digits, no padding.
inline std::string hex(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v & 0xF]);
    v >>= 4;
  } while (v != 0);
  return "0x" + s;
}

}  // namespace tdmsim::format::detail
