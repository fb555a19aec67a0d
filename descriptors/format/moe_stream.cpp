#include "descriptors/format/moe_stream.h"

#include <string>

namespace tdmsim::format {

std::uint64_t first_record_size(std::span<const std::byte> bytes) {
  if (bytes.size() < moe_wire::hdr::total_size + 4) return 0;
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | std::to_integer<std::uint32_t>(bytes[moe_wire::hdr::total_size + static_cast<std::size_t>(i)]);
  }
  return v;
}

Decoded<std::vector<StreamEntry>> decode_moe_stream(std::span<const std::byte> bytes) {
  std::vector<StreamEntry> out;
  if (bytes.empty()) {
    return DescriptorError{DescriptorErrorCode::truncated, 0, "empty descriptor stream"};
  }
  std::uint64_t at = 0;
  while (at < bytes.size()) {
    const std::span<const std::byte> rest = bytes.subspan(at);
    // total_size (header bytes 8..11) says where this record ends; a record
    // too short to hold it is decoded as is, so decode_moe names the problem.
    std::uint64_t size = rest.size();
    // A size smaller than a header cannot advance: decode it whole and let
    // decode_moe report it.
    if (const std::uint64_t v = first_record_size(rest); v >= moe_wire::kHeaderSize && v < rest.size()) size = v;
    const std::span<const std::byte> record = rest.first(size);
    auto d = decode_moe(record);
    if (!d) {
      DescriptorError e = d.error();
      e.offset += at;
      if (!out.empty() || size < rest.size()) {
        e.message = "descriptor " + std::to_string(out.size() + 1) + " (at byte " +
                    std::to_string(at) + "): " + e.message;
      }
      return e;
    }
    out.push_back({at, record, std::move(d).value()});
    at += size;
  }
  return out;
}

std::vector<std::byte> encode_moe_stream(std::span<const MoeDescriptor> descriptors) {
  std::vector<std::byte> out;
  for (const MoeDescriptor& d : descriptors) {
    const std::vector<std::byte> b = encode(d);
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

}  // namespace tdmsim::format
