// Reads any descriptor file by its magic ("TDMM" MoE descriptor, "TDMT"
// tensor descriptor file) and produces the human-readable dumps (text and
// JSON) that `tdmsim describe` prints.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <variant>

#include "descriptors/format/moe_descriptor.h"
#include "descriptors/format/tensor_file.h"

namespace tdmsim::format {

using AnyDescriptor = std::variant<MoeDescriptor, TensorDescriptorFile>;

// bad_magic names both known magics when the bytes start with neither.
Decoded<AnyDescriptor> decode_any(std::span<const std::byte> bytes);
std::vector<std::byte> encode_any(const AnyDescriptor& d);

// Dumps. Addresses print as hex (JSON: "0x..." strings, since they can exceed
// the 2^53 integers JSON readers keep exactly); counts and sizes as numbers.
std::string to_text(const MoeDescriptor& d);
std::string to_text(const TensorDescriptorFile& f);
std::string to_text(const TensorDescriptor& d, GatherBitLayout layout);
nlohmann::ordered_json to_json(const MoeDescriptor& d);
nlohmann::ordered_json to_json(const TensorDescriptorFile& f);
nlohmann::ordered_json to_json(const TensorDescriptor& d, GatherBitLayout layout);

}  // namespace tdmsim::format
