// The router on the GPU, bit-identical to the plan's (descriptors/plan/
// routing.cpp, gating.cpp): logits summed in double over h in increasing
// order (a float x float product is exact in double, so the fused multiply-
// add rounds exactly as the CPU's add), then per token: softmax or sigmoid
// scores in double, the selection-only correction bias, grouped top-k
// (DeepSeek-V3 noaux_tc: a group's score is the sum of its two best), top-k
// with ties to the lower id, renormalisation and routed scaling.
// One thread per (token, expert) for the logits, one per token for gating:
// the router is a small part of a layer and is not what this project times.
#include <cmath>

#include "descriptors/plan/synthetic_tensors.h"
#include "kernels/moe/moe_gpu.h"

namespace tdmsim::gpu {
namespace {

constexpr std::uint32_t kMaxExperts = 512;  // local arrays of the gating thread

__global__ void logits_kernel(std::uint64_t seed, std::uint32_t tokens, std::uint32_t experts,
                              std::uint32_t hidden, const float* w, const float* bias,
                              float* logits) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= std::size_t{tokens} * experts) return;
  const auto t = static_cast<std::uint32_t>(i / experts);
  const auto e = static_cast<std::uint32_t>(i % experts);
  const float* we = w + std::size_t{e} * hidden;
  double acc = 0.0;
  for (std::uint32_t h = 0; h < hidden; ++h) {
    acc = fma(static_cast<double>(plan::activation_value(seed, hidden, t, h)),
              static_cast<double>(we[h]), acc);
  }
  const double b = bias ? static_cast<double>(bias[e]) : 0.0;
  logits[i] = static_cast<float>(acc + b);
}

// "a ranks before b": higher score, then lower index.
__device__ bool ranks_before(double sa, std::uint32_t a, double sb, std::uint32_t b) {
  return sa != sb ? sa > sb : a < b;
}

struct GateParams {
  std::uint32_t tokens, experts, top_k, n_group, topk_group;
  bool sigmoid, renormalize;
  double routed_scaling;
};

__global__ void gating_kernel(GateParams p, const float* logits, const float* correction,
                              std::uint32_t* ids, float* weights) {
  const std::uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= p.tokens) return;
  const float* l = logits + std::size_t{t} * p.experts;
  double score[kMaxExperts];
  double select[kMaxExperts];
  bool kept[kMaxExperts];
  if (p.sigmoid) {
    for (std::uint32_t e = 0; e < p.experts; ++e) score[e] = 1.0 / (1.0 + exp(-static_cast<double>(l[e])));
  } else {
    double mx = -INFINITY;
    for (std::uint32_t e = 0; e < p.experts; ++e) mx = fmax(mx, static_cast<double>(l[e]));
    double sum = 0.0;
    for (std::uint32_t e = 0; e < p.experts; ++e) {
      score[e] = exp(static_cast<double>(l[e]) - mx);
      sum += score[e];
    }
    for (std::uint32_t e = 0; e < p.experts; ++e) score[e] /= sum;
  }
  for (std::uint32_t e = 0; e < p.experts; ++e) {
    select[e] = score[e] + (correction ? static_cast<double>(correction[e]) : 0.0);
    kept[e] = true;
  }
  if (p.n_group > 1 && p.topk_group < p.n_group) {
    const std::uint32_t size = p.experts / p.n_group;
    double group[64];
    for (std::uint32_t g = 0; g < p.n_group; ++g) {
      double best = -INFINITY, second = -INFINITY;
      for (std::uint32_t i = 0; i < size; ++i) {
        const double s = select[g * size + i];
        if (s > best) {
          second = best;
          best = s;
        } else if (s > second) {
          second = s;
        }
      }
      group[g] = correction && size > 1 ? best + second : best;
    }
    bool group_kept[64];
    for (std::uint32_t g = 0; g < p.n_group; ++g) group_kept[g] = false;
    for (std::uint32_t j = 0; j < p.topk_group; ++j) {
      std::uint32_t best = p.n_group;
      for (std::uint32_t g = 0; g < p.n_group; ++g) {
        if (group_kept[g]) continue;
        if (best == p.n_group || ranks_before(group[g], g, group[best], best)) best = g;
      }
      group_kept[best] = true;
    }
    for (std::uint32_t e = 0; e < p.experts; ++e) kept[e] = group_kept[e / size];
  }
  double chosen[16];
  double sum = 0.0;
  for (std::uint32_t j = 0; j < p.top_k; ++j) {
    std::uint32_t best = p.experts;
    for (std::uint32_t e = 0; e < p.experts; ++e) {
      if (!kept[e]) continue;
      if (best == p.experts || ranks_before(select[e], e, select[best], best)) best = e;
    }
    kept[best] = false;
    ids[std::size_t{t} * p.top_k + j] = best;
    chosen[j] = score[best];
    sum += chosen[j];
  }
  const bool renorm = p.renormalize && sum > 0.0;
  for (std::uint32_t j = 0; j < p.top_k; ++j) {
    const double w = renorm ? chosen[j] / sum : chosen[j];
    weights[std::size_t{t} * p.top_k + j] = static_cast<float>(w * p.routed_scaling);
  }
}

}  // namespace

void launch_router(const MoeCase& c, Buffers& b, hipStream_t s) {
  if (c.experts_total > kMaxExperts || c.top_k > 16 || c.n_group > 64) {
    std::fprintf(stderr, "router: %u experts / top-%u / %u groups exceed the gating kernel's limits\n",
                 c.experts_total, c.top_k, c.n_group);
    TDMSIM_GPU_EXIT(2);
  }
  const std::size_t n = std::size_t{c.tokens} * c.experts_total;
  hipLaunchKernelGGL(logits_kernel, dim3(static_cast<unsigned>((n + 127) / 128)), dim3(128), 0, s,
                     c.seed, c.tokens, c.experts_total, c.hidden, b.router_w,
                     c.router_bias ? b.router_bias : nullptr, b.logits);
  TDMSIM_HIP_CHECK(hipGetLastError());
  GateParams p{c.tokens, c.experts_total, c.top_k, c.n_group, c.topk_group,
               c.scoring == "sigmoid", c.renormalize, c.routed_scaling};
  hipLaunchKernelGGL(gating_kernel, dim3((c.tokens + 63) / 64), dim3(64), 0, s, p, b.logits,
                     c.correction_bias ? b.correction_bias : nullptr, b.topk_ids, b.topk_weights);
  TDMSIM_HIP_CHECK(hipGetLastError());
}

}  // namespace tdmsim::gpu
