// Functional model of the tensor mover: 2-D tiles, out-of-bounds zero fill, LDS
// padding, row gather in both index sizes and both bit layouts, scatter,
// iterate, and the memory-safety errors. Expected bytes are computed here
// element by element, independently of the engine's row/segment logic.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "descriptors/format/row_gather.h"
#include "descriptors/format/tensor_mover.h"

using namespace tdmsim;
using namespace tdmsim::format;
using Code = DescriptorErrorCode;

namespace {

constexpr std::uint64_t kBase = 0x10000;

// A rows x cols matrix of uint16 with value(r, c) = r * 1000 + c + 1 (never 0).
struct Matrix {
  std::uint32_t rows, cols;
  std::vector<std::byte> bytes;
  Matrix(std::uint32_t r, std::uint32_t c) : rows(r), cols(c), bytes(std::size_t{r} * c * 2) {
    for (std::uint32_t i = 0; i < r; ++i) {
      for (std::uint32_t j = 0; j < c; ++j) set(i, j, static_cast<std::uint16_t>(i * 1000 + j + 1));
    }
  }
  void set(std::uint32_t r, std::uint32_t c, std::uint16_t v) {
    std::memcpy(&bytes[(std::size_t{r} * cols + c) * 2], &v, 2);
  }
  std::uint16_t at(std::uint32_t r, std::uint32_t c) const {
    std::uint16_t v;
    std::memcpy(&v, &bytes[(std::size_t{r} * cols + c) * 2], 2);
    return v;
  }
  std::uint64_t addr(std::uint32_t r, std::uint32_t c) const {
    return kBase + (std::uint64_t{r} * cols + c) * 2;
  }
};

std::uint16_t lds16(const std::vector<std::byte>& lds, std::uint64_t off) {
  std::uint16_t v;
  std::memcpy(&v, &lds.at(off), 2);
  return v;
}

// A 2-D load descriptor for the sub-matrix starting at (r0, c0), as Triton
// builds one: origin address at the tile, tensor dims reduced by the offset.
TensorDescriptor tile_at(const Matrix& m, std::uint32_t r0, std::uint32_t c0, std::uint16_t tr,
                         std::uint16_t tc) {
  TensorDescriptor d;
  d.global_addr = m.addr(r0, c0);
  d.element_bytes = 2;
  d.tensor_dim = {m.cols - c0, m.rows - r0, 0, 0, 0};
  d.tile_dim = {tc, tr, 0, 0, 0};
  d.stride[0] = m.cols;
  return d;
}

}  // namespace

TEST_CASE("tensor_mover_load: in-bounds 2-D tile lands row-major in LDS", "[tensor_mover]") {
  const Matrix m(8, 10);
  const TensorDescriptor d = tile_at(m, 2, 5, 4, 3);
  std::vector<std::byte> lds(256, std::byte{0xAA});
  const TensorMoveResult r = tensor_mover_load(d, m.bytes, kBase, lds);
  CHECK(r.executed);
  CHECK(r.elements == 12);
  CHECK(r.oob_elements == 0);
  CHECK(r.global_bytes == 24);
  CHECK(r.lds_end == 24);
  for (std::uint32_t i = 0; i < 4; ++i) {
    for (std::uint32_t j = 0; j < 3; ++j) CHECK(lds16(lds, (i * 3 + j) * 2) == m.at(2 + i, 5 + j));
  }
  CHECK(lds[24] == std::byte{0xAA});  // nothing past the tile
}

TEST_CASE("tensor_mover_load: elements outside the tensor are zero-filled", "[tensor_mover]") {
  const Matrix m(8, 10);
  const TensorDescriptor d =
      tile_at(m, 6, 5, 4, 8);  // rows 6..9 (8, 9 missing), cols 5..12 (10.. missing)
  std::vector<std::byte> lds(256, std::byte{0xAA});
  const TensorMoveResult r = tensor_mover_load(d, m.bytes, kBase, lds);
  CHECK(r.oob_elements == 32 - 2 * 5);
  for (std::uint32_t i = 0; i < 4; ++i) {
    for (std::uint32_t j = 0; j < 8; ++j) {
      const bool in = 6 + i < 8 && 5 + j < 10;
      CHECK(lds16(lds, (i * 8 + j) * 2) == (in ? m.at(6 + i, 5 + j) : 0));
    }
  }
}

