#include "descriptors/format/descriptor_error.h"

namespace tdmsim::format {

std::string_view error_code_name(DescriptorErrorCode code) {
  using C = DescriptorErrorCode;
  switch (code) {
    case C::truncated:
      return "truncated";
    case C::bad_magic:
      return "bad_magic";
    case C::unsupported_version:
      return "unsupported_version";
    case C::bad_header_size:
      return "bad_header_size";
    case C::size_mismatch:
      return "size_mismatch";
    case C::checksum_mismatch:
      return "checksum_mismatch";
    case C::reserved_nonzero:
      return "reserved_nonzero";
    case C::bad_enum:
      return "bad_enum";
    case C::bad_record_size:
      return "bad_record_size";
    case C::section_out_of_bounds:
      return "section_out_of_bounds";
    case C::section_misaligned:
      return "section_misaligned";
    case C::sections_overlap:
      return "sections_overlap";
    case C::count_out_of_range:
      return "count_out_of_range";
    case C::dimension_out_of_range:
      return "dimension_out_of_range";
    case C::arithmetic_overflow:
      return "arithmetic_overflow";
    case C::address_out_of_range:
      return "address_out_of_range";
    case C::misaligned_address:
      return "misaligned_address";
    case C::stride_too_small:
      return "stride_too_small";
    case C::weight_regions_overlap:
      return "weight_regions_overlap";
    case C::io_regions_overlap:
      return "io_regions_overlap";
    case C::expert_out_of_range:
      return "expert_out_of_range";
    case C::block_out_of_range:
      return "block_out_of_range";
    case C::bad_stage:
      return "bad_stage";
    case C::zero_slot_length:
      return "zero_slot_length";
    case C::slot_address_mismatch:
      return "slot_address_mismatch";
    case C::bad_sync:
      return "bad_sync";
    case C::bad_policy:
      return "bad_policy";
    case C::bad_type_field:
      return "bad_type_field";
    case C::bad_predicate:
      return "bad_predicate";
    case C::bad_element_size:
      return "bad_element_size";
    case C::bad_padding:
      return "bad_padding";
    case C::bad_barrier:
      return "bad_barrier";
    case C::bad_iterate:
      return "bad_iterate";
    case C::bad_dimension:
      return "bad_dimension";
    case C::bad_stride:
      return "bad_stride";
    case C::gather_rank:
      return "gather_rank";
    case C::index_count:
      return "index_count";
    case C::global_out_of_bounds:
      return "global_out_of_bounds";
    case C::lds_out_of_bounds:
      return "lds_out_of_bounds";
    case C::unsupported_operation:
      return "unsupported_operation";
    case C::scenario_mismatch:
      return "scenario_mismatch";
  }
  return "unknown_error";
}

std::string DescriptorError::to_string() const {
  return std::string(error_code_name(code)) + " at byte " + std::to_string(offset) + ": " + message;
}

}  // namespace tdmsim::format
