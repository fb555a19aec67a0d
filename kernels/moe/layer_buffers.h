// The device memory of one MoE layer and the layer's kernel sequence, shared
// by the GPU runner (kernels/runner/tdmsim_gpu.cpp) and the C API's gpu
// backend library (kernels/runner/gpu_backend.cpp). Header-only: both are
// compiled by the vendor's compiler driver alone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/hip/hip_portability.h"
#include "kernels/moe/moe_case.h"
#include "kernels/moe/moe_gpu.h"

namespace tdmsim::gpu {

template <class T>
T* device_alloc(std::size_t n) {
  T* p = nullptr;
  if (n == 0) n = 1;
  TDMSIM_HIP_CHECK(hipMalloc(&p, n * sizeof(T)));
  return p;
}

template <class T>
std::vector<T> download(const T* p, std::size_t n) {
  std::vector<T> v(n);
  if (n) TDMSIM_HIP_CHECK(hipMemcpy(v.data(), p, n * sizeof(T), hipMemcpyDeviceToHost));
  return v;
}

template <class T>
void upload(T* p, const std::vector<T>& v) {
  if (!v.empty()) TDMSIM_HIP_CHECK(hipMemcpy(p, v.data(), v.size() * sizeof(T), hipMemcpyHostToDevice));
}

// Element and scale counts of one copy of the expert weights.
struct WeightSizes {
  std::size_t w13_elems = 0, w2_elems = 0, w13_scales = 0, w2_scales = 0, esize = 2;
};

inline WeightSizes weight_sizes(const LayerDims& d) {
  WeightSizes z;
  z.esize = d.fp8 ? 1 : 2;
  z.w13_elems = std::size_t{d.experts_fused} * 2 * d.inter * d.hidden;
  z.w2_elems = std::size_t{d.experts_fused} * d.hidden * d.inter;
  if (d.fp8) {
    z.w13_scales = d.quant == Quant::block_128 ? std::size_t{d.experts_fused} * 2 * d.ib() * d.hb()
                                               : std::size_t{d.experts_fused} * 2 * d.inter;
    z.w2_scales = d.quant == Quant::block_128 ? std::size_t{d.experts_fused} * d.hb() * d.ib()
                                              : std::size_t{d.experts_fused} * d.hidden;
  }
  return z;
}

inline Weights alloc_weights(const LayerDims& d) {
  const WeightSizes z = weight_sizes(d);
  Weights w;
  w.w13 = device_alloc<std::uint8_t>(z.w13_elems * z.esize);
  w.w2 = device_alloc<std::uint8_t>(z.w2_elems * z.esize);
  w.w13_scale = d.fp8 ? device_alloc<float>(z.w13_scales) : nullptr;
  w.w2_scale = d.fp8 ? device_alloc<float>(z.w2_scales) : nullptr;
  return w;
}

// Rows of the routed layout, the sort's block bound and the intermediate's elements.
inline std::uint32_t layer_rows(const MoeCase& c, const LayerDims& d) { return c.tokens * d.slots; }
inline std::uint32_t layer_max_blocks(const MoeCase& c) { return c.capacity / c.block_m + 1; }
inline std::size_t layer_inter_elems(const MoeCase& c) { return std::size_t{c.padded_rows} * c.inter; }

// Activations, routing and work buffers (the router's are left null).
inline Buffers alloc_buffers(const MoeCase& c, const LayerDims& d) {
  const std::size_t esize = d.fp8 ? 1 : 2;
  const std::uint32_t rows = layer_rows(c, d);
  Buffers b;
  b.x = device_alloc<std::uint8_t>(std::size_t{c.tokens} * c.hidden * esize);
  b.x_scale = d.fp8 ? device_alloc<float>(std::size_t{c.tokens} * d.hb()) : nullptr;
  b.topk_ids = device_alloc<std::uint32_t>(std::size_t{c.tokens} * c.top_k);
  b.topk_weights = device_alloc<float>(std::size_t{c.tokens} * c.top_k);
  b.fused_expert = device_alloc<std::uint32_t>(rows);
  b.fused_weight = device_alloc<float>(rows);
  b.sorted_rows = device_alloc<std::uint32_t>(std::max(rows, c.capacity));
  b.sorted_weights = device_alloc<float>(std::max(rows, c.capacity));
  b.block_expert = device_alloc<std::uint32_t>(layer_max_blocks(c));
  b.expert_first_block = device_alloc<std::uint32_t>(d.experts_fused + 1);
  b.expert_rows = device_alloc<std::uint32_t>(d.experts_fused);
  b.chunk_counts = device_alloc<std::uint32_t>(std::size_t{(rows + 1023) / 1024} * d.experts_fused);
  b.layout_info = device_alloc<std::uint32_t>(2);
  const std::size_t inter_elems = layer_inter_elems(c);
  b.inter = device_alloc<std::uint16_t>(inter_elems);
  if (d.fp8) {
    b.inter_q = device_alloc<std::uint8_t>(inter_elems);
    b.inter_scale = device_alloc<float>(std::size_t{c.padded_rows} * d.ib());
  }
  if (c.stages == 2 && c.split_k > 1) {
    b.partials = device_alloc<float>(std::size_t{c.split_k} * c.padded_rows * 2 * c.inter);
  }
  b.y = device_alloc<float>(std::size_t{c.tokens} * c.hidden);
  return b;
}

// Frees what alloc_weights / alloc_buffers (and a router setup) allocated.
inline void free_weights(Weights& w) {
  for (void* p : {w.w13, static_cast<void*>(w.w13_scale), w.w2, static_cast<void*>(w.w2_scale)}) {
    if (p) (void)hipFree(p);
  }
  w = Weights{};
}

inline void free_buffers(Buffers& b) {
  for (void* p : {b.x, static_cast<void*>(b.x_scale), static_cast<void*>(b.topk_ids),
                  static_cast<void*>(b.topk_weights), static_cast<void*>(b.fused_expert),
                  static_cast<void*>(b.fused_weight), static_cast<void*>(b.sorted_rows),
                  static_cast<void*>(b.sorted_weights), static_cast<void*>(b.block_expert),
                  static_cast<void*>(b.expert_first_block), static_cast<void*>(b.expert_rows),
                  static_cast<void*>(b.chunk_counts), static_cast<void*>(b.layout_info),
                  static_cast<void*>(b.inter), static_cast<void*>(b.inter_q),
                  static_cast<void*>(b.inter_scale), static_cast<void*>(b.partials),
                  static_cast<void*>(b.y), static_cast<void*>(b.logits),
                  static_cast<void*>(b.router_w), static_cast<void*>(b.router_bias),
                  static_cast<void*>(b.correction_bias)}) {
    if (p) (void)hipFree(p);
  }
  b = Buffers{};
}

// The layer after routing: zero y, sort, the expert stages. `mark(name)` is
// called before the first kernel with "" and after each kernel with its name
// (the runner records an event there).
template <class Mark>
void run_layer(const MoeCase& c, const LayerDims& d, const Weights& w, Buffers& b, hipStream_t s,
               Mark&& mark) {
  mark("");
  TDMSIM_HIP_CHECK(hipMemsetAsync(b.y, 0, std::size_t{c.tokens} * c.hidden * 4, s));
  mark("zero_y");
  launch_sort(c, d, b, s);
  mark("sort");
  if (c.stages == 1) {
    launch_fused(c, d, w, b, s);
    mark("fused");
    return;
  }
  launch_gate_up(c, d, w, b, s);
  mark("gate_up");
  if (c.split_k > 1) {
    launch_splitk_reduce(c, d, b, s);
    mark("splitk_reduce");
  }
  if (d.fp8) {
    launch_quant_inter(c, d, b, s);
    mark("quant_inter");
  }
  launch_down(c, d, w, b, s);
  mark("down");
}

}  // namespace tdmsim::gpu
