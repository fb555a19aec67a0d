// The kernel heuristic on hand-checked cases (numbers worked out in the
// comments from the rules of docs/moe-plan.md "Kernel heuristic"), and the
// scenario's kernel configuration taking precedence.
#include <catch2/catch.hpp>

#include "descriptors/plan/default_tile.h"
#include "descriptors/plan/moe_plan.h"
#include "plan_test_util.h"

using namespace tdmsim;
using namespace tdmsim::plan;
using namespace tdmsim::plan::test;

namespace {

LayerShape shape(std::uint32_t tokens, std::uint32_t hidden, std::uint32_t inter,
                 std::uint32_t experts, std::uint32_t top_k, std::uint32_t shared = 0) {
  LayerShape s;
  s.tokens = tokens;
  s.hidden = hidden;
  s.inter = inter;
  s.shared_inter = shared ? inter : 0;
  s.experts_total = s.experts_local = experts;
  s.shared_experts = s.shared_chunks = s.shared = shared;
  s.top_k = top_k;
  return s;
}

KernelSpec automatic() { return config::defaults<KernelSpec>(); }

// The generic rule on MI300X: AITER's kernels (kernel.source aiter), whose
// tiles are not held to our AMD kernels' LDS layout (that rule:
// tests/plan/test_amd_lds.cpp).
KernelSpec generic() {
  KernelSpec k = automatic();
  k.source = KernelCode::aiter;
  return k;
}

}  // namespace

TEST_CASE("default tiles", "[kernel]") {
  CHECK(default_tile(32) == KernelTile{256, 32, 64, 128});
  CHECK(default_tile(64) == KernelTile{256, 64, 128, 64});
  CHECK(default_tile(128) == KernelTile{256, 128, 128, 64});
  // AITER-like machines: K in proportion to the narrower operands (same LDS bytes).
  CHECK(default_tile(64, Quant::per_1x32, DType::mxfp4, DType::mxfp4) == KernelTile{256, 64, 128, 256});
  CHECK(default_tile(32, Quant::per_1x32, DType::fp8_e4m3, DType::fp8_e4m3) == KernelTile{256, 32, 64, 256});
  CHECK(default_tile(32, Quant::per_1x32, DType::bf16, DType::mxfp4) == default_tile(32));
  CHECK(default_tile(128, Quant::block_128, DType::fp8_e4m3, DType::fp8_e4m3) == KernelTile{256, 128, 128, 128});
}

TEST_CASE("prefill: Mixtral-8x7B, 8192 tokens on MI300X picks block_m 128", "[kernel]") {
  // 8 experts x 2048 rows; an expert's weights are 3 x 4096 x 14336 x 2 B =
  // 352.3 MB, 66.5 us at 5.3 TB/s; every block streams them:
  //   M 32:  64 blocks/expert x 8 = 512 blocks -> 34035.6 us
  //   M 64:  256 blocks -> 17017.8 us
  //   M 128: 128 blocks -> 8508.9 us of weights, but the products take longer:
  //          6 x 16384 x 4096 x 14336 FLOP at the bf16 MFMA rate x
  //          kernels.matrix_efficiency 0.5 (1307 x 0.5 TFLOP/s) -> 8830.1 us (lowest)
  const LayerShape s = shape(8192, 4096, 14336, 8, 2);
  const KernelChoice k = choose_kernel(s, generic(), shipped_machine("mi300x"), round_robin(s));
  CHECK(k.block_m == 128);
  CHECK(k.stages == 2);
  CHECK(k.split_k == 1);
  // AITER's gate/up tile names N per half (named_gate_up_tile).
  CHECK(named_gate_up_tile(k) == default_tile(128));
  CHECK(k.gate_up_tile.n == 2 * default_tile(128).n);
  CHECK(k.down_tile == default_tile(128));
  CHECK_THAT(k.reason, Catch::Contains("M32: 512 blocks 34035.6 us"));
  CHECK_THAT(k.reason, Catch::Contains("M128: 128 blocks 8830.1 us"));
}

