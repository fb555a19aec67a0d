// AITER's names for a fused-MoE quantisation (the q_dtype_a, q_dtype_w and
// q_type columns of its tuned tables: "torch.float8_e4m3fn",
// "QuantType.per_1x128", ...) and the scenario keys that mean the same
// (dtype, weight_dtype, quant). One function each way; the table is in
// docs/yaml-reference.md ("Formats").
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "workloads/specs/quant_formats.h"

namespace tdmsim {

struct AiterQuantNames {
  std::string q_dtype_a;  // e.g. "torch.bfloat16"
  std::string q_dtype_w;  // e.g. "torch.float4_e2m1fn_x2"
  std::string q_type;     // e.g. "QuantType.per_1x32"
};

// The operand formats AITER's names mean. The "torch." / "QuantType." prefixes
// are optional. Returns nullopt and sets *why (when given) for a name that is
// not AITER's or a combination the project does not run (the same table as
// the scenario check, format_refusal).
std::optional<OperandFormats> formats_from_aiter(std::string_view q_dtype_a,
                                                 std::string_view q_dtype_w,
                                                 std::string_view q_type,
                                                 std::string* why = nullptr);

// AITER's names for supported formats (formats_from_aiter inverts it);
// nullopt for fp8_e5m2, which AITER's MoE does not run.
std::optional<AiterQuantNames> aiter_names(const OperandFormats& f);

}  // namespace tdmsim