TEST_CASE("tensor_mover_load: padding skips pad_amount dwords after every pad_interval dwords",
          "[tensor_mover]") {
  const Matrix m(8, 16);
  TensorDescriptor d = tile_at(m, 0, 0, 4, 8);  // 16-byte rows = 4 dwords
  d.pad = true;
  d.pad_interval = 2;  // 8 bytes
  d.pad_amount = 1;    // skip 4 bytes
  std::vector<std::byte> lds(256, std::byte{0xAA});
  const TensorMoveResult r = tensor_mover_load(d, m.bytes, kBase, lds);
  CHECK(r.lds_end == 64 + 7 * 4);  // 64 payload bytes + 7 interior pads
  for (std::uint64_t p = 0; p < 64; p += 2) {
    const std::uint64_t elem = p / 2;
    const std::uint64_t off = p + p / 8 * 4;
    CHECK(lds16(lds, off) ==
          m.at(static_cast<std::uint32_t>(elem / 8), static_cast<std::uint32_t>(elem % 8)));
    if (p % 8 == 6) CHECK(lds[off + 2] == std::byte{0xAA});  // pad bytes untouched
  }
  CHECK(lds_footprint(d) == 92);
  CHECK(padded_lds_offset(d, 8) == 12);
}

TEST_CASE("tensor_mover_load: gather of rows with 16- and 32-bit indices, both layouts",
          "[tensor_mover]") {
  const Matrix m(70000, 4);  // rows beyond 65535 need 32-bit indices
  for (auto size : {IndexSize::i16, IndexSize::i32}) {
    for (auto layout : {GatherBitLayout::mlir, GatherBitLayout::triton}) {
      TensorDescriptor d;
      d.gather = true;
      d.index_size = size;
      d.global_addr = m.addr(0, 1);
      d.element_bytes = 2;
      d.tensor_dim = {3, m.rows, 0, 0, 0};
      d.tile_dim = {3, 5, 0, 0, 0};
      d.stride[0] = m.cols;
      const std::uint32_t big = size == IndexSize::i32 ? 69999 : 65535;
      const std::uint32_t rows[5] = {7, 0, big, size == IndexSize::i32 ? 70000U : 65535U, 7};
      for (unsigned i = 0; i < 5; ++i) d.indices[i] = rows[i];
      // The descriptor travels through its packed form under the layout.
      const TensorDescriptor back = unpack(pack(d, layout), layout).value();
      std::vector<std::byte> lds(64, std::byte{0xAA});
      const TensorMoveResult r = tensor_mover_load(back, m.bytes, kBase, lds);
      for (unsigned i = 0; i < 5; ++i) {
        for (std::uint32_t j = 0; j < 3; ++j) {
          const bool in = rows[i] < m.rows;
          CHECK(lds16(lds, (i * 3 + j) * 2) == (in ? m.at(rows[i], 1 + j) : 0));
        }
      }
      CHECK(r.oob_elements == (size == IndexSize::i32 ? 3U : 0U));
    }
  }
}

