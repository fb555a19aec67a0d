// AITER's names for a layer's number formats and activation, as its tuned
// kernel tables (aiter/configs/*fmoe*.csv columns q_dtype_a, q_dtype_w,
// q_type, act_type, dtype) write them: str() of a torch dtype and of AITER's
// QuantType / ActivationType enums.
//
// The dtype and quantisation names map through workloads/specs/aiter_names.h
// (formats_from_aiter, the one table of AITER's names); a row of a format
// scenarios cannot express maps to nothing and so never matches a layer.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "workloads/specs/enums.h"

namespace tdmsim::plan {

struct AiterFormat {
  DType dtype = DType::bf16;         // activations (AITER's q_dtype_a)
  Quant quant = Quant::none;
  DType weight_dtype = DType::bf16;  // weights (q_dtype_w)
  constexpr AiterFormat() = default;
  // One dtype for both operands.
  constexpr AiterFormat(DType d, Quant q) : dtype(d), quant(q), weight_dtype(d) {}
  constexpr AiterFormat(DType d, Quant q, DType w) : dtype(d), quant(q), weight_dtype(w) {}
  auto operator<=>(const AiterFormat&) const = default;
};

// The scenario format of a row's (q_dtype_a, q_dtype_w, q_type), or nothing
// (formats_from_aiter; docs/yaml-reference.md "Formats"), e.g.
//   torch.bfloat16 x torch.bfloat16, QuantType.No                   -> bf16
//   torch.float8_e4m3fn x torch.float8_e4m3fn, QuantType.per_1x128  -> fp8_e4m3 block_128
//   torch.float4_e2m1fn_x2 x torch.float4_e2m1fn_x2, QuantType.per_1x32 -> mxfp4 per_1x32
std::optional<AiterFormat> aiter_format(std::string_view q_dtype_a, std::string_view q_dtype_w,
                                        std::string_view q_type);

// A row's format with what it maps to, for --verbose and "no row matched"
// messages: e.g. "torch.float8_e4m3fnuz x torch.float8_e4m3fnuz
// QuantType.per_Token (tdmsim dtype fp8_e4m3_fnuz, ...)", or, for a name no
// scenario expresses (torch.float32), "... (not a format tdmsim scenarios
// can express yet)".
std::string aiter_format_text(std::string_view q_dtype_a, std::string_view q_dtype_w,
                              std::string_view q_type);

// ActivationType.Silu / Gelu / Swiglu (gpt-oss's clamped SwiGLU).
std::string_view aiter_activation(Activation a);

// The output dtype column (`dtype`): torch.float16 for fp16 layers, else
// torch.bfloat16 (tdmsim's layers write bf16 outputs from 8-bit inputs).
std::string_view aiter_out_dtype(DType d);

}  // namespace tdmsim::plan