TEST_CASE("our block-scaled loops on CDNA: padded rows cost their instruction issue, not the matrix peak",
          "[kernel]") {
  // DeepSeek-V3 MXFP4 (1x32 E8M0 scales), 128 tokens on MI355X with our
  // kernels: 1024 rows round robin over 256 experts, 4 rows each, so one block
  // per expert at any M and the same weight time (256 x 3 x 7168 x 2048 x 0.5 B
  // at 8 TB/s: 704.6 us). At M 128, 97% of the rows are padding; our
  // block-scaled loop (gate_up_kernel<fp8, 128, 128, 64, true>: 1051
  // instructions a wavefront per K tile, code-object counts) issues them at
  // one per 4 cycles with one or two workgroups a CU (their LDS): 4708.5 us,
  // where the fp4 MFMA peak alone would have hidden them (the estimate before
  // 2026-12-05 picked M 128, 4.7x M 32 in the timing model).
  LayerShape s = shape(128, 7168, 2048, 256, 8);
  s.dtype = s.weight_dtype = DType::mxfp4;
  s.quant = Quant::per_1x32;
  const KernelChoice k = choose_kernel(s, automatic(), shipped_machine("mi355x"), round_robin(s));
  CHECK(k.block_m == 32);
  CHECK_THAT(k.reason, Catch::Contains("M64: 256 blocks 1568.0 us"));
  CHECK_THAT(k.reason, Catch::Contains("M128: 256 blocks 4708.5 us"));
  // AITER's kernels apply the scales in the MFMA: no issue term. At M 32 and
  // 64 the weights bound (a tie, to M 32); at M 128 the products at the fp4
  // rate x kernels.matrix_efficiency 0.35 (6 x 32768 x 7168 x 2048 FLOP at
  // 3.52 PFLOP/s): 819.2 us.
  const KernelChoice a = choose_kernel(s, generic(), shipped_machine("mi355x"), round_robin(s));
  CHECK(a.block_m == 32);
  CHECK_THAT(a.reason, Catch::Contains("M64: 256 blocks 704.6 us"));
  CHECK_THAT(a.reason, Catch::Contains("M128: 256 blocks 819.2 us"));
}

TEST_CASE("decode: DeepSeek-V3 TP8, 4 tokens on MI355X: a tie goes to fewer padded rows, 1-stage", "[kernel]") {
  // 4 tokens x top-8 over 256 experts, round robin: 32 experts with 1 row,
  // plus the shared expert with 4: 33 blocks at any M. Memory-bound at M 32
  // and 64 (33 x 3 x 7168 x 256 x 2 B at 8 TB/s = 45.4 us), so a tie: M 32
  // pads least (33 x 32 rows); at M 128 the padded rows' products at the
  // kernels' bf16 rate (x 0.35) take 52.8 us. 36 local rows <= 2 x 32 -> the
  // fused 1-stage kernel.
  const LayerShape s = shape(4, 7168, 256, 256, 8, 1);
  const KernelChoice k = choose_kernel(s, automatic(), shipped_machine("mi355x"), round_robin(s));
  CHECK(k.block_m == 32);
  CHECK(k.stages == 1);
  CHECK(k.split_k == 1);
  CHECK_THAT(k.reason, Catch::Contains("M32: 33 blocks 45.4 us"));
  CHECK_THAT(k.reason, Catch::Contains("M64: 33 blocks 45.4 us"));
  CHECK_THAT(k.reason, Catch::Contains("M128: 33 blocks 52.8 us"));
  CHECK_THAT(k.reason, Catch::Contains("1-stage (36 local rows <= 2*block_m = 64)"));
  // With AITER's kernels the rows fit as well, but AITER has no 1-stage kernel
  // for gated bf16 layers (its fmoe bf16 is ungated only): 2-stage. Its fp8
  // block-scale one exists: 1-stage.
  const KernelChoice a = choose_kernel(s, generic(), shipped_machine("mi355x"), round_robin(s));
  CHECK(a.stages == 2);
  CHECK_THAT(a.reason, Catch::Contains("2-stage (AITER ships no 1-stage kernel for this format on this GPU)"));
  LayerShape f = s;
  f.dtype = f.weight_dtype = DType::fp8_e4m3;
  f.quant = Quant::block_128;
  CHECK(choose_kernel(f, generic(), shipped_machine("mi355x"), round_robin(f)).stages == 1);
}