TEST_CASE("tensor_mover_store: scatter writes listed rows and skips out-of-bounds ones",
          "[tensor_mover]") {
  Matrix m(6, 4);
  const Matrix before = m;
  std::vector<std::byte> lds(64);
  for (std::size_t i = 0; i < lds.size(); i += 2) {
    const auto v = static_cast<std::uint16_t>(50000 + i);
    std::memcpy(&lds[i], &v, 2);
  }
  TensorDescriptor d;
  d.gather = true;
  d.global_addr = m.addr(0, 0);
  d.element_bytes = 2;
  d.tensor_dim = {4, 6, 0, 0, 0};
  d.tile_dim = {4, 3, 0, 0, 0};
  d.stride[0] = 4;
  d.indices[0] = 4;
  d.indices[1] = 9;  // out of bounds: skipped
  d.indices[2] = 1;
  const TensorMoveResult r = tensor_mover_store(d, lds, m.bytes, kBase);
  CHECK(r.oob_elements == 4);
  CHECK(r.global_bytes == 16);
  for (std::uint32_t row = 0; row < 6; ++row) {
    for (std::uint32_t c = 0; c < 4; ++c) {
      const std::uint16_t expect = row == 4   ? lds16(lds, c * 2)
                                   : row == 1 ? lds16(lds, (8 + c) * 2)
                                              : before.at(row, c);
      CHECK(m.at(row, c) == expect);
    }
  }
}

TEST_CASE("tensor mover: iterate mode, 3-D tiles, and pred = 0", "[tensor_mover]") {
  const Matrix m(16, 8);
  TensorDescriptor d = tile_at(m, 0, 0, 2, 8);
  d.iterate = true;
  d.iterate_count = 3;
  d.iterate_lds_increment = 64;
  d.iterate_global_increment = 2 * 8 * 2 * 2;  // advance 4 rows per iteration
  std::vector<std::byte> lds(256, std::byte{0xAA});
  const TensorMoveResult r = tensor_mover_load(d, m.bytes, kBase, lds);
  CHECK(r.iterations == 3);
  for (std::uint32_t k = 0; k < 3; ++k) {
    for (std::uint32_t i = 0; i < 2; ++i) {
      for (std::uint32_t j = 0; j < 8; ++j)
        CHECK(lds16(lds, 64 * k + (i * 8 + j) * 2) == m.at(4 * k + i, j));
    }
  }

  // The 16x8 matrix viewed as 4 blocks [4 rows][8 cols]: a 3-D tile of 2 rows
  // from each of 3 blocks.
  TensorDescriptor t;
  t.global_addr = m.addr(1, 0);
  t.element_bytes = 2;
  t.tensor_dim = {8, 3, 4, 1, 1};
  t.tile_dim = {8, 2, 3, 1, 1};
  t.stride = {8, 32, 0, 0};
  std::vector<std::byte> l3(256, std::byte{0xAA});
  tensor_mover_load(t, m.bytes, kBase, l3);
  for (std::uint32_t b = 0; b < 3; ++b) {
    for (std::uint32_t i = 0; i < 2; ++i) {
      for (std::uint32_t j = 0; j < 8; ++j)
        CHECK(lds16(l3, ((b * 2 + i) * 8 + j) * 2) == m.at(4 * b + 1 + i, j));
    }
  }

  TensorDescriptor off = tile_at(m, 0, 0, 2, 2);
  off.pred = 0;
  std::vector<std::byte> l0(16, std::byte{0xAA});
  CHECK_FALSE(tensor_mover_load(off, m.bytes, kBase, l0).executed);
  CHECK(l0[0] == std::byte{0xAA});
}

