// Errors of the descriptor formats. Every way a descriptor can be malformed has
// its own code, so a test (or a user reading `tdmsim describe` output) can tell
// a truncated file from a checksum failure from an overlapping weight region,
// and every error names the byte offset of the offending field. Decoding
// returns errors as values (Decoded<T>); APIs that cannot sensibly return one
// (pack(), the tensor mover's functional model) throw DescriptorException carrying the
// same record. See docs/descriptor-format.md for the table of codes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tdmsim::format {

enum class DescriptorErrorCode : std::uint8_t {
  // container
  truncated,              // buffer ends before a field the layout says is there
  bad_magic,              // first four bytes are not a known descriptor magic
  unsupported_version,    // version this reader does not implement
  bad_header_size,        // header_size field differs from the version's header
  size_mismatch,          // total_size field differs from the buffer length
  checksum_mismatch,      // CRC-32 over the descriptor does not match
  reserved_nonzero,       // a reserved or unused field/bit is not zero
  bad_enum,               // an enumeration field holds an unknown code
  bad_record_size,        // record size field differs from the version's record
  section_out_of_bounds,  // a section (table) extends past the descriptor
  section_misaligned,     // a section does not start on an 8-byte boundary
  sections_overlap,       // two sections of the descriptor overlap
  // MoE descriptor semantics
  count_out_of_range,      // expert/slot/wait/row count outside its allowed range
  dimension_out_of_range,  // hidden/inter/tokens/block size outside its range
  arithmetic_overflow,     // a size or address computation overflows 64 bits
  address_out_of_range,    // a region ends beyond the 57-bit global address space
  misaligned_address,      // a base address violates its alignment rule
  stride_too_small,        // a row stride is shorter than the row it strides over
  weight_regions_overlap,  // two expert weight/scale regions overlap
  io_regions_overlap,      // activation/index regions overlap each other or weights
  expert_out_of_range,     // a slot names an expert >= the expert count
  block_out_of_range,      // a slot names a token block >= the block count
  bad_stage,               // a slot's stage does not fit the descriptor's stage count
  zero_slot_length,        // a slot of length 0
  slot_address_mismatch,   // a slot's address differs from the layout-derived one
  bad_sync,                // inconsistent sync info (self-wait, duplicate ids, ...)
  bad_policy,              // a callback id with a policy other than custom
  // tensor-mover descriptor semantics
  bad_type_field,    // group0 dword3[31:30] is not 2
  bad_predicate,     // group0 pred field is 2 or 3
  bad_element_size,  // element size not 1, 2, 4 or 8 bytes
  bad_padding,       // pad interval/amount outside the hardware ranges
  bad_barrier,       // atomic barrier address misaligned or out of range
  bad_iterate,       // iterate fields inconsistent
  bad_dimension,     // a tensor or tile dimension is zero or unusable
  bad_stride,        // a stride exceeds 48 bits
  gather_rank,       // gather mode with a tensor/tile of rank > 2
  index_count,       // gather index count 0 or above 16 (i16) / 8 (i32)
  // tensor mover functional model
  global_out_of_bounds,   // an in-tensor element lies outside the global memory view
  lds_out_of_bounds,      // the transfer's LDS footprint exceeds the LDS buffer
  unsupported_operation,  // e.g. padding on a store (the tensor mover cannot pad stores)
  // a valid MoE descriptor stream that does not describe the scenario's layer
  scenario_mismatch,
};

// Stable snake_case name of a code (used in messages, JSON and docs).
std::string_view error_code_name(DescriptorErrorCode code);

struct DescriptorError {
  DescriptorErrorCode code{};
  std::uint64_t offset = 0;  // byte offset of the offending field in the encoding
  std::string message;

  // "checksum_mismatch at byte 12: ..."
  std::string to_string() const;
};

class DescriptorException : public std::runtime_error {
 public:
  explicit DescriptorException(DescriptorError e)
      : std::runtime_error(e.to_string()), error_(std::move(e)) {}
  const DescriptorError& error() const { return error_; }

 private:
  DescriptorError error_;
};

// The result of a decode: a value or the first error found. (std::expected is
// C++23; this is the minimal subset the formats need.)
template <class T>
class Decoded {
 public:
  Decoded(T value) : v_(std::move(value)) {}                // NOLINT: implicit by design
  Decoded(DescriptorError error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // Throws DescriptorException when this holds an error.
  const T& value() const& {
    if (!ok()) throw DescriptorException(std::get<1>(v_));
    return std::get<0>(v_);
  }
  T&& value() && {
    if (!ok()) throw DescriptorException(std::get<1>(v_));
    return std::get<0>(std::move(v_));
  }
  const DescriptorError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, DescriptorError> v_;
};

}  // namespace tdmsim::format
