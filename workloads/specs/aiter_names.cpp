#include "workloads/specs/aiter_names.h"

#include <algorithm>
#include <array>
#include <utility>

namespace tdmsim {
namespace {

// torch dtype names as AITER writes them (str(torch dtype)). Packed fp4
// (two e2m1 per byte) is float4_e2m1fn_x2; AITER's tests alias torch.int4 to
// torch.uint32 (packed int4) where torch has no int4, so both mean int4.
constexpr std::array<std::pair<std::string_view, DType>, 9> kDTypes{{
    {"bfloat16", DType::bf16},
    {"float16", DType::fp16},
    {"float8_e4m3fn", DType::fp8_e4m3},
    {"float8_e4m3fnuz", DType::fp8_e4m3_fnuz},
    {"float8_e5m2", DType::fp8_e5m2},
    {"int8", DType::int8},
    {"float4_e2m1fn_x2", DType::mxfp4},
    {"int4", DType::int4},
    {"uint32", DType::int4},
}};

// AITER's other dtypes (aiter/utility/dtypes.py: fp32, i32, i16, i64, u64,
// fp8_e8m0, u8) and quantisations (csrc/include/aiter_enum.h: per_256x128,
// per_1024x128), which no MoE format of tdmsim's uses: a row naming one is
// AITER's, only not expressible (a table may hold it), unlike a name AITER
// does not have.
constexpr std::array<std::string_view, 7> kOtherDTypes{"float32", "int32", "int16", "int64", "uint64",
                                                       "float8_e8m0fnu", "uint8"};
constexpr std::array<std::string_view, 2> kOtherQuants{"per_256x128", "per_1024x128"};

std::string_view strip(std::string_view s, std::string_view prefix) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.substr(0, prefix.size()) == prefix) s.remove_prefix(prefix.size());
  return s;
}

std::optional<DType> dtype_of(std::string_view torch_name) {
  const std::string_view n = strip(torch_name, "torch.");
  for (const auto& [name, t] : kDTypes) {
    if (name == n) return t;
  }
  return std::nullopt;
}

}  // namespace

std::optional<OperandFormats> formats_from_aiter(std::string_view q_dtype_a,
                                                 std::string_view q_dtype_w,
                                                 std::string_view q_type, std::string* why) {
  const auto fail = [&](std::string m) -> std::optional<OperandFormats> {
    if (why) *why = std::move(m);
    return std::nullopt;
  };
  const std::string_view q = strip(q_type, "QuantType.");
  // torch.uint8 is AITER's stand-in for fp4x2 where torch lacks
  // float4_e2m1fn_x2 (aiter/utility/dtypes.py: fp4x2 = getattr(torch,
  // "float4_e2m1fn_x2", torch.uint8); torch has it since 2.8): with per_1x32
  // scales (gfx950's MX formats) it is MXFP4. Otherwise it may stand for i4x2,
  // fp8 on an unknown GPU or fp8_e8m0, or be plain u8: listed below as
  // AITER's, not ours. (AITER's int4 MoE tables write torch.int4, aliased to
  // torch.uint32 where torch lacks it.)
  const auto packed = [&](std::string_view name) -> std::optional<DType> {
    if (strip(name, "torch.") == "uint8" && q == "per_1x32") return DType::mxfp4;
    return dtype_of(name);
  };
  const std::string quantisation = "AITER quantisation (" + std::string(q_dtype_a) + ", " +
                                   std::string(q_dtype_w) + ", " + std::string(q_type) + "): ";
  const auto other = [](std::string_view name, const auto& list) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  const auto unknown = [&](std::string_view column, std::string_view name) {
    if (other(strip(name, "torch."), kOtherDTypes)) {
      return fail(quantisation + std::string(column) + " '" + std::string(name) +
                  "' is AITER's, but no MoE format tdmsim expresses uses it");
    }
    return fail(std::string(column) + " '" + std::string(name) + "' is not a dtype AITER's MoE uses");
  };
  const auto a = packed(q_dtype_a);
  if (!a) return unknown("q_dtype_a", q_dtype_a);
  const auto w = packed(q_dtype_w);
  if (!w) return unknown("q_dtype_w", q_dtype_w);
  OperandFormats f{*a, *w, Quant::none};
  // per_1x32 / per_1x128 on int4 weights are group scales along K (1 x N
  // blocks of one output channel); on float formats per_1x32 is OCP MX E8M0
  // and per_1x128 / per_128x128 DeepSeek-V3's block scales (1x128
  // activations, 128x128 weights).
  if (q == "No") {
    f.quant = Quant::none;
  } else if (q == "per_Tensor") {
    f.quant = Quant::per_tensor;
  } else if (q == "per_Token") {
    f.quant = Quant::per_token;
  } else if (q == "per_1x32") {
    f.quant = *w == DType::int4 ? Quant::group_32 : Quant::per_1x32;
  } else if (q == "per_1x128" || q == "per_128x128") {
    f.quant = *w == DType::int4 ? Quant::group_128 : Quant::block_128;
  } else if (other(q, kOtherQuants)) {
    return fail(quantisation + "QuantType." + std::string(q) + " is AITER's, but tdmsim models no MoE format with it");
  } else {
    return fail("q_type '" + std::string(q_type) + "' is not an AITER QuantType");
  }
  if (const auto r = format_refusal(f)) return fail(quantisation + r->message);
  return f;
}

std::optional<AiterQuantNames> aiter_names(const OperandFormats& f) {
  if (format_refusal(f)) return std::nullopt;
  const auto torch = [](DType t) -> std::string {
    for (const auto& [name, d] : kDTypes) {
      if (d == t) return "torch." + std::string(name);
    }
    return {};
  };
  std::string q;
  switch (f.quant) {
    case Quant::none: q = "No"; break;
    case Quant::per_tensor: q = "per_Tensor"; break;
    case Quant::per_token: q = "per_Token"; break;
    case Quant::block_128: q = "per_1x128"; break;
    case Quant::per_1x32:
    case Quant::group_32: q = "per_1x32"; break;
    case Quant::group_128: q = "per_1x128"; break;
  }
  if (f.activation == DType::fp8_e5m2) return std::nullopt;  // AITER has no e5m2 MoE
  return AiterQuantNames{torch(f.activation), torch(f.weight), "QuantType." + q};
}

}  // namespace tdmsim
