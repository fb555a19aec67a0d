#include "descriptors/format/descriptor_file.h"

#include <algorithm>

namespace tdmsim::format {

Decoded<AnyDescriptor> decode_any(std::span<const std::byte> bytes) {
  auto starts_with = [&](const char(&magic)[5]) {
    return bytes.size() >= 4 &&
           std::equal(bytes.begin(), bytes.begin() + 4, magic,
                      [](std::byte b, char c) { return b == static_cast<std::byte>(c); });
  };
  if (starts_with("TDMM")) {
    auto d = decode_moe(bytes);
    if (!d) return d.error();
    return AnyDescriptor{std::move(d).value()};
  }
  if (starts_with("TDMT")) {
    auto f = decode_tensor_file(bytes);
    if (!f) return f.error();
    return AnyDescriptor{std::move(f).value()};
  }
  if (bytes.size() < 4) {
    return DescriptorError{DescriptorErrorCode::truncated, bytes.size(),
                           "a descriptor file starts with a 4-byte magic; this one has " +
                               std::to_string(bytes.size()) + " bytes"};
  }
  return DescriptorError{
      DescriptorErrorCode::bad_magic, 0,
      "not a descriptor file: magic must be \"TDMM\" (MoE) or \"TDMT\" (tensor)"};
}

std::vector<std::byte> encode_any(const AnyDescriptor& d) {
  return std::visit([](const auto& x) { return encode(x); }, d);
}

}  // namespace tdmsim::format