TEST_CASE("AITER's kernels run 1-stage only at a block_m of their 1-stage kernels", "[kernel]") {
  // Qwen3-30B-A3B's shape (H 2048, I 768, 128 experts top-8) at 16 tokens: 128
  // local rows, within 2 x block_m at block_m 64. AITER's MXFP4 1-stage kernels
  // on MI355X are all of 32 rows (32x256, 32x512): 2-stage at block_m 64.
  LayerShape s = shape(16, 2048, 768, 128, 8);
  s.dtype = s.weight_dtype = DType::mxfp4;
  s.quant = Quant::per_1x32;
  KernelSpec at64 = generic();
  at64.block_m = 64;
  const KernelChoice a = choose_kernel(s, at64, shipped_machine("mi355x"), round_robin(s));
  CHECK(a.stages == 2);
  CHECK_THAT(a.reason, Catch::Contains("2-stage (AITER's 1-stage kernels for this format have no block_m 64)"));
  // MI300X's fp8 block-scale kernels include 64x256: 1-stage at block_m 64,
  // on that kernel.
  s.dtype = s.weight_dtype = DType::fp8_e4m3_fnuz;
  s.quant = Quant::block_128;
  const KernelChoice b = choose_kernel(s, at64, shipped_machine("mi300x"), round_robin(s));
  CHECK(b.stages == 1);
  CHECK(b.gate_up_tile == KernelTile{256, 64, 512, 128});
  // A scenario's stages: 1 is kept at any block_m, on the format's widths, said so.
  KernelSpec one = at64;
  one.stages = 1;
  s.dtype = s.weight_dtype = DType::mxfp4;
  s.quant = Quant::per_1x32;
  const KernelChoice forced = choose_kernel(s, one, shipped_machine("mi355x"), round_robin(s));
  CHECK(forced.stages == 1);
  CHECK_THAT(forced.reason, Catch::Contains("none of block_m 64 for this format: its widths taken"));
  // bf16 x MXFP4 (a16w4) at block_m 32, whose rows fit two blocks: AITER keys
  // its MXFP4 1-stage kernel as fp4 x fp4, so 2-stage.
  s.tokens = 8;
  s.dtype = DType::bf16;
  KernelSpec at32 = generic();
  at32.block_m = 32;
  const KernelChoice a16w4 = choose_kernel(s, at32, shipped_machine("mi355x"), round_robin(s));
  CHECK(a16w4.stages == 2);
  CHECK_THAT(a16w4.reason, Catch::Contains("2-stage (AITER ships no 1-stage kernel for this format on this GPU)"));
  s.dtype = DType::mxfp4;
  CHECK(choose_kernel(s, at32, shipped_machine("mi355x"), round_robin(s)).stages == 1);
}

TEST_CASE("split-K when the gate/up grid is far smaller than the CUs", "[kernel]") {
  // Qwen3-235B TP8 (I = 192, H = 4096), one token, top-8 of 128, forced
  // 2-stage with block_m 128, MI300X 304 CUs, AITER's default tile (N 128 of
  // gate and 128 of up a workgroup): 8 blocks x ceil(192 / 128) = 2 -> 16
  // tiles. The grid of 16 fills 16 x 4 = 64 <= 304 CUs, so split:
  // floor_pow2(304 / 16 = 19) = 16, at most 8 and capped by the K tiles of
  // the split stages. AITER's kernels split stage 1 only: 4096/64 = 64 K
  // tiles -> 8, and down runs whole. Our kernels split both: min(64,
  // ceil(192/64) = 3) = 3 -> floor_pow2 = 2.
  const LayerShape s = shape(1, 4096, 192, 128, 8);
  KernelSpec req = generic();
  req.stages = 2;
  req.block_m = 128;
  const KernelChoice k = choose_kernel(s, req, shipped_machine("mi300x"), round_robin(s));
  CHECK(k.block_m == 128);
  CHECK(k.stages == 2);
  CHECK(k.split_k == 8);
  CHECK_FALSE(k.split_down);
  CHECK(stage_splits(k, Stage::gate_up) == 8);
  CHECK(stage_splits(k, Stage::down) == 1);
  CHECK_THAT(k.reason, Catch::Contains("split_k 8 (gate/up grid 16 <= 304 CUs / 4) (stage 1 only, as AITER's kernels)"));
  KernelSpec ours = req;
  ours.source = KernelCode::tdmsim;
  const KernelChoice ko = choose_kernel(s, ours, shipped_machine("mi300x"), round_robin(s));
  CHECK(ko.split_down);
  CHECK(stage_splits(ko, Stage::down) == ko.split_k);
  CHECK(ko.split_k == 2);  // capped by down's 3 K tiles (192 / 64)

  // With I = 2048 the down stage has 32 K tiles: the CU fill decides, capped
  // at 8. Grid: 2 blocks (top_k 2) x 2048/128 = 16 N tiles = 32 <= 76 ->
  // floor_pow2(304 / 32 = 9) = 8.
  const LayerShape big = shape(1, 4096, 2048, 128, 2);
  const KernelChoice kb = choose_kernel(big, req, shipped_machine("mi300x"), round_robin(big));
  CHECK(kb.block_m == 128);
  CHECK(kb.split_k == 8);
  CHECK_THAT(kb.reason, Catch::Contains("gate/up grid 32 <= 304 CUs / 4"));
}

