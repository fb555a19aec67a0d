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

std::optional<DescriptorError> expect_header(ByteReader& r, const char (&magic)[4],
                                             std::uint16_t version, std::string_view what) {
  for (unsigned i = 0; i < 4; ++i) {
    const auto b = r.u8("magic");
    if (!b) return r.error();
    if (*b != static_cast<std::uint8_t>(magic[i])) {
      return DescriptorError{DescriptorErrorCode::bad_magic, i,
                             "not a " + std::string(what) + ": magic must be \"" +
                                 std::string(magic, 4) + "\""};
    }
  }
  const std::uint64_t at = r.pos();
  const auto v = r.u16("header.version");
  if (!v) return r.error();
  if (*v != version) {
    return DescriptorError{DescriptorErrorCode::unsupported_version, at,
                           "version " + std::to_string(*v) + "; this reader implements version " +
                               std::to_string(version)};
  }
  return std::nullopt;
}

void stamp_crc32(std::vector<std::byte>& out, std::size_t at) {
  const std::uint32_t crc = crc32(out, at);
  for (unsigned i = 0; i < 4; ++i) out[at + i] = static_cast<std::byte>((crc >> (8 * i)) & 0xFF);
}

std::optional<DescriptorError> check_crc32(std::span<const std::byte> bytes, std::size_t at,
                                           std::uint32_t stored) {
  const std::uint32_t crc = crc32(bytes, at);
  if (crc == stored) return std::nullopt;
  return DescriptorError{DescriptorErrorCode::checksum_mismatch, at,
                         "stored CRC-32 " + std::to_string(stored) + ", computed " +
                             std::to_string(crc)};
}

}  // namespace tdmsim::format
