#include "descriptors/format/row_gather.h"

#include <algorithm>

#include "descriptors/format/tensor_mover.h"

namespace tdmsim::format {

IndexSize gather_index_size(const RowGatherSpec& spec, std::span<const std::uint32_t> rows) {
  if (spec.index_size) return *spec.index_size;
  const bool wide =
      std::any_of(rows.begin(), rows.end(), [](std::uint32_t r) { return r > 0xFFFFU; });
  return wide ? IndexSize::i32 : IndexSize::i16;
}

std::vector<TensorDescriptor> make_row_gather(const RowGatherSpec& spec,
                                              std::span<const std::uint32_t> rows) {
  TensorDescriptor base;
  base.gather = true;
  base.index_size = gather_index_size(spec, rows);
  base.global_addr = spec.global_addr;
  base.workgroup_mask = spec.workgroup_mask;
  base.element_bytes = spec.element_bytes;
  base.pad = spec.pad_interval != 0 || spec.pad_amount != 0;
  base.pad_interval = spec.pad_interval;
  base.pad_amount = spec.pad_amount;
  base.tensor_dim[0] = spec.tensor_cols;
  base.tensor_dim[1] = spec.tensor_rows;
  base.tile_dim[0] = spec.tile_cols;
  base.stride[0] = spec.row_stride;

  const std::uint32_t cap = gather_capacity(base.index_size);
  const std::uint64_t row_bytes = std::uint64_t{spec.tile_cols} * spec.element_bytes;
  std::vector<TensorDescriptor> out;
  out.reserve((rows.size() + cap - 1) / cap);
  for (std::size_t first = 0; first < rows.size(); first += cap) {
    TensorDescriptor d = base;
    const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(cap, rows.size() - first));
    d.tile_dim[1] = static_cast<std::uint16_t>(n);
    for (std::uint32_t i = 0; i < n; ++i) d.indices[i] = rows[first + i];
    d.lds_addr = spec.lds_addr;
    if (auto e = validate(d)) throw DescriptorException(*e);
    // Chunk placement in the single padded stream the whole gather would form.
    const std::uint64_t lds = spec.lds_addr + padded_lds_offset(d, first * row_bytes);
    if (lds > 0xFFFFFFFFULL) {
      throw DescriptorException(
          DescriptorError{DescriptorErrorCode::lds_out_of_bounds, 4,
                          "gathered rows exceed the 32-bit LDS address space"});
    }
    d.lds_addr = static_cast<std::uint32_t>(lds);
    if (auto e = validate(d)) throw DescriptorException(*e);
    out.push_back(d);
  }
  return out;
}

}  // namespace tdmsim::format