TEST_CASE("the scenario's kernel configuration wins over the heuristic", "[kernel]") {
  const LayerShape s = shape(8192, 4096, 14336, 8, 2);
  KernelSpec req = generic();
  req.block_m = 32;
  req.stages = 2;
  req.split_k = 4;
  req.gate_up_tile = {256, 32, 128, 64};
  req.pipeline_stages = 3;
  const KernelChoice k = choose_kernel(s, req, shipped_machine("mi300x"), round_robin(s));
  CHECK(k.block_m == 32);
  CHECK(k.stages == 2);
  CHECK(k.split_k == 4);
  CHECK(k.pipeline_stages == 3);
  // AITER's name is N per half (NPerBlock of gate and as many of up): the
  // model's gate/up tile is twice as wide, and outputs show the name again.
  CHECK(k.gate_up_tile == KernelTile{256, 32, 256, 64});
  CHECK(named_gate_up_tile(k) == KernelTile{256, 32, 128, 64});
  CHECK_THAT(k.reason, Catch::Contains("tiles 256x32x128x64 / "));
  CHECK(k.down_tile == default_tile(32));
  CHECK_THAT(k.reason, Catch::Contains("block_m 32 (scenario)"));

  // A tile alone fixes block_m; more splits than K tiles are limited.
  KernelSpec tile_only = automatic();
  tile_only.down_tile = {256, 64, 64, 128};
  tile_only.stages = 2;
  tile_only.split_k = 64;
  const LayerShape small_i = shape(64, 4096, 256, 8, 2);
  const KernelChoice t = choose_kernel(small_i, tile_only, shipped_machine("mi300x"),
                                       round_robin(small_i));
  CHECK(t.block_m == 64);
  CHECK(t.split_k == 2);  // down K = 256 / 128 = 2 tiles
  CHECK_THAT(t.reason, Catch::Contains("scenario asked 64"));

  // The fused 1-stage kernel never splits K.
  KernelSpec one = automatic();
  one.stages = 1;
  one.split_k = 4;
  CHECK(choose_kernel(s, one, shipped_machine("mi300x"), round_robin(s)).split_k == 1);
}

