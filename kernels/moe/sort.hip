// Fused routing and the padded block layout ("moe_align_block_size"),
// bit-identical to plan::fuse_routing and plan::sort_into_blocks: each fused
// expert's rows in increasing row id (token * slots + slot), padded to a
// multiple of block_m with the sentinel tokens * slots, experts in order.
// The order within an expert is what makes this stable and deterministic
// (vLLM's kernel places rows with atomics in any order); it is computed in
// chunks of kChunk rows: per-chunk counts, a per-expert scan over chunks,
// then each chunk places its rows, warp by warp, with ranks from shuffles.
// A layer whose rows fit one chunk (decode) runs all of it in one workgroup
// instead (sort_one_kernel): one launch instead of four, and no round trips
// through global memory between the phases.
#include "descriptors/plan/kernel_rules.h"
#include "kernels/moe/moe_gpu.h"

namespace tdmsim::gpu {
namespace {

constexpr std::uint32_t kChunk = plan::rules::kSortChunk;  // rows per workgroup in count and place
constexpr std::uint32_t kMaxFused = plan::rules::kSortMaxFused;
// -DTDMSIM_SORT_ONE_KERNEL=0 keeps the four kernels at every size (to time
// one path against the other on the GPU).
#ifndef TDMSIM_SORT_ONE_KERNEL
#define TDMSIM_SORT_ONE_KERNEL 1
#endif
constexpr bool kSortOneKernel = TDMSIM_SORT_ONE_KERNEL != 0;

// Row i's fused expert (kRemote for another GPU's) and weight: a routed
// slot's pick, or a shared expert's slot (weight 1).
__device__ __forceinline__ void fuse_row(const LayerDims& d, const std::uint32_t* ids, const float* w,
                                         std::uint32_t i, std::uint32_t& e, float& wt) {
  const std::uint32_t t = i / d.slots, s = i % d.slots;
  if (s < d.top_k) {
    const std::uint32_t g = ids[std::size_t{t} * d.top_k + s];
    e = g < d.experts_local ? g : kRemote;
    wt = w[std::size_t{t} * d.top_k + s];
  } else {
    e = d.experts_local + (s - d.top_k);
    wt = 1.0f;
  }
}

// Inclusive prefix sum of x over the warp's lanes.
__device__ __forceinline__ std::uint32_t warp_inclusive_scan(std::uint32_t x, unsigned lane) {
  for (unsigned o = 1; o < 32; o <<= 1) {
    const std::uint32_t y = __shfl_up_sync(0xFFFFFFFFu, x, o);
    if (lane >= o) x += y;
  }
  return x;
}

// The lane's rank among the lanes of its warp with the same expert e (those
// before it), and how many lanes have e.
__device__ __forceinline__ void warp_rank(std::uint32_t e, unsigned lane, std::uint32_t& rank,
                                          std::uint32_t& same) {
  rank = 0;
  same = 0;
  for (unsigned j = 0; j < 32; ++j) {
    const std::uint32_t other = __shfl_sync(0xFFFFFFFFu, e, j);
    if (other == e) {
      rank += j < lane;
      ++same;
    }
  }
}

// Fused routing, then the sorted arrays set to "all padding".
__global__ void fuse_kernel(LayerDims d, std::uint32_t capacity, const std::uint32_t* ids,
                            const float* w, std::uint32_t* fused_expert, float* fused_weight,
                            std::uint32_t* sorted_rows, float* sorted_weights) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t rows = d.tokens * d.slots;
  if (i < rows) fuse_row(d, ids, w, i, fused_expert[i], fused_weight[i]);
  if (i < capacity) {
    sorted_rows[i] = rows;  // the sentinel
    sorted_weights[i] = 0.0f;
  }
}

__global__ void count_kernel(LayerDims d, const std::uint32_t* fused_expert,
                             std::uint32_t* chunk_counts) {
  __shared__ std::uint32_t counts[kMaxFused];
  for (std::uint32_t e = threadIdx.x; e < d.experts_fused; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  const std::uint32_t rows = d.tokens * d.slots;
  const std::uint32_t i = blockIdx.x * kChunk + threadIdx.x;
  if (i < rows && fused_expert[i] != kRemote) atomicAdd(&counts[fused_expert[i]], 1u);
  __syncthreads();
  for (std::uint32_t e = threadIdx.x; e < d.experts_fused; e += blockDim.x) {
    chunk_counts[std::size_t{blockIdx.x} * d.experts_fused + e] = counts[e];
  }
}

// One workgroup: per expert the rows before each chunk (in place of the
// counts), then blocks per expert, their prefix and the block -> expert map.
__global__ void scan_kernel(LayerDims d, std::uint32_t block_m, std::uint32_t chunks,
                            std::uint32_t* chunk_counts, std::uint32_t* expert_rows,
                            std::uint32_t* expert_first_block, std::uint32_t* block_expert,
                            std::uint32_t* layout_info) {
  const std::uint32_t E = d.experts_fused;
  for (std::uint32_t e = threadIdx.x; e < E; e += blockDim.x) {
    std::uint32_t run = 0;
    for (std::uint32_t c = 0; c < chunks; ++c) {
      const std::uint32_t n = chunk_counts[std::size_t{c} * E + e];
      chunk_counts[std::size_t{c} * E + e] = run;
      run += n;
    }
    expert_rows[e] = run;
  }
  __syncthreads();
  // Blocks per expert and their exclusive prefix, blockDim.x experts at a time:
  // a shuffle scan inside each warp, then over the warp totals (one thread
  // walking every expert through global memory was a serial chain of loads).
  __shared__ std::uint32_t warp_total[32];
  __shared__ std::uint32_t carry;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (std::uint32_t base = 0; base < E; base += blockDim.x) {
    const std::uint32_t e = base + threadIdx.x;
    const std::uint32_t v = e < E ? (expert_rows[e] + block_m - 1) / block_m : 0;
    const std::uint32_t x = warp_inclusive_scan(v, lane);
    if (lane == 31) warp_total[warp] = x;
    __syncthreads();
    if (warp == 0) {  // inclusive scan of the warp totals
      const std::uint32_t w = warp_inclusive_scan(lane < warps ? warp_total[lane] : 0, lane);
      if (lane < warps) warp_total[lane] = w;
    }
    __syncthreads();
    if (e < E) expert_first_block[e] = carry + (warp > 0 ? warp_total[warp - 1] : 0) + x - v;
    __syncthreads();
    if (threadIdx.x == 0) carry += warp_total[warps - 1];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    expert_first_block[E] = carry;
    layout_info[0] = carry * block_m;
    layout_info[1] = carry;
  }
  __syncthreads();
  for (std::uint32_t e = threadIdx.x; e < E; e += blockDim.x) {
    for (std::uint32_t blk = expert_first_block[e]; blk < expert_first_block[e + 1]; ++blk) {
      block_expert[blk] = e;
    }
  }
}

// Places the chunk's rows: position = the expert's first padded row + rows of
// this expert in earlier chunks + earlier rows of this expert in this chunk.
// Warps go in order; inside a warp a lane's rank among equal experts comes
// from comparing with the lanes before it.
__global__ void place_kernel(LayerDims d, std::uint32_t block_m, const std::uint32_t* fused_expert,
                             const float* fused_weight, const std::uint32_t* chunk_counts,
                             const std::uint32_t* expert_first_block, std::uint32_t* sorted_rows,
                             float* sorted_weights) {
  __shared__ std::uint32_t next[kMaxFused];
  const std::uint32_t E = d.experts_fused;
  for (std::uint32_t e = threadIdx.x; e < E; e += blockDim.x) {
    next[e] = expert_first_block[e] * block_m + chunk_counts[std::size_t{blockIdx.x} * E + e];
  }
  __syncthreads();
  const std::uint32_t rows = d.tokens * d.slots;
  const std::uint32_t i = blockIdx.x * kChunk + threadIdx.x;
  const std::uint32_t e = i < rows ? fused_expert[i] : kRemote;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  std::uint32_t rank, same;
  warp_rank(e, lane, rank, same);
  for (unsigned w = 0; w < blockDim.x / 32; ++w) {
    if (warp == w) {
      const std::uint32_t pos = e != kRemote ? next[e] + rank : 0;
      __syncwarp();  // every lane has read its cursor before any lane moves one
      if (e != kRemote) {
        sorted_rows[pos] = i;
        sorted_weights[pos] = fused_weight[i];
        if (rank + 1 == same) next[e] += same;  // the last of its kind moves the cursor
      }
    }
    __syncthreads();
  }
}

// The whole sort in one workgroup, for rows <= kChunk (decode): the four
// kernels' phases, separated by barriers instead of launches, with the same
// result. blockDim.x >= rows and >= experts_fused (launch_sort's choice), so
// a thread owns one row and one expert, and the fused row stays in registers
// (fused_expert/fused_weight are the four kernels' scratch: not written).
__global__ void __launch_bounds__(kChunk)
    sort_one_kernel(LayerDims d, std::uint32_t block_m, std::uint32_t capacity,
                    const std::uint32_t* ids, const float* w, std::uint32_t* sorted_rows,
                    float* sorted_weights, std::uint32_t* expert_rows,
                    std::uint32_t* expert_first_block, std::uint32_t* block_expert,
                    std::uint32_t* layout_info) {
  __shared__ std::uint32_t next[kMaxFused];  // rows per expert, then its cursor
  __shared__ std::uint32_t warp_total[32];
  const std::uint32_t rows = d.tokens * d.slots, E = d.experts_fused, i = threadIdx.x;
  const unsigned lane = i % 32, warp = i / 32, warps = blockDim.x / 32;
  // Fused routing (as fuse_kernel), the sorted arrays set to "all padding",
  // the counters cleared.
  std::uint32_t e = kRemote;
  float wt = 0.0f;
  if (i < rows) fuse_row(d, ids, w, i, e, wt);
  for (std::uint32_t j = i; j < capacity; j += blockDim.x) {
    sorted_rows[j] = rows;  // the sentinel
    sorted_weights[j] = 0.0f;
  }
  if (i < E) next[i] = 0;
  __syncthreads();
  // Counts (as count_kernel).
  if (e != kRemote) atomicAdd(&next[e], 1u);
  __syncthreads();
  // Blocks per expert and their exclusive prefix in one pass (as scan_kernel's
  // shuffle scan), the block -> expert map, and each expert's cursor.
  const std::uint32_t n = i < E ? next[i] : 0;
  const std::uint32_t v = (n + block_m - 1) / block_m;
  const std::uint32_t x = warp_inclusive_scan(v, lane);
  if (lane == 31) warp_total[warp] = x;
  __syncthreads();
  if (warp == 0) {  // inclusive scan of the warp totals
    const std::uint32_t t = warp_inclusive_scan(lane < warps ? warp_total[lane] : 0, lane);
    if (lane < warps) warp_total[lane] = t;
  }
  __syncthreads();
  if (i < E) {
    const std::uint32_t f = (warp > 0 ? warp_total[warp - 1] : 0) + x - v;
    expert_rows[i] = n;
    expert_first_block[i] = f;
    for (std::uint32_t blk = f; blk < f + v; ++blk) block_expert[blk] = i;
    next[i] = f * block_m;  // only thread i read next[i] in this phase
  }
  if (i == 0) {
    const std::uint32_t blocks = warp_total[warps - 1];
    expert_first_block[E] = blocks;
    layout_info[0] = blocks * block_m;
    layout_info[1] = blocks;
  }
  __syncthreads();
  // Placement (as place_kernel): the rank among equal experts in the warp by
  // shuffles, the warps that hold rows in turn, so rows keep row-id order.
  std::uint32_t rank, same;
  warp_rank(e, lane, rank, same);
  const unsigned busy = (rows + 31) / 32;
  for (unsigned t = 0; t < busy; ++t) {
    if (warp == t) {
      const std::uint32_t pos = e != kRemote ? next[e] + rank : 0;
      __syncwarp();  // every lane has read its cursor before any lane moves one
      if (e != kRemote) {
        sorted_rows[pos] = i;
        sorted_weights[pos] = wt;
        if (rank + 1 == same) next[e] += same;  // the last of its kind moves the cursor
      }
    }
    if (t + 1 < busy) __syncthreads();  // the next warp reads the moved cursors
  }
}

}  // namespace

void launch_sort(const MoeCase& c, const LayerDims& d, Buffers& b, hipStream_t s) {
  if (d.experts_fused > kMaxFused) {
    std::fprintf(stderr, "sort: %u fused experts exceed the sort kernel's %u\n", d.experts_fused,
                 kMaxFused);
    TDMSIM_GPU_EXIT(2);
  }
  const std::uint32_t rows = d.tokens * d.slots;
  if (kSortOneKernel && plan::rules::sort_one_kernel(rows, d.experts_fused)) {
    const std::uint32_t threads = plan::rules::sort_one_threads(rows, d.experts_fused, c.capacity);
    hipLaunchKernelGGL(sort_one_kernel, dim3(1), dim3(threads), 0, s, d, c.block_m, c.capacity,
                       b.topk_ids, b.topk_weights, b.sorted_rows, b.sorted_weights,
                       b.expert_rows, b.expert_first_block, b.block_expert, b.layout_info);
    TDMSIM_HIP_CHECK(hipGetLastError());
    return;
  }
  const std::uint32_t n = rows > c.capacity ? rows : c.capacity;
  hipLaunchKernelGGL(fuse_kernel, dim3((n + 255) / 256), dim3(256), 0, s, d, c.capacity,
                     b.topk_ids, b.topk_weights, b.fused_expert, b.fused_weight, b.sorted_rows,
                     b.sorted_weights);
  const std::uint32_t chunks = (rows + kChunk - 1) / kChunk;
  hipLaunchKernelGGL(count_kernel, dim3(chunks), dim3(kChunk), 0, s, d, b.fused_expert,
                     b.chunk_counts);
  hipLaunchKernelGGL(scan_kernel, dim3(1), dim3(256), 0, s, d, c.block_m, chunks, b.chunk_counts,
                     b.expert_rows, b.expert_first_block, b.block_expert, b.layout_info);
  hipLaunchKernelGGL(place_kernel, dim3(chunks), dim3(kChunk), 0, s, d, c.block_m,
                     b.fused_expert, b.fused_weight, b.chunk_counts, b.expert_first_block,
                     b.sorted_rows, b.sorted_weights);
  TDMSIM_HIP_CHECK(hipGetLastError());
}

}  // namespace tdmsim::gpu
