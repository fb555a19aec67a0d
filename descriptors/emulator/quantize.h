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

// True for dtypes whose elements carry scales: everything narrower than 16
// bits (fp8 OCP and FNUZ, int8, mxfp4, int4).
bool is_scaled(DType t);

// Largest finite magnitude of a scaled element: 448 (e4m3), 240 (e4m3 FNUZ),
// 57344 (e5m2), 127 (int8), 6 (e2m1), 7 (int4: symmetric scales map amax to
// 7, and -8 is reached only by rounding). 0 for other dtypes.
float quant_max(DType t);

// Throws std::invalid_argument (naming both) for a dtype/quant pair the
// emulator does not run on one operand. fp32, bf16, fp16: none. fp8 e4m3
// (OCP): per_tensor, per_token, block_128, per_1x32. fp8 e4m3 FNUZ, e5m2,
// int8: per_tensor, per_token, block_128. mxfp4: per_1x32 (none is read as
// per_1x32: descriptors written before per_1x32 existed say none). int4:
// per_token, group_32, group_128.
void check_quant(DType t, Quant q);

// The quant an operand of dtype `t` runs with when the layer's scheme is `q`:
// none for unscaled dtypes (a bf16 activation beside mxfp4 weights), and
// per_1x32 for mxfp4 under the legacy none.
Quant operand_quant(DType t, Quant q);

// Scale of a group with absolute maximum `amax`: amax / quant_max (fp32
// division); 1 for an all-zero group so that it stays zero.
float scale_for_amax(float amax, DType t);

// One element through a scaled format: decode(encode(v / scale)) * scale, with
// saturation to the format's range and round-to-nearest-even (int4: [-8, 7]).
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
//   block_128:  one scale per row and 128-column group (DeepSeek-V3's 1x128);
//   per_1x32:   OCP MX: one E8M0 scale per row and 32-column group,
//               2^(floor(log2(amax)) - emax_elem) (mx_scale_exponent).
void quantize_activations(float* a, std::size_t rows, std::size_t cols, std::size_t stride,
                          DType t, Quant q, float tensor_amax);

// Weights (GEMM B operand, one row per output channel) in place: rows
// [row0, row0 + rows) of a [matrix_rows][cols] matrix.
//   non-scaled: element rounding;
//   per_1x32:   OCP MX, 32-element groups along a row (K) sharing an E8M0
//               scale 2^(floor(log2(amax)) - emax_elem), elements saturating
//               (MXFP4: e2m1, emax 2; MXFP8: e4m3, emax 8);
//   group_32 / group_128: one fp32 scale amax / 7 per 32 / 128 weights along
//               a row (int4), elements rounded to [-8, 7];
//   per_tensor: the static scale bound / quant_max, `bound` being the
//               generator's range (what a calibrated checkpoint stores);
//   per_token:  one scale per output channel (row);
//   block_128:  one scale per 128x128 block counted from the matrix origin;
//               needs row0 % 128 == 0 (throws std::invalid_argument otherwise).
void quantize_weights(float* w, std::size_t rows, std::size_t cols, std::size_t row0,
                      DType t, Quant q, float bound);

// The OCP MX shared-scale exponent of a 32-element group with absolute
// maximum `amax` for element dtype `t` (OCP MX spec v1.0, section 6.3:
// floor(log2(amax)) - emax_elem, emax_elem = 2 for e2m1, 8 for e4m3),
// clamped to E8M0's [-127, 127]; 0 (scale 1) for an all-zero or non-finite
// group.
int mx_scale_exponent(float amax, DType t = DType::mxfp4);

}  // namespace tdmsim::emu