TEST_CASE("tile jobs count blocks x N tiles x K splits, block-major in groups of 1", "[kernel]") {
  // 3 tokens all to expert 0; expert 1 gets none; the shared expert (fused
  // id 2) all 3. Two blocks of 16.
  LayerShape s = shape(3, 256, 96, 2, 1, 1);
  Routing r;
  r.ids = {0, 0, 0};
  r.weights = {1, 1, 1};
  const FusedRouting f = fuse_routing(s, r);
  const BlockLayout L = sort_into_blocks(s, f, 16);
  KernelChoice k;
  k.block_m = 16;
  k.gate_up_tile = {256, 16, 64, 64};   // gate_up: 96 / 32 = 3 N tiles; K 256/64 = 4 tiles
  k.down_tile = {256, 16, 128, 32};     // down: 256 / 128 = 2 N tiles; K 96/32 = 3 tiles
  k.split_k = 3;
  const auto gu = tile_jobs(s, L, k, Stage::gate_up);
  REQUIRE(gu.size() == 2u * 3u * 3u);  // blocks: expert 0, shared expert 2
  CHECK(gu[0].expert == 0);
  CHECK(gu[0].valid_rows == 3);
  CHECK(gu[9].block == 1);
  CHECK(gu[9].expert == 2);
  CHECK(job_n_range(s, k, gu[3]).begin == 32);  // n_tile 1: intermediate columns 32..64
  // 4 K tiles over 3 splits: tiles [0,1), [1,2), [2,4).
  CHECK(job_k_range(s, k, gu[1]).begin == 64);
  CHECK(job_k_range(s, k, gu[1]).end == 128);
  CHECK(job_k_range(s, k, gu[2]).begin == 128);
  CHECK(job_k_range(s, k, gu[2]).end == 256);
  const auto down = tile_jobs(s, L, k, Stage::down);
  REQUIRE(down.size() == 2u * 2u * 3u);
  CHECK(job_k_range(s, k, down[2]).begin == 64);
  CHECK(job_k_range(s, k, down[2]).end == 96);
  CHECK(job_n_range(s, k, down[3]).begin == 128);
  const auto fused = tile_jobs(s, L, k, Stage::fused);
  CHECK(fused.size() == 2u * 3u);  // gate_up tile N 64: 32 columns of I 96 each, no split
  CHECK(job_n_range(s, k, fused[2]).begin == 64);  // a slice of the intermediate, like gate_up
  CHECK(job_n_range(s, k, fused[2]).end == 96);
  CHECK(job_k_range(s, k, fused[2]).end == 256);   // over all of H first
}

TEST_CASE("raster groups: a group's blocks sweep the N tiles together", "[kernel]") {
  // 5 blocks, 3 N tiles, 2 K splits, groups of 2: blocks {0,1}, {2,3}, {4}.
  // Group {0,1}: (n0: b0 s0, b0 s1, b1 s0, b1 s1), (n1: ...), (n2: ...) = 12 jobs.
  using rules::job_at;
  const auto at = [](std::uint32_t id) { return job_at(id, 5, 3, 2, 2); };
  CHECK(at(0).block == 0);
  CHECK(at(1).split == 1);
  CHECK(at(2).block == 1);
  CHECK(at(2).n_tile == 0);
  CHECK(at(4).block == 0);
  CHECK(at(4).n_tile == 1);
  CHECK(at(12).block == 2);
  CHECK(at(24).block == 4);  // the short last group: n outer, then splits
  CHECK(at(25).split == 1);
  CHECK(at(26).n_tile == 1);
  CHECK(at(26).block == 4);
  // Every (block, n, split) exactly once, for groups that do and do not divide the blocks.
  for (const std::uint32_t group : {1u, 2u, 3u, 4u, 7u, 16u}) {
    std::vector<int> seen(5 * 3 * 2, 0);
    for (std::uint32_t id = 0; id < 30; ++id) {
      const rules::JobAt j = job_at(id, 5, 3, 2, group);
      REQUIRE(j.block < 5);
      REQUIRE(j.n_tile < 3);
      REQUIRE(j.split < 2);
      ++seen[(j.block * 3 + j.n_tile) * 2 + j.split];
    }
    for (const int n : seen) CHECK(n == 1);
  }
  // Group 1 (and a group of all blocks, transposed) are the plain orders.
  for (std::uint32_t id = 0; id < 30; ++id) {
    CHECK(job_at(id, 5, 3, 2, 1).block == id / 6);
    CHECK(job_at(id, 5, 3, 2, 5).n_tile == id / 10);
  }

  // tile_jobs lists the jobs in this order.
  LayerShape s = shape(64, 256, 96, 4, 1);
  const FusedRouting f = round_robin(s);
  const BlockLayout L = sort_into_blocks(s, f, 16);  // 16 rows per expert: 4 blocks
  KernelChoice k;
  k.block_m = 16;
  k.gate_up_tile = {256, 16, 64, 64};  // 3 N tiles
  k.down_tile = {256, 16, 128, 32};    // 2 N tiles
  k.raster_group = 3;
  for (const Stage stage : {Stage::gate_up, Stage::down}) {
    const auto jobs = tile_jobs(s, L, k, stage);
    const std::uint32_t n = stage == Stage::down ? 2 : 3;
    REQUIRE(jobs.size() == 4u * n);
    for (std::uint32_t id = 0; id < jobs.size(); ++id) {
      const rules::JobAt j = job_at(id, 4, n, 1, 3);
      CHECK(jobs[id].block == j.block);
      CHECK(jobs[id].n_tile == j.n_tile);
      CHECK(jobs[id].expert == L.block_expert[j.block]);
    }
  }
}

