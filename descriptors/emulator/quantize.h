// Quantisation schemes of the expert GEMM operands. The emulator keeps every
// tensor as fp32 holding exactly the value a kernel would compute with:
// quantising replaces each element by decode(encode(v / scale)) * scale (its
// "dequantised" value), so GEMMs run on plain fp32 data. Schemes and scale
// rules are documented in docs/emulator.md ("Quantisation").
#pragma once

#include <cstddef>
#include <cstdint>

#include "workloads/specs/enums.h"

namespace tdmsim::emu {

// The format kernels store non-quantised tensors in for a GEMM dtype (the
// gate/up output, the intermediate of non-scaled dtypes, the expert output):
// fp32 -> fp32, fp16 -> fp16, everything else -> bf16.
DType storage_dtype(DType gemm_dtype);

// True for dtypes whose elements carry scales (fp8, int8); mxfp4 has its own
// per-32-element scales and ignores `quant`.
bool is_scaled(DType t);

// Largest finite magnitude of a scaled element: 448 (e4m3), 57344 (e5m2),
// 127 (int8), 6 (e2m1). 0 for other dtypes.
float quant_max(DType t);

// Throws std::invalid_argument (naming both) for a dtype/quant pair the
// emulator does not run: scaled dtypes need per_tensor, per_token or
// block_128; fp32, bf16, fp16 and mxfp4 need quant none.
void check_quant(DType t, Quant q);

// Scale of a group with absolute maximum `amax`: amax / quant_max (fp32
// division); 1 for an all-zero group so that it stays zero.
float scale_for_amax(float amax, DType t);

// One element through a scaled format: decode(encode(v / scale)) * scale, with
// saturation to +-quant_max and round-to-nearest-even.
float quant_dequant(float v, float scale, DType t);

// The value nearest to v in a non-scaled storage format (fp32, bf16, fp16).
float round_to(float v, DType storage);

// max |a[r][c]| over a strided [rows][cols] block (NaN ignored).
float absmax(const float* a, std::size_t rows, std::size_t cols, std::size_t stride);

// Activations (GEMM A operand) in place, [rows][cols] with row stride `stride`:
//   non-scaled dtypes: each element rounded to the dtype (mxfp4: to bf16);
//   per_tensor: one dynamic scale from `tensor_amax` (the caller's absmax over
//               the whole tensor, which may span more rows than this call);
//   per_token:  one scale per row;
//   block_128:  one scale per row and 128-column group (DeepSeek-V3's 1x128).
void quantize_activations(float* a, std::size_t rows, std::size_t cols, std::size_t stride,
                          DType t, Quant q, float tensor_amax);

// Weights (GEMM B operand, one row per output channel) in place: rows
// [row0, row0 + rows) of a [matrix_rows][cols] matrix.
//   non-scaled: element rounding;
//   mxfp4:      OCP MX, 32-element groups along a row sharing an E8M0 scale
//               2^(floor(log2(amax)) - 2), elements e2m1 (saturating);
//   per_tensor: the static scale bound / quant_max, `bound` being the
//               generator's range (what a calibrated checkpoint stores);
//   per_token:  one scale per output channel (row);
//   block_128:  one scale per 128x128 block counted from the matrix origin;
//               needs row0 % 128 == 0 (throws std::invalid_argument otherwise).
void quantize_weights(float* w, std::size_t rows, std::size_t cols, std::size_t row0,
                      DType t, Quant q, float bound);

// The E8M0 shared-scale exponent MXFP4 uses for a 32-element group.
int mx_scale_exponent(float amax);

}  // namespace tdmsim::emu
