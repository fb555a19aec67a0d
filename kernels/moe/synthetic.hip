// The layer's inputs on the device, regenerated from the seed with the same
// counter-based generator as the emulator (descriptors/plan/tensor_rng.h) and
// quantised by the emulator's rules (docs/emulator.md "Quantisation"): bf16
// rounding, or e4m3 with per-token / 1x128 activation scales and per-channel /
// 128x128 weight scales. Nothing here is timed.
#include <cmath>

#include "descriptors/plan/synthetic_tensors.h"
#include "kernels/hip/gpu_numerics.h"
#include "kernels/moe/moe_gpu.h"

namespace tdmsim::gpu {
namespace {

using plan::TensorId;
using plan::tensor_value;

constexpr unsigned kBlock = 256;

// max over the workgroup of every thread's `v` (NaN-free inputs).
__device__ float block_max(float v) {
  __shared__ float part[kBlock / 32];
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
  __syncthreads();
  float m = 0.0f;
  for (unsigned i = 0; i < kBlock / 32; ++i) m = fmaxf(m, part[i]);
  __syncthreads();  // `part` is reused by the next call
  return m;
}

// One row of `cols` values from `value(col)`, written as bf16 or quantised
// e4m3 with one scale per row (per_token) or per 128 columns (block_128);
// a whole row per workgroup.
template <class Value>
__device__ void write_row(Value value, std::uint32_t cols, bool fp8, Quant q, void* out_row,
                          float* scales) {
  if (!fp8) {
    auto* o = static_cast<std::uint16_t*>(out_row);
    for (std::uint32_t c = threadIdx.x; c < cols; c += kBlock) o[c] = bf16_bits(value(c));
    return;
  }
  auto* o = static_cast<std::uint8_t*>(out_row);
  const std::uint32_t group = q == Quant::block_128 ? 128 : cols;
  for (std::uint32_t g0 = 0; g0 < cols; g0 += group) {
    const std::uint32_t g1 = min(cols, g0 + group);
    float amax = 0.0f;
    for (std::uint32_t c = g0 + threadIdx.x; c < g1; c += kBlock) amax = fmaxf(amax, fabsf(value(c)));
    const float scale = fp8_scale(block_max(amax));
    for (std::uint32_t c = g0 + threadIdx.x; c < g1; c += kBlock) o[c] = fp8_bits(value(c) / scale);
    if (threadIdx.x == 0) scales[g0 / 128] = scale;
  }
}

// `src`: the caller's fp32 x [T][H] on the device, else the seed's.
__global__ void x_kernel(std::uint64_t seed, LayerDims d, void* x, float* x_scale,
                         const float* src) {
  const std::uint32_t t = blockIdx.x;
  const std::uint32_t h = d.hidden;
  const auto value = [&](std::uint32_t c) {
    return src ? src[std::size_t{t} * h + c] : plan::activation_value(seed, h, t, c);
  };
  const std::size_t esize = d.fp8 ? 1 : 2;
  float* scales = d.quant == Quant::block_128 ? x_scale + std::size_t{t} * d.hb()
                                              : x_scale + t;
  write_row(value, h, d.fp8, d.quant, static_cast<char*>(x) + std::size_t{t} * h * esize,
            d.fp8 ? scales : nullptr);
}

// bf16 / per_token weights: one row per workgroup. grid (rows, experts).
// `gate_up`: rows [0, 2I) of W13 (gate then up) over H; else rows [0, H) of W2 over I.
// `src`: the caller's fp32 matrices of the routed experts on the device
// ([experts_local][rows][cols]); shared experts and a null src: the seed's.
__global__ void weight_rows_kernel(std::uint64_t seed, LayerDims d, bool gate_up, void* w,
                                   float* scale, const float* src) {
  const std::uint32_t r = blockIdx.x, e = blockIdx.y;
  const std::uint32_t real = d.columns(e);
  const std::uint32_t cols = gate_up ? d.hidden : d.inter;
  const std::uint32_t rows = gate_up ? 2 * d.inter : d.hidden;
  const std::uint32_t fan_in = gate_up ? d.hidden : (e < d.experts_local ? d.inter : d.shared_inter);
  const float bound = 1.0f / sqrtf(static_cast<float>(fan_in));
  const TensorId id = gate_up ? TensorId::w_gate_up : TensorId::w_down;
  // A shared chunk's columns past its real ones are zero: gate/up rows j >= real
  // (in either half), down columns i >= real.
  const std::uint32_t j = gate_up ? r % d.inter : 0;
  const bool zero_row = gate_up && j >= real;
  const bool given = src != nullptr && e < d.experts_local;
  const auto value = [&](std::uint32_t c) {
    if (given) return src[(std::size_t{e} * rows + r) * cols + c];
    if (zero_row || (!gate_up && c >= real)) return 0.0f;
    return tensor_value(seed, id, e, std::uint64_t{r} * cols + c, bound);
  };
  const std::size_t esize = d.fp8 ? 1 : 2;
  void* row = static_cast<char*>(w) + (std::size_t{e} * rows + r) * cols * esize;
  write_row(value, cols, d.fp8, Quant::per_token, row,
            d.fp8 ? scale + std::size_t{e} * rows + r : nullptr);
}

// block_128 weights: one 128x128 block per workgroup, grid (col blocks, row blocks, experts).
// Gate and up have their own grids (row blocks [0, ib) gate, [ib, 2ib) up).
__global__ void weight_blocks_kernel(std::uint64_t seed, LayerDims d, bool gate_up,
                                     std::uint8_t* w, float* scale, const float* src) {
  const std::uint32_t cb = blockIdx.x, rb = blockIdx.y, e = blockIdx.z;
  const std::uint32_t real = d.columns(e);
  const std::uint32_t cols = gate_up ? d.hidden : d.inter;
  const std::uint32_t rows = gate_up ? 2 * d.inter : d.hidden;
  const std::uint32_t fan_in = gate_up ? d.hidden : (e < d.experts_local ? d.inter : d.shared_inter);
  const float bound = 1.0f / sqrtf(static_cast<float>(fan_in));
  const TensorId id = gate_up ? TensorId::w_gate_up : TensorId::w_down;
  // First and end row of this block in the matrix.
  std::uint32_t r0, r1;
  if (gate_up) {
    const bool up = rb >= d.ib();
    const std::uint32_t base = up ? d.inter : 0;
    const std::uint32_t local = (up ? rb - d.ib() : rb) * 128;
    r0 = base + local;
    r1 = base + min(d.inter, local + 128);
  } else {
    r0 = rb * 128;
    r1 = min(d.hidden, r0 + 128);
  }
  const std::uint32_t c0 = cb * 128, c1 = min(cols, c0 + 128);
  const std::uint32_t n = (r1 - r0) * (c1 - c0), width = c1 - c0;
  const bool given = src != nullptr && e < d.experts_local;
  const auto value = [&](std::uint32_t i) {
    const std::uint32_t r = r0 + i / width, c = c0 + i % width;
    if (given) return src[(std::size_t{e} * rows + r) * cols + c];
    const bool zero = gate_up ? (r % d.inter) >= real : c >= real;
    return zero ? 0.0f : tensor_value(seed, id, e, std::uint64_t{r} * cols + c, bound);
  };
  float amax = 0.0f;
  for (std::uint32_t i = threadIdx.x; i < n; i += kBlock) amax = fmaxf(amax, fabsf(value(i)));
  const float s = fp8_scale(block_max(amax));
  for (std::uint32_t i = threadIdx.x; i < n; i += kBlock) {
    const std::uint32_t r = r0 + i / width, c = c0 + i % width;
    w[(std::size_t{e} * rows + r) * cols + c] = fp8_bits(value(i) / s);
  }
  if (threadIdx.x == 0) scale[(std::size_t{e} * gridDim.y + rb) * gridDim.x + cb] = s;
}

__global__ void router_kernel(std::uint64_t seed, std::uint32_t experts, std::uint32_t hidden,
                              float scale, float* w, float* bias, float* correction) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < std::size_t{experts} * hidden) {
    w[i] = plan::router_weight_value(seed, hidden, scale, static_cast<std::uint32_t>(i / hidden),
                                     static_cast<std::uint32_t>(i % hidden));
  }
  if (i < experts) {
    if (bias) bias[i] = plan::router_bias_value(seed, static_cast<std::uint32_t>(i));
    if (correction) correction[i] = plan::correction_bias_value(seed, static_cast<std::uint32_t>(i));
  }
}

}  // namespace