TEST_CASE("raster group: an expert's blocks, A rows within half the last-level cache", "[kernel]") {
  // Mixtral-8x7B, bf16, block_m 128: A rows of a block are
  // 128 x max(4096, 14336) x 2 B = 3.67 MB.
  // 16384 tokens: 32 blocks per expert. H200: 60 MiB L2, half 31.5 MB:
  // 8 blocks (2 x 4 x 3.67 = 29.4 MB allows doubling 4 to 8; 16 would need 58.7).
  const LayerShape big = shape(16384, 4096, 14336, 8, 2);
  const KernelChoice h = choose_kernel(big, automatic(), shipped_machine("h200"), round_robin(big));
  CHECK(h.block_m == 128);
  CHECK(h.raster_group == 8);
  CHECK_THAT(h.reason, Catch::Contains("raster_group 8 (32 blocks per expert"));
  // MI300X: the 256 MiB MALL, half 134 MB: 16 (the largest group).
  CHECK(choose_kernel(big, automatic(), shipped_machine("mi300x"), round_robin(big)).raster_group == 16);
  // 1024 tokens: 256 rows, 2 blocks per expert: groups of twice that, 4, on
  // either machine (2 x 2 x 3.67 = 14.7 MB within half the H200's L2).
  const LayerShape small = shape(1024, 4096, 14336, 8, 2);
  CHECK(choose_kernel(small, automatic(), shipped_machine("h200"), round_robin(small)).raster_group == 4);
  CHECK(choose_kernel(small, automatic(), shipped_machine("mi300x"), round_robin(small)).raster_group == 4);
  // 256 tokens: 64 rows, one block per expert: experts share nothing, no groups.
  const LayerShape one = shape(256, 4096, 14336, 8, 2);
  CHECK(choose_kernel(one, automatic(), shipped_machine("h200"), round_robin(one)).raster_group == 1);
  // The scenario's group wins.
  KernelSpec given = automatic();
  given.raster_group = 1;
  const KernelChoice k = choose_kernel(big, given, shipped_machine("h200"), round_robin(big));
  CHECK(k.raster_group == 1);
  CHECK_THAT(k.reason, Catch::Contains("raster_group 1 (scenario)"));
  // AITER's kernels launch block-major grids (CK gridwise_moe_gemm: blockIdx.x
  // the N tile, blockIdx.y the block): group 1 where the rule above gives 16;
  // a scenario's group still wins.
  KernelSpec aiter = automatic();
  aiter.source = KernelCode::aiter;
  const KernelChoice a = choose_kernel(big, aiter, shipped_machine("mi300x"), round_robin(big));
  CHECK(a.raster_group == 1);
  CHECK_THAT(a.reason, Catch::Contains("raster_group 1 (AITER's kernels: block-major grids)"));
  aiter.raster_group = 4;
  CHECK(choose_kernel(big, aiter, shipped_machine("mi300x"), round_robin(big)).raster_group == 4);
}

