// A file of tensor-mover descriptors (magic "TDMT", kept from before the rename): a small versioned, checksummed
// container around the raw 20-dword SGPR images (tensor_descriptor.h), so a
// descriptor sequence (e.g. the gather chunks of a token block) can be stored,
// fuzzed and shown by `tdmsim describe`. Layout: docs/descriptor-format.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "descriptors/format/tensor_descriptor.h"

namespace tdmsim::format {

inline constexpr std::uint16_t kTensorFileVersion = 1;
inline constexpr std::uint32_t kTensorFileHeader = 32;
inline constexpr std::uint32_t kTensorFileRecord = 4 * kTensorDwords;  // 80 bytes
inline constexpr std::uint32_t kTensorFileMaxRecords = 4096;

struct TensorDescriptorFile {
  GatherBitLayout layout = GatherBitLayout::mlir;  // how the records' dword0 bits 30/31 read
  std::vector<TensorDescriptor> descriptors;
  bool operator==(const TensorDescriptorFile&) const = default;
};

// Throws DescriptorException if any descriptor is invalid or the count is out of range.
std::vector<std::byte> encode(const TensorDescriptorFile& f);

// Error offsets are file offsets (record i's dword k is at 32 + 80*i + 4*k).
Decoded<TensorDescriptorFile> decode_tensor_file(std::span<const std::byte> bytes);

}  // namespace tdmsim::format
