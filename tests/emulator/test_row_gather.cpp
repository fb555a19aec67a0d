// The token-row gather through the tensor-mover gather descriptors.
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "descriptors/emulator/row_gather.h"

namespace tdmsim::emu {

TEST_CASE("the tensor-mover row gather copies listed rows and zero-fills the rest", "[emulator][gather]") {
  for (std::uint32_t rows : {5u, 70000u}) {  // 16-bit and 32-bit row indices
    const std::uint32_t cols = 40;
    std::vector<float> src(std::size_t{rows} * cols);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i % 9973) + 0.5f;
    const std::vector<std::uint32_t> index = {rows - 1, 0, rows, 2, rows - 1};  // rows: padding
    std::vector<float> dst(8 * cols, -1.0f);
    const auto stats = gather_rows({src.data(), rows, cols}, index, 8, dst.data());
    CHECK(stats.instructions == 1);
    CHECK(stats.rows_loaded == 4);
    for (std::size_t i = 0; i < 8; ++i) {
      for (std::size_t c = 0; c < cols; ++c) {
        const bool real = i < index.size() && index[i] < rows;
        REQUIRE(dst[i * cols + c] == (real ? src[std::size_t{index[i]} * cols + c] : 0.0f));
      }
    }
  }
  // 17 rows need two instructions at 16 rows each.
  std::vector<float> src(20 * 8, 1.0f), dst(17 * 8);
  std::vector<std::uint32_t> index(17, 3);
  CHECK(gather_rows({src.data(), 20, 8}, index, 17, dst.data()).instructions == 2);
}

}  // namespace tdmsim::emu
