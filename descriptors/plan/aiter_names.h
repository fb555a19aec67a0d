// AITER's names for a layer's number formats and activation, as its tuned
// kernel tables (aiter/configs/*fmoe*.csv columns q_dtype_a, q_dtype_w,
// q_type, act_type, dtype) write them: str() of a torch dtype and of AITER's
// QuantType / ActivationType enums.
//
// Only the formats tdmsim scenarios can express today map; a row of any other
// format (MXFP4, MXFP8, INT4, INT8, fp8 FNUZ, mixed pairs) maps to nothing and
// so never matches a layer. The `formats` work adds those formats and widens
// this one function; nothing else reads AITER's dtype names.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "workloads/specs/enums.h"

namespace tdmsim::plan {

struct AiterFormat {
  DType dtype = DType::bf16;
  Quant quant = Quant::none;
  auto operator<=>(const AiterFormat&) const = default;
};

// The scenario format of a row's (q_dtype_a, q_dtype_w, q_type), or nothing:
//   torch.bfloat16 x torch.bfloat16, QuantType.No        -> bf16
//   torch.float16 x torch.float16, QuantType.No          -> fp16
//   torch.float8_e4m3fn x torch.float8_e4m3fn with
//     QuantType.per_1x128 (or per_128x128, which AITER remaps to it) -> fp8_e4m3 block_128
//     QuantType.per_Token                                 -> fp8_e4m3 per_token
//     QuantType.per_Tensor                                -> fp8_e4m3 per_tensor
std::optional<AiterFormat> aiter_format(std::string_view q_dtype_a, std::string_view q_dtype_w,
                                        std::string_view q_type);

// Why a row's format does not map, for --verbose and "no row matched"
// messages: e.g. "torch.float4_e2m1fn_x2 x torch.float4_e2m1fn_x2
// QuantType.per_1x32 is not a format tdmsim scenarios can express yet".
std::string aiter_format_text(std::string_view q_dtype_a, std::string_view q_dtype_w,
                              std::string_view q_type);

// ActivationType.Silu / Gelu / Swiglu (gpt-oss's clamped SwiGLU).
std::string_view aiter_activation(Activation a);

// The output dtype column (`dtype`): torch.float16 for fp16 layers, else
// torch.bfloat16 (tdmsim's layers write bf16 outputs from 8-bit inputs).
std::string_view aiter_out_dtype(DType d);

}  // namespace tdmsim::plan
