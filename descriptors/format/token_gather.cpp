#include "descriptors/format/token_gather.h"

#include <stdexcept>
#include <string>

namespace tdmsim::format {

std::vector<std::uint32_t> block_token_rows(const plan::BlockLayout& layout, std::uint32_t block,
                                            std::uint32_t slots_per_token, std::uint32_t tokens) {
  const std::uint64_t first = std::uint64_t{block} * layout.block_m;
  if (layout.block_m == 0 || slots_per_token == 0 ||
      first + layout.block_m > layout.sorted_rows.size()) {
    throw std::invalid_argument("token block " + std::to_string(block) +
                                " lies outside the plan's layout");
  }
  std::vector<std::uint32_t> rows(layout.block_m);
  for (std::uint32_t i = 0; i < layout.block_m; ++i) {
    const std::uint32_t r = layout.sorted_rows[first + i];
    rows[i] = r == layout.sentinel ? tokens : r / slots_per_token;
  }
  return rows;
}

std::vector<TensorDescriptor> make_token_gather(const plan::BlockLayout& layout,
                                                std::uint32_t block, std::uint32_t slots_per_token,
                                                std::uint32_t tokens, RowGatherSpec x) {
  x.tensor_rows = tokens;
  const std::vector<std::uint32_t> rows = block_token_rows(layout, block, slots_per_token, tokens);
  return make_row_gather(x, rows);
}

}  // namespace tdmsim::format
