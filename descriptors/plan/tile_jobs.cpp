// Tile jobs of each stage, and the element ranges a job covers. The order is
// rules::job_at's (groups of kernel.raster_group blocks; in a group the N
// tile, then the block, then the K split): deterministic, and the order in
// which a software grid's workgroup ids map onto the layout.
#include <algorithm>
#include <cassert>

#include "descriptors/plan/moe_plan.h"

namespace tdmsim::plan {
namespace {

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

const KernelTile& stage_tile(const KernelChoice& kernel, Stage stage) {
  return stage == Stage::down ? kernel.down_tile : kernel.gate_up_tile;
}

// N tiles of a stage: gate_up and fused cover 2I as N/2 columns of gate plus
// the same N/2 of up per tile (the fused kernel then takes its slice of I
// through down into every H column); down writes N columns of H per tile.
std::uint32_t n_tiles(const LayerShape& shape, const KernelChoice& kernel, Stage stage) {
  const KernelTile& tile = stage_tile(kernel, stage);
  return stage == Stage::down ? ceil_div(shape.hidden, tile.n) : ceil_div(shape.inter, tile.n / 2);
}

// The K extent a stage's splits divide.
std::uint32_t k_extent(const LayerShape& shape, Stage stage) {
  return stage == Stage::down ? shape.inter : shape.hidden;
}

}  // namespace

std::vector<TileJob> tile_jobs(const LayerShape& shape, const BlockLayout& layout,
                               const KernelChoice& kernel, Stage stage) {
  assert(layout.block_m == kernel.block_m);
  const std::uint32_t blocks = static_cast<std::uint32_t>(layout.block_expert.size());
  const std::uint32_t n = n_tiles(shape, kernel, stage);
  const std::uint32_t splits = stage_splits(kernel, stage);
  const std::uint32_t group = std::max(1u, kernel.raster_group);
  const std::uint64_t count = std::uint64_t{blocks} * n * splits;
  std::vector<TileJob> jobs;
  jobs.reserve(count);
  for (std::uint64_t id = 0; id < count; ++id) {
    const rules::JobAt at = rules::job_at(static_cast<std::uint32_t>(id), blocks, n, splits, group);
    const std::uint32_t e = layout.block_expert[at.block];
    // Padding sits only at an expert's tail, so a block's real rows are the
    // expert's rows left after its earlier blocks, at most block_m.
    const std::uint32_t before = (at.block - layout.expert_first_block[e]) * layout.block_m;
    const std::uint32_t valid = std::min(layout.block_m, layout.expert_rows[e] - before);
    jobs.push_back({stage, at.block, e, at.n_tile, at.split, valid});
  }
  return jobs;
}

Range job_n_range(const LayerShape& shape, const KernelChoice& kernel, const TileJob& job) {
  const KernelTile& tile = stage_tile(kernel, job.stage);
  if (job.stage != Stage::down) {  // gate_up and fused: a slice of the intermediate
    const std::uint32_t half = tile.n / 2;
    return {job.n_tile * half, std::min(shape.inter, (job.n_tile + 1) * half)};
  }
  return {job.n_tile * tile.n, std::min(shape.hidden, (job.n_tile + 1) * tile.n)};
}

KernelTile model_gate_up_tile(const KernelTile& named, KernelCode code) {
  KernelTile t = named;
  if (code == KernelCode::aiter && !t.is_auto()) t.n *= 2;
  return t;
}

KernelTile named_gate_up_tile(const KernelChoice& kernel) {
  KernelTile t = kernel.gate_up_tile;
  if (kernel.code == KernelCode::aiter && !t.is_auto()) t.n /= 2;
  return t;
}

std::uint32_t stage_splits(const KernelChoice& kernel, Stage stage) {
  if (stage == Stage::fused || (stage == Stage::down && !kernel.split_down)) return 1;
  return kernel.split_k;
}

Range job_k_range(const LayerShape& shape, const KernelChoice& kernel, const TileJob& job) {
  if (job.stage == Stage::fused) return {0, shape.hidden};  // then its I slice into down
  const KernelTile& tile = stage_tile(kernel, job.stage);
  const std::uint32_t extent = k_extent(shape, job.stage);
  const std::uint64_t k_tiles = ceil_div(extent, tile.k);
  const std::uint64_t splits = stage_splits(kernel, job.stage);
  const auto first = static_cast<std::uint32_t>(job.k_split * k_tiles / splits);
  const auto last = static_cast<std::uint32_t>((job.k_split + 1) * k_tiles / splits);
  return {first * tile.k, std::min(extent, last * tile.k)};
}

}  // namespace tdmsim::plan