void generate_x(const MoeCase& c, const LayerDims& d, Buffers& b, hipStream_t s,
                const float* src) {
  hipLaunchKernelGGL(x_kernel, dim3(c.tokens), dim3(kBlock), 0, s, c.seed, d, b.x, b.x_scale, src);
  TDMSIM_HIP_CHECK(hipGetLastError());
}

void generate_weights(const MoeCase& c, const LayerDims& d, Weights& w, hipStream_t s,
                      const float* w13_src, const float* w2_src) {
  const std::uint32_t e = d.experts_fused;
  if (d.fp8 && d.quant == Quant::block_128) {
    hipLaunchKernelGGL(weight_blocks_kernel, dim3(d.hb(), 2 * d.ib(), e), dim3(kBlock), 0, s,
                       c.seed, d, true, static_cast<std::uint8_t*>(w.w13), w.w13_scale, w13_src);
    hipLaunchKernelGGL(weight_blocks_kernel, dim3(d.ib(), d.hb(), e), dim3(kBlock), 0, s, c.seed,
                       d, false, static_cast<std::uint8_t*>(w.w2), w.w2_scale, w2_src);
  } else {
    hipLaunchKernelGGL(weight_rows_kernel, dim3(2 * d.inter, e), dim3(kBlock), 0, s, c.seed, d,
                       true, w.w13, w.w13_scale, w13_src);
    hipLaunchKernelGGL(weight_rows_kernel, dim3(d.hidden, e), dim3(kBlock), 0, s, c.seed, d, false,
                       w.w2, w.w2_scale, w2_src);
  }
  TDMSIM_HIP_CHECK(hipGetLastError());
}

