// The LDS layout of the GEMM main loops' A and B tiles on NVIDIA: rows of
// exactly C 16-byte chunks (no padding), the chunks of each row permuted by an
// XOR with a function of the row, so that ldmatrix reads and cp.async writes
// are free of bank conflicts. Plain constexpr C++17, usable on the host: the
// host test tests/kernels/test_lds_swizzle.cpp checks the claims made here,
// with the very lane and copy-slot mappings the kernels use.
//
// Why. LDS has 32 banks of 4 bytes, so a 16-byte chunk at byte offset o covers
// the 4 banks of "bank group" (o / 16) mod 8. ldmatrix .x4 reads four 8x8
// matrices of 16-bit elements; each matrix is 8 addresses of 16 bytes (the
// 8 lanes 8p..8p+7 give them) and is served in one pass iff its 8 chunks lie
// in 8 distinct bank groups. In both of our loaders (matrix_core.h) the 8
// addresses of a matrix are 8 consecutive rows 8q..8q+7 of the tile at one
// logical chunk c. With rows of R = 16 C bytes, row r's chunk p is in bank
// group (r C + p) mod 8 (plus a constant from the tile's base, which all 8
// addresses share and which therefore cannot make two of them equal). Write
// r = 8q + t, t = 0..7; the physical chunk is p = c ^ f(r):
//   C >= 8 (a multiple of 8): r C = 0 mod 8, group = (c ^ f(r)) mod 8 =
//     (c mod 8) ^ t with f(r) = r & 7: 8 distinct values for t = 0..7.
//   C == 4: r C mod 8 = 4 (t & 1), group = 4 (t & 1) + (c ^ f(r)) with
//     c ^ f(r) in [0, 4); f(r) = (r >> 1) & 3 = t >> 1, so the pair
//     (t & 1, c ^ (t >> 1)) takes 8 distinct values: 8 distinct groups.
//   C == 2: r C mod 8 = 2 (t & 3), group = 2 (t & 3) + (c ^ f(r)) with
//     c ^ f(r) in [0, 2); f(r) = (r >> 2) & 1 = t >> 2: the pair
//     (t & 3, c ^ (t >> 2)) takes 8 distinct values.
// In each case f(r) < C, and C is a power of two, so p = c ^ f(r) is a
// permutation of the row's chunks (a bijection: x -> x ^ m is its own
// inverse) and the tile's bytes are the same bytes, rearranged inside rows.
// f depends on r mod 8 only (f(r + 8) = f(r)), which the kernels use twice: a
// fragment starting at a row that is a multiple of 8 (16 in practice) sees
// f(row0 + t) = f(t), and a thread's copy slots, kThreads / C rows apart (a
// multiple of 8), all share one physical chunk.
//
// Writers (cp.async, 16 bytes per thread) are conflict-free too: the threads
// copying one row take its C chunks, which the XOR maps to C distinct chunks.
//
// AMD (MFMA, matrix_core.h): rows padded by 16 bytes, R = 16 (C + 1), no
// swizzle. LDS again has 32 banks of 4 bytes; a ds_read_b128 (or
// ds_write_b128) of a 64-lane wavefront is served in 8 phases of 8 lanes
// (128 bytes each: lanes 8p..8p+7; CK-Tile's "LDS bank conflicts" notes), so
// it is conflict-free iff each phase's 8 chunks lie in 8 distinct bank groups.
// The MFMA fragment loads give lane l row l % 16 of the fragment at chunk
// l / 16 of the 64-byte K window: a phase is 8 consecutive rows r = 8q + t,
// t = 0..7, at one chunk c, in bank group (r (C + 1) + c) mod 8 (plus the
// shared base). C is a power of two >= 2 on every tile (rows of 32+ bytes),
// so C + 1 is odd, hence invertible mod 8, and t (C + 1) mod 8 takes 8 distinct
// values for t = 0..7: no conflict. (8-byte loads, 16 lanes a phase, would
// span rows t and t + 8, which share a group: 2-way; hence the 64-byte
// fragments.) The copy writes (16 bytes per thread, threads 8p..8p+7 a phase,
// logical chunk t % C of row t / C): with C >= 8 a phase is 8 chunks of one
// row, 8 distinct groups; with C = 4 or 2 it spans 2 or 4 rows, whose groups
// r (C + 1) + c overlap in one place (2-way on one group of 8, a ninth pass).
// A row of 16 bytes (C = 1) would give an even C + 1; no tile has one.
#pragma once

#if defined(__HIPCC__) || defined(__CUDACC__)
#define TDMSIM_LDS_HD __host__ __device__ __forceinline__ constexpr
#else
#define TDMSIM_LDS_HD inline constexpr
#endif

