// Host checks of the GEMM main loops' LDS layout (kernels/hip/lds_swizzle.h):
// the XOR swizzle is a permutation of each row's chunks, every ldmatrix 8x8
// matrix hits 8 distinct bank groups, and what the copy slots write where is
// what the ldmatrix lanes read, for every instantiated tile. The functions
// tested are the ones the kernels call (constexpr, host and device).
#include <set>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/hip/lds_swizzle.h"

using namespace tdmsim::gpu;

namespace {

constexpr int kThreads = 256;  // kernels/moe/moe_gpu.h kThreads

// Bank group of the 16-byte chunk at byte offset o: 32 banks of 4 bytes.
int bank_group(int o) { return (o / 16) % 8; }

template <int C>
void check_mask() {
  using L = lds::TileLayout<C, true>;
  STATIC_REQUIRE(L::kRowBytes == 16 * C);
  for (int row = 0; row < 1024; ++row) {
    INFO("C " << C << " row " << row);
    CHECK(lds::swizzle_mask(C, row) == lds::swizzle_mask(C, row % 8));  // period 8
    std::set<int> phys;
    for (int c = 0; c < C; ++c) {
      const int p = L::chunk_at(row, c);
      CHECK(p >= 0);
      CHECK(p < C);
      phys.insert(p);
    }
    CHECK(int(phys.size()) == C);  // a permutation of the row's chunks
  }
  // Any 8 consecutive rows from a multiple of 8 at one logical chunk (one
  // ldmatrix matrix): 8 distinct bank groups, whatever 16-byte aligned base
  // the tile has.
  for (int base = 0; base < 128; base += 16)
    for (int row0 = 0; row0 < 512; row0 += 8)
      for (int c = 0; c < C; ++c) {
        std::set<int> groups;
        for (int t = 0; t < 8; ++t) groups.insert(bank_group(base + L::offset(row0 + t, c)));
        INFO("C " << C << " row0 " << row0 << " chunk " << c << " base " << base);
        CHECK(groups.size() == 8);
      }
}

// One stage of a T-byte-element BM x BN x BK tile in layout L: simulate the
// copy slots (tag each 16-byte cell with the logical (row, chunk) it holds),
// then every ldmatrix of every fragment and K step as the loaders compute it.
template <int Bytes, int BM, int BN, int BK, bool Swizzled>
void check_tile() {
  constexpr int C = BK * Bytes / 16;
  using L = lds::TileLayout<C, Swizzled>;
  using Slots = lds::CopySlots<kThreads, L>;
  constexpr int kRows = BM + BN;
  constexpr int kStageBytes = kRows * L::kRowBytes;
  constexpr int kCopies = (kRows + Slots::kRowsPerPass - 1) / Slots::kRowsPerPass;
  INFO("tile " << BM << "x" << BN << "x" << BK << " element bytes " << Bytes << " swizzled " << Swizzled);

  // The copy side (fused_moe.hip TileCopy): slot i of thread t writes logical
  // chunk chunk(t) of row row(t, i) at first_offset(t) + i * kSlotStride.
  std::vector<int> tag(kStageBytes / 16, -1);
  int copies = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kCopies; ++i) {
      const int row = Slots::row(t, i), chunk = Slots::chunk(t);
      if (row >= kRows) continue;
      const int off = Slots::first_offset(t) + i * Slots::kSlotStride;
      REQUIRE(off == L::offset(row, chunk));
      REQUIRE(off % 16 == 0);
      REQUIRE(off >= 0);
      REQUIRE(off + 16 <= kStageBytes);
      REQUIRE(off / L::kRowBytes == row);  // stays in its row
      REQUIRE(tag[off / 16] == -1);        // nothing written twice
      tag[off / 16] = row * C + chunk;
      ++copies;
    }
  REQUIRE(copies == kRows * C);  // every (row, chunk) once

