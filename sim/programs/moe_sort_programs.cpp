// The sort kernels (moe_align_block_size, and our one- and four-kernel
// sorts of kernels/moe/sort.hip) as tile programs; docs/moe-timing.md.
#include "sim/programs/moe_program_common.h"

#include <algorithm>
#include <utility>

namespace tdmsim::sim::programs::moe_detail {

isa::TileProgram sort_program(const Layer& l, std::uint32_t wg, std::uint32_t wgs) {
  const std::uint64_t rows = std::uint64_t{l.shape.tokens} * l.shape.slots();
  const std::uint64_t first = rows * wg / wgs, last = rows * (wg + 1) / wgs;
  const std::uint64_t out_first = std::uint64_t{l.padded_rows} * wg / wgs;
  const std::uint64_t out_last = std::uint64_t{l.padded_rows} * (wg + 1) / wgs;
  isa::TileProgram p;
  p.threads = 256;
  p.vgprs_per_thread = 32;
  p.lds_bytes = std::max(1u, l.shape.experts_fused()) * 4;  // the expert histogram
  p.prologue_loads.push_back(strided(l.buf.topk_ids + first * 4,
                                     static_cast<std::uint32_t>(std::max<std::uint64_t>(4, (last - first) * 4)), 1, 0));
  p.epilogue_vector_ops = (last - first) * l.sort.ops_per_row +
                          std::uint64_t{l.shape.experts_fused()} * l.sort.ops_per_expert;
  p.extra_time_ps = l.sort_overhead_ps;
  const auto out_bytes = static_cast<std::uint32_t>(std::max<std::uint64_t>(4, (out_last - out_first) * 4));
  p.stores.push_back(strided(l.buf.sorted_ids + out_first * 4, out_bytes, 1, 0));
  p.stores.push_back(strided(l.buf.sorted_weights + out_first * 4, out_bytes, 1, 0));
  if (wg == 0) p.stores.push_back(strided(l.buf.block_experts, std::max(4u, l.blocks * 4), 1, 0));
  return p;
}

// Our sort's four kernels (kernels/moe/sort.hip; counts at kSortChunk, from
// the kernel profile's nvidia.sort).
std::uint64_t sort_rows(const Layer& l) { return std::uint64_t{l.shape.tokens} * l.shape.slots(); }

isa::TileProgram sort_fuse_program(const Layer& l, std::uint32_t wg, std::uint32_t capacity) {
  const std::uint64_t rows = sort_rows(l);
  const std::uint64_t first = std::uint64_t{wg} * kSortThreads, last = first + kSortThreads;
  isa::TileProgram p;
  p.threads = kSortThreads;
  p.vgprs_per_thread = 32;
  p.epilogue_vector_ops = std::uint64_t{kSortThreads} * l.nv.sort.fuse_ops;
  p.epilogue_issue_bound = true;
  const std::uint64_t r0 = std::min(rows, first), r1 = std::min(rows, last);
  if (r1 > r0) {
    const auto bytes = static_cast<std::uint32_t>((r1 - r0) * 4);
    p.prologue_loads.push_back(strided(l.buf.topk_ids + r0 * 4, bytes, 1, 0));
    p.prologue_loads.push_back(strided(l.topk_weights + r0 * 4, bytes, 1, 0));
    p.stores.push_back(strided(l.fused_rows + r0 * 4, bytes, 1, 0));         // fused expert
    p.stores.push_back(strided(l.fused_rows + (rows + r0) * 4, bytes, 1, 0));  // and weight
  }
  const std::uint64_t c0 = std::min<std::uint64_t>(capacity, first), c1 = std::min<std::uint64_t>(capacity, last);
  if (c1 > c0) {
    const auto bytes = static_cast<std::uint32_t>((c1 - c0) * 4);
    p.stores.push_back(strided(l.buf.sorted_ids + c0 * 4, bytes, 1, 0));
    p.stores.push_back(strided(l.buf.sorted_weights + c0 * 4, bytes, 1, 0));
  }
  return p;
}

// What the count and place kernels share: a workgroup per chunk of kSortChunk
// rows (rows [first, first + n)), a thread a row, a counter per expert in LDS.
struct SortChunk {
  std::uint64_t e, first, n;
  isa::TileProgram p;
};
SortChunk sort_chunk(const Layer& l, std::uint32_t chunk) {
  const std::uint64_t rows = sort_rows(l), e = std::max(1u, l.shape.experts_fused());
  const std::uint64_t first = std::uint64_t{chunk} * kSortChunk;
  SortChunk c{e, first, std::min<std::uint64_t>(kSortChunk, rows - first), {}};
  c.p.threads = kSortChunk;
  c.p.vgprs_per_thread = 32;
  c.p.lds_bytes = static_cast<std::uint32_t>(e * 4);
  return c;
}

isa::TileProgram sort_count_program(const Layer& l, std::uint32_t chunk) {
  auto [e, first, n, p] = sort_chunk(l, chunk);
  p.prologue_loads.push_back(strided(l.fused_rows + first * 4, static_cast<std::uint32_t>(n * 4), 1, 0));
  p.epilogue_vector_ops = n * l.nv.sort.count_ops + e * l.nv.sort.count_ops_per_expert;
  p.epilogue_issue_bound = true;
  p.stores.push_back(strided(l.chunk_counts + chunk * e * 4, static_cast<std::uint32_t>(e * 4), 1, 0));
  return p;
}

isa::TileProgram sort_scan_program(const Layer& l, std::uint32_t chunks) {
  const std::uint32_t e = std::max(1u, l.shape.experts_fused());
  isa::TileProgram p;
  p.threads = kSortThreads;
  p.vgprs_per_thread = 32;
  p.lds_bytes = 33 * 4;
  // The walk over the chunks, pass by pass (a thread per expert): a chain of
  // dependent round trips (one iteration each, pipeline depth 1), each a
  // load of the pass's counts in the next chunk.
  const std::uint32_t passes = ceil_div(e, kSortThreads);
  p.pipeline_depth = 1;
  for (std::uint32_t pass = 0; pass < passes; ++pass) {
    isa::Loop walk;
    walk.iterations = chunks;
    const std::uint32_t experts = std::min(kSortThreads, e - pass * kSortThreads);
    walk.loads.push_back(strided(l.chunk_counts + std::uint64_t{pass} * kSortThreads * 4, experts * 4, 1, 0,
                                 static_cast<std::int64_t>(std::uint64_t{e} * 4)));
    p.loops.push_back(std::move(walk));
  }
  p.epilogue_vector_ops = std::uint64_t{e} * l.nv.sort.scan_ops_per_expert;
  p.epilogue_issue_bound = true;
  p.extra_time_ps = l.sort_overhead_ps;
  p.stores.push_back(strided(l.first_block, (e + 1) * 4, 1, 0));
  p.stores.push_back(strided(l.buf.block_experts, std::max(4u, l.blocks * 4), 1, 0));
  return p;
}

isa::TileProgram sort_place_program(const Layer& l, std::uint32_t chunk) {
  auto [e, first, n, p] = sort_chunk(l, chunk);
  const std::uint64_t rows = sort_rows(l);
  p.prologue_loads.push_back(strided(l.chunk_counts + chunk * e * 4, static_cast<std::uint32_t>(e * 4), 1, 0));
  p.prologue_loads.push_back(strided(l.fused_rows + first * 4, static_cast<std::uint32_t>(n * 4), 1, 0));
  // The warps with a row, in turn: each loads its rows' weights, which
  // fuse_kernel has just written (L2 hits), and its stores wait for them
  // before the barrier lets the next warp go: one L2 round trip per warp, as
  // a wait per iteration. (Not as loads: concurrent chains of single-line
  // loads queue behind each other's L2 channel reservations in the model,
  // which the chunks' workgroups on separate SMs do not.)
  const auto& warps = l.chunk_warp_rows[chunk];
  if (!warps.empty()) {
    p.prologue_loads.push_back(strided(l.fused_rows + (rows + warps.front()) * 4,
                                       static_cast<std::uint32_t>(warps.size() * 128), 1, 0));
    isa::Loop turns;
    turns.iterations = static_cast<std::uint32_t>(warps.size());
    turns.wait_ps = l.l2_hit_ps;
    p.loops.push_back(std::move(turns));
  }
  p.epilogue_vector_ops = std::uint64_t{kSortChunk} * (l.nv.sort.place_rank_ops + l.nv.sort.place_step_ops);
  p.epilogue_issue_bound = true;
  // The chunk's rows land in their experts' runs of the sorted arrays
  // (approximated as one run of as many entries).
  const auto bytes = static_cast<std::uint32_t>(std::max<std::uint64_t>(4, n * 4));
  const std::uint64_t at = std::min<std::uint64_t>(first, l.padded_rows) * 4;
  p.stores.push_back(strided(l.buf.sorted_ids + at, bytes, 1, 0));
  p.stores.push_back(strided(l.buf.sorted_weights + at, bytes, 1, 0));
  return p;
}

isa::TileProgram sort_one_program(const Layer& l, std::uint32_t capacity) {
  const std::uint64_t rows = sort_rows(l);
  const std::uint32_t e = std::max(1u, l.shape.experts_fused());
  isa::TileProgram p;
  p.threads = plan::rules::sort_one_threads(rows, e, capacity);  // launch_sort's block size
  p.vgprs_per_thread = 32;
  p.lds_bytes = (1024 + 32) * 4;  // the counters / cursors (kMaxFused) and the warp totals
  const auto row_bytes = static_cast<std::uint32_t>(std::max<std::uint64_t>(4, rows * 4));
  p.prologue_loads.push_back(strided(l.buf.topk_ids, row_bytes, 1, 0));
  p.prologue_loads.push_back(strided(l.topk_weights, row_bytes, 1, 0));
  // The busiest expert's blocks: its thread writes them into the map alone.
  std::uint64_t most = 0, run = 0;
  for (std::size_t b = 0; b < l.block_expert.size(); ++b) {
    run = b > 0 && l.block_expert[b] == l.block_expert[b - 1] ? run + 1 : 1;
    most = std::max(most, run);
  }
  const std::uint64_t passes = ceil_div(capacity, p.threads);
  const std::uint64_t turns = ceil_div(rows, 32);
  const std::uint64_t per_thread = l.nv.sort.one_fuse_ops + passes * l.nv.sort.one_fill_ops_per_pass + l.nv.sort.one_count_ops +
                                   l.nv.sort.one_scan_ops + most * l.nv.sort.one_map_ops_per_block + l.nv.sort.one_rank_ops +
                                   turns * l.nv.sort.one_turn_ops + (turns > 0 ? l.nv.sort.one_own_turn_ops : 0);
  p.epilogue_vector_ops = std::uint64_t{p.threads} * per_thread;
  p.epilogue_issue_bound = true;
  // What the counts leave out of this path (kernels.sort_one_overhead, fitted
  // on the one-kernel layers alone: the four kernels' sort_overhead also
  // covers their extra launches and scans, which this path does not have).
  p.extra_time_ps = l.sort_one_overhead_ps;
  const auto cap_bytes = std::max(4u, capacity * 4);
  p.stores.push_back(strided(l.buf.sorted_ids, cap_bytes, 1, 0));  // padding, then the rows
  p.stores.push_back(strided(l.buf.sorted_weights, cap_bytes, 1, 0));
  p.stores.push_back(strided(l.first_block, (e + 1) * 4, 1, 0));
  p.stores.push_back(strided(l.chunk_counts, e * 4, 1, 0));  // expert_rows
  p.stores.push_back(strided(l.buf.block_experts, std::max(4u, l.blocks * 4), 1, 0));
  return p;
}

// The sort kernels of the software path and their scratch (allocated in this
// order, after the layer's buffers): our sort (kernels/moe/sort.hip
// launch_sort, machines whose kernels are ours) as one kernel when the rows
// fit one chunk, else fuse, count, scan, place; AITER-style machines'
// moe_align_block_size.
void add_sort_kernels(const std::shared_ptr<Layer>& l, AddressSpace& as, const MoePlan& plan,
                      const MachineSpec& machine, MoeKernels& k) {
  const auto& s = plan.shape;
  const std::uint64_t rows = std::uint64_t{s.tokens} * s.slots();
  if (l->mma_sync) {
    // Our sort (kernels/moe/sort.hip launch_sort): one kernel when the rows
    // fit one chunk, else fuse, count, scan, place.
    const std::uint32_t capacity = plan.layout.capacity;
    const std::uint32_t chunks = std::max(1u, ceil_div(rows, kSortChunk));
    l->l2_hit_ps = machine.memory.l2.hit_latency.ps;
    if (l->topk_weights == 0) l->topk_weights = as.allocate(std::max<std::uint64_t>(1, rows) * 4);
    if (sort_one_kernel(rows, s.experts_fused())) {
      l->chunk_counts = as.allocate(std::max<std::uint64_t>(1, s.experts_fused()) * 4);  // expert_rows
      l->first_block = as.allocate((std::uint64_t{s.experts_fused()} + 1) * 4);
      k.kernels.push_back(launch("moe_sort_one", 1, [l, capacity](std::uint32_t) {
        return sort_one_program(*l, capacity);
      }));
      k.stage.push_back("sort");
    } else {
      l->fused_rows = as.allocate(std::max<std::uint64_t>(1, rows) * 8);
      l->chunk_counts = as.allocate(std::uint64_t{chunks} * std::max(1u, s.experts_fused()) * 4);
      l->first_block = as.allocate((std::uint64_t{s.experts_fused()} + 1) * 4);
      // Per chunk, the first local row of each warp that has one (a remote
      // pick, under expert parallelism, skips the load).
      l->chunk_warp_rows.assign(chunks, {});
      std::vector<bool> local(rows, false);
      for (std::uint32_t r = 0; r < plan.layout.padded_rows; ++r) {
        if (plan.layout.sorted_rows[r] != plan.layout.sentinel) local[plan.layout.sorted_rows[r]] = true;
      }
      for (std::uint64_t r = 0; r < rows; ++r) {
        auto& warps = l->chunk_warp_rows[r / kSortChunk];
        if (local[r] && (warps.empty() || warps.back() / 32 != r / 32)) warps.push_back(static_cast<std::uint32_t>(r));
      }
      const std::uint32_t fuse_wgs = std::max(1u, ceil_div(std::max<std::uint64_t>(rows, capacity), kSortThreads));
      k.kernels.push_back(launch("moe_sort_fuse", fuse_wgs, [l, capacity](std::uint32_t wg) {
        return sort_fuse_program(*l, wg, capacity);
      }));
      k.kernels.push_back(launch("moe_sort_count", chunks, [l](std::uint32_t c) { return sort_count_program(*l, c); }));
      k.kernels.push_back(launch("moe_sort_scan", 1, [l, chunks](std::uint32_t) { return sort_scan_program(*l, chunks); }));
      k.kernels.push_back(launch("moe_sort_place", chunks, [l](std::uint32_t c) { return sort_place_program(*l, c); }));
      for (int i = 0; i < 4; ++i) k.stage.push_back("sort");
    }
  } else {
    const std::uint32_t sort_wgs = std::max(1u, ceil_div(rows, l->sort.rows_per_workgroup));
    k.kernels.push_back(launch("moe_sort", sort_wgs, [l, sort_wgs](std::uint32_t wg) {
      return sort_program(*l, wg, sort_wgs);
    }));
    k.stage.push_back("sort");
  }
}

}  // namespace tdmsim::sim::programs::moe_detail