namespace tdmsim::gpu::lds {

// f(row) for rows of `chunks` 16-byte chunks (a power of two): see above.
TDMSIM_LDS_HD int swizzle_mask(int chunks, int row) {
  return chunks >= 8 ? (row & 7) : chunks == 4 ? ((row >> 1) & 3) : chunks == 2 ? ((row >> 2) & 1) : 0;
}

// The A/B tile layout of one pipeline stage: rows of `chunks` 16-byte chunks
// of K, either padded by 16 bytes (AMD: MFMA fragment loads, above) or
// unpadded and XOR-swizzled (NVIDIA ldmatrix). Row indices are those of
// the stage (A rows, then B rows); B starts at a row that is a multiple of 8,
// so B-relative rows have the same f.
template <int Chunks, bool Swizzled>
struct TileLayout {
  static_assert(Chunks == 1 || Chunks == 2 || Chunks == 4 || Chunks == 8 || Chunks == 16,
                "chunks per row must be a power of two up to 16");
  static constexpr int kChunks = Chunks;
  static constexpr bool kSwizzled = Swizzled;
  static constexpr int kRowBytes = 16 * Chunks + (Swizzled ? 0 : 16);
  // Physical chunk of logical chunk `chunk` of row `row`.
  static TDMSIM_LDS_HD int chunk_at(int row, int chunk) {
    return Swizzled ? chunk ^ swizzle_mask(Chunks, row) : chunk;
  }
  // Byte offset in the stage of logical (row, chunk).
  static TDMSIM_LDS_HD int offset(int row, int chunk) { return row * kRowBytes + chunk_at(row, chunk) * 16; }
};

// Copy slots. Thread t of `Threads` copies, for i = 0, 1, ..., the logical
// chunk t % C of stage row t / C + i * (Threads / C) (when that row exists).
// Threads / C is a multiple of 8, so f is the same for all of a thread's rows
// and slot i's LDS offset is slot 0's plus i * kSlotStride (in the padded
// layout trivially).
template <int Threads, class L>
struct CopySlots {
  static_assert(Threads % L::kChunks == 0 && (Threads / L::kChunks) % 8 == 0,
                "a thread's copy rows must be a multiple of 8 apart");
  static constexpr int kRowsPerPass = Threads / L::kChunks;
  static constexpr int kSlotStride = kRowsPerPass * L::kRowBytes;
  static TDMSIM_LDS_HD int row(int thread, int slot) { return thread / L::kChunks + slot * kRowsPerPass; }
  static TDMSIM_LDS_HD int chunk(int thread) { return thread % L::kChunks; }
  static TDMSIM_LDS_HD int first_offset(int thread) { return L::offset(row(thread, 0), chunk(thread)); }
};

// ldmatrix .x4 lane addresses of the loaders in matrix_core.h, as (row in
// the 16-row fragment, logical chunk in the 32-byte K step). Lanes 8p..8p+7
// give matrix p's 8 rows.
//   A (16 rows x 32 bytes): matrices (rows 0-7, chunk 0), (8-15, 0), (0-7, 1), (8-15, 1).
//   B (16 columns stored as rows): (0-7, 0), (0-7, 1), (8-15, 0), (8-15, 1).
TDMSIM_LDS_HD int a_lane_row(int lane) { return lane % 16; }
TDMSIM_LDS_HD int a_lane_chunk(int lane) { return lane / 16; }
TDMSIM_LDS_HD int b_lane_row(int lane) { return lane % 8 + (lane / 16) * 8; }
TDMSIM_LDS_HD int b_lane_chunk(int lane) { return (lane / 8) % 2; }

// ldmatrix addresses in the swizzled layout, in the form the kernels compute
// them (matrix_core.h). The lane with fragment row r and chunk c in {0, 1}
// reads logical chunk 2 ks + c of K step ks; as 2 ks is even, 2 ks + c =
// 2 ks ^ c, so its physical chunk is 2 ks ^ x with the lane constant
// x = c ^ f(r), and f(r) = f(row0 + r) for a fragment whose first row row0 is a
// multiple of 8. The lane's offset y = r R + 16 x is a multiple of R plus
// 16 x < R; R = 16 C is a power of two, so adding a multiple of R (the stage,
// the fragment's first row) leaves the low log2 R bits at 16 x, and an XOR
// with 32 ks < R (2 ks < C) turns them into 16 (x ^ 2 ks), the chunk wanted:
//   offset = ((base + y) ^ (32 ks)) + rows R,  base, rows R multiples of R.
// One XOR per K step and operand per tile, the fragments' rows an immediate,
// and no per-step address registers.
template <class L>
TDMSIM_LDS_HD int lane_y(int r, int c) {
  return r * L::kRowBytes + (c ^ swizzle_mask(L::kChunks, r)) * 16;
}
template <class L>
TDMSIM_LDS_HD int ldsm_offset(int base, int y, int ks, int rows) {
  return ((base + y) ^ (32 * ks)) + rows * L::kRowBytes;
}

}  // namespace tdmsim::gpu::lds

#undef TDMSIM_LDS_HD