TEST_CASE("tensor mover: faults are reported before any byte is written", "[tensor_mover]") {
  const Matrix m(4, 4);
  auto code = [](auto&& f) {
    try {
      f();
    } catch (const DescriptorException& e) {
      return e.error().code;
    }
    FAIL("no exception");
    return Code::truncated;
  };
  std::vector<std::byte> lds(32, std::byte{0xAA});
  // The tensor claims 8 rows but the view holds 4: an in-tensor row outside memory.
  TensorDescriptor d = tile_at(m, 0, 0, 8, 4);
  d.tensor_dim[1] = 8;
  std::vector<std::byte> big(64, std::byte{0xAA});
  CHECK(code([&] { tensor_mover_load(d, m.bytes, kBase, big); }) == Code::global_out_of_bounds);
  CHECK(big[0] == std::byte{0xAA});
  // Tile larger than LDS.
  CHECK(code([&] { tensor_mover_load(tile_at(m, 0, 0, 4, 8), m.bytes, kBase, lds); }) ==
        Code::lds_out_of_bounds);
  // Global view that starts after the tile origin.
  CHECK(code([&] { tensor_mover_load(tile_at(m, 0, 0, 1, 1), m.bytes, kBase + 2, lds); }) ==
        Code::global_out_of_bounds);
  // Padding on a store.
  TensorDescriptor p = tile_at(m, 0, 0, 2, 4);
  p.pad = true;
  p.pad_interval = 2;
  p.pad_amount = 1;
  std::vector<std::byte> g = m.bytes;
  CHECK(code([&] { tensor_mover_store(p, lds, g, kBase); }) == Code::unsupported_operation);
  // Invalid descriptor.
  TensorDescriptor bad = tile_at(m, 0, 0, 2, 2);
  bad.element_bytes = 3;
  CHECK(code([&] { tensor_mover_load(bad, m.bytes, kBase, lds); }) == Code::bad_element_size);
  // Address arithmetic that overflows 64 bits is a fault, not a wrap.
  TensorDescriptor wrap = tile_at(m, 0, 0, 2, 1);
  wrap.tensor_dim[1] = 0xFFFFFFFF;
  wrap.stride[0] = kTensorStrideLimit - 1;
  wrap.gather = true;
  wrap.index_size = IndexSize::i32;
  wrap.indices[1] = 0xFFFFFFFE;
  CHECK(code([&] { tensor_mover_load(wrap, m.bytes, kBase, lds); }) == Code::global_out_of_bounds);
}

TEST_CASE("make_row_gather: chunks of 16 (i16) or 8 (i32) rows equal one big gather",
          "[tensor_mover][gather]") {
  const Matrix m(70000, 8);
  RowGatherSpec s;
  s.global_addr = m.addr(0, 2);
  s.tensor_rows = m.rows;
  s.tensor_cols = 6;
  s.tile_cols = 4;  // 8 bytes per row = 2 dwords
  s.row_stride = m.cols;
  s.element_bytes = 2;
  s.lds_addr = 32;
  s.pad_interval = 4;  // pad every 2 rows by 1 dword: chunks (16 or 8 rows) stay multiples
  s.pad_amount = 1;
  std::vector<std::uint32_t> rows;
  for (std::uint32_t i = 0; i < 40; ++i) rows.push_back(i * 37 % 600);
  rows[5] = 80000;  // past the end: a zero row (forces i32 when the width is automatic)

  for (auto width : {std::optional<IndexSize>{}, std::optional<IndexSize>{IndexSize::i16}}) {
    s.index_size = width;
    if (width) rows[5] = 65535;  // fits 16 bits, and is a real row (< 70000)
    const auto descs = make_row_gather(s, rows);
    const IndexSize used = width ? *width : IndexSize::i32;
    CHECK(descs.size() == (used == IndexSize::i32 ? 5U : 3U));
    std::vector<std::byte> lds(2048, std::byte{0xAA});
    for (const auto& d : descs) tensor_mover_load(d, m.bytes, kBase, lds);
    for (std::uint32_t i = 0; i < rows.size(); ++i) {
      for (std::uint32_t j = 0; j < 4; ++j) {
        const std::uint64_t p = (std::uint64_t{i} * 4 + j) * 2;
        const std::uint64_t off = 32 + p + p / 16 * 4;
        const std::uint16_t expect = rows[i] < m.rows ? m.at(rows[i], 2 + j) : 0;
        CHECK(lds16(lds, off) == expect);
      }
    }
  }
  CHECK(make_row_gather(s, {}).empty());
  s.element_bytes = 3;
  CHECK_THROWS_AS(make_row_gather(s, rows), DescriptorException);
  s.element_bytes = 2;
  s.index_size = IndexSize::i16;
  rows[0] = 70000;  // does not fit 16 bits
  CHECK_THROWS_AS(make_row_gather(s, rows), DescriptorException);
}