TEST_CASE("wgmma_tile: the sm_90a kernels' rule", "[kernel]") {
  MachineSpec m = shipped_machine("h200");
  m.kernels.matrix_instructions = MatrixInstructions::wgmma;
  // 128 rows: two warpgroups of 64 rows, each all N columns.
  CHECK(wgmma_tile(m, {256, 128, 256, 64}, DType::bf16));       // 128-byte rows, N 256: 128 acc
  CHECK_FALSE(wgmma_tile(m, {256, 128, 256, 64}, DType::fp8_e4m3));  // 64-byte rows, but 2 x 128 acc
  CHECK(wgmma_tile(m, {256, 128, 128, 128}, DType::fp8_e4m3));  // 128-byte rows, 2 x 64 acc
  CHECK_FALSE(wgmma_tile(m, {256, 128, 128, 128}, DType::bf16));  // 256-byte rows: no swizzle mode
  CHECK(wgmma_tile(m, {256, 128, 128, 32}, DType::bf16));       // 64-byte rows
  // 64 rows: the warpgroups split N.
  CHECK(wgmma_tile(m, {256, 64, 128, 128}, DType::fp8_e4m3));   // 64 columns each
  CHECK(wgmma_tile(m, {256, 64, 64, 64}, DType::bf16));         // 32 columns each
  CHECK_FALSE(wgmma_tile(m, {256, 32, 64, 128}, DType::fp8_e4m3));  // wgmma needs 64 rows
  CHECK_FALSE(wgmma_tile(m, {128, 128, 128, 64}, DType::bf16));  // two warpgroups of 128 threads
  CHECK_FALSE(wgmma_tile(m, {256, 128, 128, 64}, DType::mxfp4));
  m.kernels.matrix_instructions = MatrixInstructions::mma_sync;
  CHECK_FALSE(wgmma_tile(m, {256, 128, 256, 64}, DType::bf16));
}

TEST_CASE("wgmma machines: their default tiles, 8-bit blocks of 64, at least 3 buffers", "[kernel]") {
  const MachineSpec h200 = shipped_machine("h200");
  REQUIRE(h200.kernels.matrix_instructions == MatrixInstructions::wgmma);
  // Mixtral prefill bf16: M 128 -> the warp-specialized 384x128x256x64, the wgmma depth (4).
  REQUIRE(h200.kernels.warp_specialized);
  LayerShape s = shape(4096, 4096, 14336, 8, 2);
  KernelChoice k = choose_kernel(s, automatic(), h200, round_robin(s));
  CHECK(k.block_m == 128);
  CHECK(k.gate_up_tile == KernelTile{384, 128, 256, 64});
  CHECK(k.down_tile == KernelTile{384, 128, 256, 64});
  CHECK(wgmma_tile(h200, k.gate_up_tile, s.dtype));
  CHECK(ws_tile(h200, k.gate_up_tile, s.dtype));
  CHECK(k.pipeline_stages == h200.kernels.wgmma_pipeline_stages);
  // ... whatever K: a short gate/up K (H 2048, as Qwen3-30B) too.
  const LayerShape short_k = shape(4096, 2048, 768, 128, 8);
  CHECK(choose_kernel(short_k, automatic(), h200, round_robin(short_k)).gate_up_tile ==
        KernelTile{384, 128, 256, 64});
  // Without the warp-specialized loop: the 256-thread 128x256x64, and for a
  // short K 128x128x64 on 3 buffers, two per SM ...
  MachineSpec plain = h200;
  plain.kernels.warp_specialized = false;
  CHECK_FALSE(ws_tile(plain, KernelTile{384, 128, 256, 64}, s.dtype));
  CHECK(choose_kernel(s, automatic(), plain, round_robin(s)).gate_up_tile == KernelTile{256, 128, 256, 64});
  const KernelChoice ks = choose_kernel(short_k, automatic(), plain, round_robin(short_k));
  CHECK(ks.block_m == 128);
  CHECK(ks.gate_up_tile == KernelTile{256, 128, 128, 64});
  CHECK(ks.pipeline_stages == kWgmmaMinStages);
  CHECK_THAT(ks.reason, Catch::Contains("two per SM"));
  // ... but not at one block per expert (2048 tokens: 128 rows each).
  const LayerShape one_block = shape(2048, 2048, 768, 128, 8);
  const KernelChoice kb = choose_kernel(one_block, automatic(), plain, round_robin(one_block));
  CHECK(kb.block_m == 128);
  CHECK(kb.gate_up_tile == KernelTile{256, 128, 256, 64});
  // The same in fp8: 128x128x128.
  s.dtype = DType::fp8_e4m3;
  s.weight_dtype = s.dtype;
  s.quant = Quant::per_token;
  k = choose_kernel(s, automatic(), h200, round_robin(s));
  CHECK(k.gate_up_tile == KernelTile{256, 128, 128, 128});
  // fp8 decode: the roofline picks M 32 (a tie), raised to 64 with the M 64 wgmma tile.
  s.tokens = 16;
  k = choose_kernel(s, automatic(), h200, round_robin(s));
  CHECK(k.block_m == 64);
  CHECK(k.gate_up_tile == KernelTile{256, 64, 128, 128});
  CHECK_THAT(k.reason, Catch::Contains("raised to 64"));
  // bf16 decode keeps an mma.sync tile, of M 16 there (kernels.min_block_m),
  // and (Mixtral's down K of 112 tiles of 128, 4 rows per expert) one
  // buffer more than the mma.sync depth.
  s.dtype = DType::bf16;
  s.weight_dtype = s.dtype;
  s.quant = Quant::none;
  k = choose_kernel(s, automatic(), h200, round_robin(s));
  CHECK(k.block_m == 16);
  CHECK(k.gate_up_tile == KernelTile{256, 16, 64, 128});
  CHECK_FALSE(wgmma_tile(h200, k.gate_up_tile, s.dtype));
  CHECK(k.pipeline_stages == h200.kernels.pipeline_stages + 1);
  // A scenario's 2 buffers on a wgmma tile become 3, as the kernels do.
  KernelSpec two = automatic();
  two.gate_up_tile = two.down_tile = {256, 128, 128, 64};
  two.pipeline_stages = 2;
  k = choose_kernel(s, two, h200, round_robin(s));
  CHECK(k.pipeline_stages == kWgmmaMinStages);
  CHECK_THAT(k.reason, Catch::Contains("raised for wgmma"));
  // A forced 1-stage prefill layer gets the plain default tile (the fused
  // kernel's second phase would not fit in LDS beside 128x256x64).
  s.tokens = 4096;
  KernelSpec one = automatic();
  one.stages = 1;
  k = choose_kernel(s, one, h200, round_robin(s));
  CHECK(k.block_m == 128);
  CHECK(k.gate_up_tile == default_tile(128));
  CHECK_THAT(k.reason, Catch::Contains("for the 1-stage kernel"));
}

