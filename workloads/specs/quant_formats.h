// The GEMM operand formats a scenario can ask for: the activation dtype
// (`dtype`), the weight dtype (`weight_dtype`, default: the same) and the
// scale scheme (`quant`), and which combinations exist. The table of
// combinations is the one of AITER's fused MoE (docs/yaml-reference.md,
// "Formats"); everything else is refused with a message naming the key.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "workloads/specs/enums.h"

namespace tdmsim {

// A scenario's `weight_dtype`: a dtype, or "same" (the activation dtype).
struct WeightDType {
  std::optional<DType> dtype;  // nullopt: same as the scenario's dtype
  auto operator<=>(const WeightDType&) const = default;
};

// The operand formats of one layer's expert GEMMs.
struct OperandFormats {
  DType activation = DType::bf16;  // x, the intermediate and the GEMM A operand
  DType weight = DType::bf16;      // the expert weights (GEMM B operand)
  Quant quant = Quant::none;       // scales of the quantised operand(s)
  auto operator<=>(const OperandFormats&) const = default;
};

// Whether a dtype's elements carry scales (everything narrower than 16 bits).
constexpr bool scaled_dtype(DType t) { return dtype_bits(t) <= 8; }

// The scale scheme of the activation operand: `quant` when the activation
// dtype is scaled, none for bf16/fp16/fp32 activations (whose layer's
// `quant` describes the weights only, e.g. bf16 x mxfp4 per_1x32).
constexpr Quant activation_quant(const OperandFormats& f) {
  return scaled_dtype(f.activation) ? f.quant : Quant::none;
}

// One supported combination and its short name ("MXFP4", "a16w4 ...").
struct SupportedFormat {
  OperandFormats formats;
  std::string_view label;
};
// Every combination a scenario may ask for (docs/yaml-reference.md, "Formats").
std::span<const SupportedFormat> supported_formats();

// Why AITER ships no such combination, naming the key to change
// ("dtype", "weight_dtype" or "quant") in `key`; nullopt when it is one of
// the supported ones (docs/yaml-reference.md, "Formats").
struct FormatRefusal {
  std::string key;
  std::string message;
};
std::optional<FormatRefusal> format_refusal(const OperandFormats& f);

// The dtype the matrix pipe multiplies for a pair before the machine's own
// widening: the activation dtype. Every pair AITER ships has weights no wider
// than its activations, and kernels dequantise the weights to the activation
// type in registers (a16w4, bf16 x int4, fp8 x int4) or feed both to a
// mixed-format instruction at the wider operand's rate (a8w4 on CDNA4).
constexpr DType compute_dtype(const OperandFormats& f) { return f.activation; }

// Scale bits a quantised weight matrix stores per 1024 weights, for the
// sizes that K does not change: per_1x32 one E8M0 byte per 32 (256),
// group_32 / group_128 one fp32 per 32 / 128 (1024 / 256), block_128 one
// fp32 per 128 x 128 (2). per_tensor and per_token (one fp32 per matrix or
// output channel) round to 0 here; the layout counts them exactly.
constexpr std::uint64_t weight_scale_bits_per_1024(const OperandFormats& f) {
  switch (f.quant) {
    case Quant::per_1x32: return 256;
    case Quant::group_32: return 1024;
    case Quant::group_128: return 256;
    case Quant::block_128: return 2;
    default: return 0;
  }
}

}  // namespace tdmsim

namespace tdmsim::config {
template <>
struct ValueTraits<WeightDType> {
  static constexpr std::string_view type_name = "dtype name or 'same' (the activation dtype)";
  static units::Parsed<WeightDType> parse(std::string_view t);
  static std::string text(const WeightDType& v);
};
}  // namespace tdmsim::config