  if constexpr (Swizzled) {
    // The read side (matrix_core.h load_a / load_b): the warp's first row
    // w16 (a multiple of 16), the fragment `rows` further, in any stage.
    for (int stage = 0; stage < 4; ++stage)
      for (int b_side = 0; b_side < 2; ++b_side) {
        const int first = b_side ? BM : 0, count = b_side ? BN : BM;
        for (int w = 0; w < count; w += 16)
          for (int rows = 0; w + rows < count; rows += 16)
            for (int ks = 0; ks < C / 2; ++ks) {
              const int base = stage * kStageBytes + (first + w) * L::kRowBytes;
              std::vector<int> groups(32);
              for (int l = 0; l < 32; ++l) {
                const int r = b_side ? lds::b_lane_row(l) : lds::a_lane_row(l);
                const int c = b_side ? lds::b_lane_chunk(l) : lds::a_lane_chunk(l);
                const int off = lds::ldsm_offset<L>(base, lds::lane_y<L>(r, c), ks, rows);
                const int in_stage = off - stage * kStageBytes;
                INFO("B " << b_side << " w " << w << " rows " << rows << " ks " << ks << " lane " << l);
                REQUIRE(off % 16 == 0);
                REQUIRE(in_stage >= 0);
                REQUIRE(in_stage + 16 <= kStageBytes);
                // the lane reads the logical chunk it wants
                REQUIRE(tag[in_stage / 16] == (first + w + rows + r) * C + 2 * ks + c);
                groups[l] = bank_group(off);
              }
              for (int p = 0; p < 4; ++p) {  // matrix p: lanes 8p..8p+7, one pass
                const std::set<int> g(groups.begin() + 8 * p, groups.begin() + 8 * p + 8);
                INFO("B " << b_side << " w " << w << " rows " << rows << " ks " << ks << " matrix " << p);
                CHECK(g.size() == 8);
              }
            }
      }
  }
}

template <int Bytes>
void check_tiles() {
  // fused_moe.hip with_tile: the instantiated M x N x K tiles.
  check_tile<Bytes, 16, 64, 128, true>();
  check_tile<Bytes, 16, 128, 128, true>();
  check_tile<Bytes, 32, 64, 64, true>();
  check_tile<Bytes, 32, 64, 128, true>();
  check_tile<Bytes, 32, 128, 64, true>();
  check_tile<Bytes, 32, 128, 128, true>();
  check_tile<Bytes, 64, 64, 64, true>();
  check_tile<Bytes, 64, 128, 64, true>();
  check_tile<Bytes, 64, 128, 128, true>();
  check_tile<Bytes, 128, 64, 64, true>();
  check_tile<Bytes, 128, 128, 32, true>();
  check_tile<Bytes, 128, 128, 64, true>();
  check_tile<Bytes, 128, 128, 128, true>();
  check_tile<Bytes, 128, 256, 64, true>();
  // the padded layout (AMD) through the same copy slots
  check_tile<Bytes, 16, 64, 128, false>();
  check_tile<Bytes, 128, 128, 32, false>();
  check_tile<Bytes, 128, 128, 64, false>();
  check_tile<Bytes, 128, 256, 64, false>();
}

}  // namespace

TEST_CASE("LDS swizzle permutes each row's chunks and spreads ldmatrix rows over 8 bank groups",
          "[kernels][lds]") {
  check_mask<2>();
  check_mask<4>();
  check_mask<8>();
  check_mask<16>();
  // The masks argued in lds_swizzle.h.
  for (int r = 0; r < 64; ++r) {
    CHECK(lds::swizzle_mask(16, r) == (r & 7));
    CHECK(lds::swizzle_mask(8, r) == (r & 7));
    CHECK(lds::swizzle_mask(4, r) == ((r >> 1) & 3));
    CHECK(lds::swizzle_mask(2, r) == ((r >> 2) & 1));
  }
  // Padded rows keep the logical order.
  CHECK(lds::TileLayout<8, false>::kRowBytes == 144);
  CHECK(lds::TileLayout<8, false>::offset(3, 5) == 3 * 144 + 5 * 16);
}

TEST_CASE("LDS copy slots write what the ldmatrix lanes read, for every instantiated tile",
          "[kernels][lds]") {
  check_tiles<2>();  // bf16
  check_tiles<1>();  // e4m3
}

TEST_CASE("TMA's 128B swizzle writes the layout the warp-specialized loop reads", "[kernels]") {
  // kernels/hip/tma.h: the copy engine's 128B swizzle puts the 16-byte chunk
  // at byte offset o of a 1024-byte aligned box at o XOR ((o >> 7) & 7) << 4
  // (address bits [4, 7) XORed with bits [7, 10); CUDA driver API,
  // CU_TENSOR_MAP_SWIZZLE_128B). The B rows the engine writes must land where
  // TileLayout (rows of 8 chunks) puts them, from the B tile's first row
  // (BM rows of 128 bytes in, BM a multiple of 8) and from the up half's (N/2
  // rows further: 64 or 128, also multiples of 8).
  using L = lds::TileLayout<8, true>;
  for (const int bm : {128}) {
    for (const int first : {0, 64, 128}) {  // the box's first B row
      for (int r = 0; r < 256; ++r) {
        for (int c = 0; c < 8; ++c) {
          const int box_offset = r * 128 + c * 16;  // as the engine sees the box, unswizzled
          const int engine = box_offset ^ (((box_offset >> 7) & 7) << 4);
          const int stage_row = bm + first + r;
          CHECK((bm + first) * 128 + engine == L::offset(stage_row, c));
        }
      }
    }
  }
}
