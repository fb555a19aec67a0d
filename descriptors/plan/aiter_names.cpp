#include "descriptors/plan/aiter_names.h"

#include <fmt/core.h>

namespace tdmsim::plan {

std::optional<AiterFormat> aiter_format(std::string_view a, std::string_view w, std::string_view q) {
  if (a != w) return std::nullopt;  // mixed pairs (a16w4, a8w4, ...) are not expressible yet
  if (a == "torch.bfloat16" && q == "QuantType.No") return AiterFormat{DType::bf16, Quant::none};
  if (a == "torch.float16" && q == "QuantType.No") return AiterFormat{DType::fp16, Quant::none};
  // OCP e4m3 only: torch.float8_e4m3fnuz (MI300X's FNUZ) is another format.
  if (a == "torch.float8_e4m3fn") {
    // fused_moe.py quant_remap: per_128x128 runs as per_1x128.
    if (q == "QuantType.per_1x128" || q == "QuantType.per_128x128") {
      return AiterFormat{DType::fp8_e4m3, Quant::block_128};
    }
    if (q == "QuantType.per_Token") return AiterFormat{DType::fp8_e4m3, Quant::per_token};
    if (q == "QuantType.per_Tensor") return AiterFormat{DType::fp8_e4m3, Quant::per_tensor};
  }
  return std::nullopt;
}

std::string aiter_format_text(std::string_view a, std::string_view w, std::string_view q) {
  if (const auto f = aiter_format(a, w, q)) {
    return fmt::format("{} x {} {} (tdmsim dtype {}, quant {})", a, w, q, config::enum_name(f->dtype),
                       config::enum_name(f->quant));
  }
  return fmt::format("{} x {} {} (not a format tdmsim scenarios can express yet)", a, w, q);
}

std::string_view aiter_activation(Activation a) {
  switch (a) {
    case Activation::silu: return "ActivationType.Silu";
    case Activation::gelu: return "ActivationType.Gelu";
    case Activation::swiglu_oai: return "ActivationType.Swiglu";
  }
  return "";
}

std::string_view aiter_out_dtype(DType d) { return d == DType::fp16 ? "torch.float16" : "torch.bfloat16"; }

}  // namespace tdmsim::plan
