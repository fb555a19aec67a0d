// A MoE descriptor stream: what `tdmsim run --descriptors FILE.tdmm` reads and
// `--write-descriptors` writes. A stream is TDMM descriptors back to back, each
// exactly its header's total_size bytes, so a single-descriptor .tdmm file
// (`tdmsim describe --example moe`) is a stream of one. No extra container:
// each record carries its own magic, size and CRC (docs/descriptor-format.md,
// "Descriptor streams").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "descriptors/format/moe_descriptor.h"

namespace tdmsim::format {

struct StreamEntry {
  std::uint64_t offset = 0;           // byte offset of the record in the stream
  std::span<const std::byte> bytes;   // the record (a view into the stream)
  MoeDescriptor descriptor;           // decode_moe() of those bytes
};

// The size the first record of `bytes` gives itself (its header's total_size,
// bytes 8..11), or 0 when `bytes` is too short to hold that field.
std::uint64_t first_record_size(std::span<const std::byte> bytes);

// Splits and decodes every record with decode_moe(). Errors carry byte offsets
// into the whole stream (the record's offset plus the field's). An empty
// stream is `truncated` at 0.
Decoded<std::vector<StreamEntry>> decode_moe_stream(std::span<const std::byte> bytes);

// The records of `descriptors`, encoded and concatenated.
std::vector<std::byte> encode_moe_stream(std::span<const MoeDescriptor> descriptors);

}  // namespace tdmsim::format
