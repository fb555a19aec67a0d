// Host-side interface of the MoE kernels: the device buffers of one layer and
// the launchers of each kernel. The kernels themselves live in synthetic.hip
// (inputs and weights from the seed), routing.hip (router and gating),
// sort.hip (padded block layout) and fused_moe.hip (expert GEMMs). See
// docs/gpu-kernels.md.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/hip/gpu_numerics.h"
#include "kernels/hip/hip_portability.h"
#include "kernels/moe/moe_case.h"

namespace tdmsim::gpu {

inline constexpr std::uint32_t kRemote = 0xFFFFFFFFu;  // plan::kRemoteExpert
inline constexpr std::uint32_t kThreads = 256;          // every GEMM kernel: 8 warps

enum class Quant : int { none = 0, per_token = 1, block_128 = 2 };
enum class Act : int { silu = 0, gelu = 1, swiglu_oai = 2 };

// Shape and numerics of the layer as the kernels need them.
struct LayerDims {
  std::uint32_t tokens, hidden, inter, slots, top_k, experts_local, experts_fused;
  std::uint32_t shared_inter, shared_chunks;
  bool fp8;
  Quant quant;
  Act act;
  float act_limit;
  TDMSIM_GPU_HD std::uint32_t hb() const { return (hidden + 127) / 128; }  // 128-column groups of H
  TDMSIM_GPU_HD std::uint32_t ib() const { return (inter + 127) / 128; }   // 128-column groups of I
  // Real intermediate columns of fused expert e (a shared chunk may have fewer).
  TDMSIM_GPU_HD std::uint32_t columns(std::uint32_t e) const {
    if (e < experts_local) return inter;
    const std::uint32_t column = ((e - experts_local) % shared_chunks) * inter;
    return shared_inter - column < inter ? shared_inter - column : inter;
  }
};
LayerDims dims_of(const MoeCase& c);

// One copy of the expert weights (the runner keeps several and rotates them so
// that timed runs do not find the previous run's weights in L2).
struct Weights {
  void* w13 = nullptr;          // [E_fused][2I][H] elements (gate rows, then up rows)
  float* w13_scale = nullptr;   // per_token [E][2I]; block_128 [E][2*ib][hb]
  void* w2 = nullptr;           // [E_fused][H][I]
  float* w2_scale = nullptr;    // per_token [E][H]; block_128 [E][hb][ib]
};

// The layer's activations, routing and work buffers.
struct Buffers {
  void* x = nullptr;            // [T][H] bf16 or e4m3
  float* x_scale = nullptr;     // per_token [T]; block_128 [T][hb]
  std::uint32_t* topk_ids = nullptr;       // [T][top_k]
  float* topk_weights = nullptr;           // [T][top_k]
  std::uint32_t* fused_expert = nullptr;   // [T][slots]
  float* fused_weight = nullptr;           // [T][slots]
  std::uint32_t* sorted_rows = nullptr;    // [capacity]
  float* sorted_weights = nullptr;         // [capacity]
  std::uint32_t* block_expert = nullptr;   // [max blocks]
  std::uint32_t* expert_first_block = nullptr;  // [E_fused + 1]
  std::uint32_t* expert_rows = nullptr;    // [E_fused]
  std::uint32_t* chunk_counts = nullptr;   // sort scratch [chunks][E_fused]
  std::uint32_t* layout_info = nullptr;    // [0] padded rows, [1] blocks
  std::uint16_t* inter = nullptr;          // [padded_rows][I] bf16
  std::uint8_t* inter_q = nullptr;         // fp8: [padded_rows][I] e4m3
  float* inter_scale = nullptr;            // fp8: per_token [rows]; block_128 [rows][ib]
  float* partials = nullptr;               // split-K gate/up: [split][padded_rows][2I]
  float* y = nullptr;                      // [T][H] fp32, combined output
  // Router (routing_source router).
  float* logits = nullptr;                 // [T][E_total]
  float* router_w = nullptr;               // [E_total][H] fp32
  float* router_bias = nullptr;            // [E_total] or null
  float* correction_bias = nullptr;        // [E_total] or null
};

// Inputs from the seed, quantised as the emulator does (docs/emulator.md "Inputs"),
// or from a caller's fp32 arrays on the device (src: x [T][H]; w13_src
// [experts_local][2I][H], w2_src [experts_local][H][I]; shared experts keep
// the seed's weights), quantised by the same rules.
void generate_x(const MoeCase& c, const LayerDims& d, Buffers& b, hipStream_t s,
                const float* src = nullptr);
void generate_weights(const MoeCase& c, const LayerDims& d, Weights& w, hipStream_t s,
                      const float* w13_src = nullptr, const float* w2_src = nullptr);
void generate_router(const MoeCase& c, Buffers& b, hipStream_t s);

// Router logits and gating (grouped top-k, scores, weights) into topk_ids/weights.
void launch_router(const MoeCase& c, Buffers& b, hipStream_t s);

// Fused routing and the padded block layout (moe_align_block_size).
void launch_sort(const MoeCase& c, const LayerDims& d, Buffers& b, hipStream_t s);

// The expert GEMM stages; returns false (launching nothing) for a tile the
// kernels are not instantiated for, with the reason in `why`.
bool supported(const MoeCase& c, std::string& why);
// The matrix instructions this build's GEMM kernels use (recorded with each run).
const char* matrix_backend();
void launch_gate_up(const MoeCase& c, const LayerDims& d, const Weights& w, Buffers& b,
                    hipStream_t s);
void launch_splitk_reduce(const MoeCase& c, const LayerDims& d, Buffers& b, hipStream_t s);
void launch_quant_inter(const MoeCase& c, const LayerDims& d, Buffers& b, hipStream_t s);
void launch_down(const MoeCase& c, const LayerDims& d, const Weights& w, Buffers& b,
                 hipStream_t s);
void launch_fused(const MoeCase& c, const LayerDims& d, const Weights& w, Buffers& b,
                  hipStream_t s);

}  // namespace tdmsim::gpu