void generate_router(const MoeCase& c, Buffers& b, hipStream_t s) {
  const std::size_t n = std::size_t{c.experts_total} * c.hidden;
  hipLaunchKernelGGL(router_kernel, dim3(static_cast<unsigned>((n + 255) / 256)), dim3(256), 0, s,
                     c.seed, c.experts_total, c.hidden, c.router_weight_scale, b.router_w,
                     b.router_bias, b.correction_bias);
  TDMSIM_HIP_CHECK(hipGetLastError());
}

LayerDims dims_of(const MoeCase& c) {
  LayerDims d{};
  d.tokens = c.tokens;
  d.hidden = c.hidden;
  d.inter = c.inter;
  d.slots = c.slots();
  d.top_k = c.top_k;
  d.experts_local = c.experts_local;
  d.experts_fused = c.experts_fused();
  d.shared_inter = c.shared_inter;
  d.shared_chunks = c.shared_chunks == 0 ? 1 : c.shared_chunks;
  d.fp8 = c.fp8();
  d.quant = c.quant == "block_128" ? Quant::block_128
            : c.quant == "per_token" ? Quant::per_token
                                     : Quant::none;
  d.act = c.activation == "gelu" ? Act::gelu : c.activation == "swiglu_oai" ? Act::swiglu_oai
                                                                            : Act::silu;
  d.act_limit = c.activation_limit;
  return d;
}

}  // namespace tdmsim::gpu
