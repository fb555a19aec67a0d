#include "descriptors/plan/aiter_names.h"

#include <fmt/core.h>

#include "workloads/specs/aiter_names.h"

namespace tdmsim::plan {

std::optional<AiterFormat> aiter_format(std::string_view a, std::string_view w, std::string_view q) {
  const auto f = formats_from_aiter(a, w, q);
  if (!f) return std::nullopt;
  return AiterFormat{f->activation, f->quant, f->weight};
}

std::string aiter_format_text(std::string_view a, std::string_view w, std::string_view q) {
  if (const auto f = aiter_format(a, w, q)) {
    return fmt::format("{} x {} {} (tdmsim dtype {}, weight_dtype {}, quant {})", a, w, q,
                       config::enum_name(f->dtype), config::enum_name(f->weight_dtype), config::enum_name(f->quant));
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
