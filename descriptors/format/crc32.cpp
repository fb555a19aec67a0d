#include <array>

#include "descriptors/format/byte_cursor.h"

namespace tdmsim::format {
namespace {

// The byte-at-a-time table, computed at compile time so there is no mutable
// global and no initialisation order question.
constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1U) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<std::uint32_t, 256> kTable = make_table();

}  // namespace

std::uint32_t crc32(std::span<const std::byte> bytes, std::size_t skip) {
  std::uint32_t c = 0xFFFFFFFFU;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const bool zeroed = skip != SIZE_MAX && i >= skip && i - skip < 4;
    const auto b = zeroed ? 0U : static_cast<std::uint32_t>(bytes[i]);
    c = kTable[(c ^ b) & 0xFFU] ^ (c >> 8);
  }
  return c ^ 0xFFFFFFFFU;
}

}  // namespace tdmsim::format