TEST_CASE("decode tiles: kernels.min_block_m, and a fourth buffer only for decode over a long K", "[kernel]") {
  const MachineSpec h200 = shipped_machine("h200");
  REQUIRE(h200.kernels.min_block_m == 16);
  REQUIRE(h200.kernels.pipeline_stages == 3);
  // Mixtral-8x7B, 1 token: 2 rows on 2 experts; every M ties, the smallest
  // the machine allows wins. down's K: 14336 / 128 = 112 tiles >= 64: 4 buffers.
  const LayerShape mixtral = shape(1, 4096, 14336, 8, 2);
  KernelChoice k = choose_kernel(mixtral, automatic(), h200, round_robin(mixtral));
  CHECK(k.block_m == 16);
  CHECK(k.pipeline_stages == 4);
  CHECK_THAT(k.reason, Catch::Contains("pipeline_stages + 1 for 16-row tiles over a long K"));
  // The default machines keep 32, as AITER's tables, and their depth.
  const MachineSpec mi300x = shipped_machine("mi300x");
  REQUIRE(mi300x.kernels.min_block_m == 32);
  CHECK(choose_kernel(mixtral, automatic(), mi300x, round_robin(mixtral)).block_m == 32);
  // Qwen3-30B, 1 token: K 2048 / 128 = 16 and 768 / 128 = 6 tiles: the machine's 3.
  const LayerShape qwen = shape(1, 2048, 768, 128, 8);
  k = choose_kernel(qwen, automatic(), h200, round_robin(qwen));
  CHECK(k.block_m == 16);
  CHECK(k.pipeline_stages == 3);
  // A forced 16-row tile at 4096 tokens (1024 rows per expert): not decode, 3.
  const LayerShape prefill = shape(4096, 4096, 14336, 8, 2);
  KernelSpec forced = automatic();
  forced.gate_up_tile = forced.down_tile = {256, 16, 64, 128};
  k = choose_kernel(prefill, forced, h200, round_robin(prefill));
  CHECK(k.block_m == 16);
  CHECK(k.pipeline_stages == 3);
}
