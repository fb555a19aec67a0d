#include "workloads/specs/quant_formats.h"

#include <algorithm>
#include <vector>

namespace tdmsim {
namespace {

// Every supported (activation, weight, quant), with a short label: AITER's
// fused-MoE formats (its QuantType and q_dtype_a / q_dtype_w combinations),
// plus fp16 and fp8 e5m2, which the project's own kernels and earlier
// scenarios use.
constexpr SupportedFormat kFormats[] = {
    {{DType::bf16, DType::bf16, Quant::none}, "bf16"},
    {{DType::fp16, DType::fp16, Quant::none}, "fp16"},
    {{DType::fp8_e4m3, DType::fp8_e4m3, Quant::per_tensor}, "fp8 OCP per-tensor"},
    {{DType::fp8_e4m3, DType::fp8_e4m3, Quant::per_token}, "fp8 OCP per-token"},
    {{DType::fp8_e4m3, DType::fp8_e4m3, Quant::block_128}, "fp8 OCP block 1x128"},
    {{DType::fp8_e4m3, DType::fp8_e4m3, Quant::per_1x32}, "MXFP8"},
    {{DType::fp8_e4m3_fnuz, DType::fp8_e4m3_fnuz, Quant::per_tensor}, "fp8 FNUZ per-tensor"},
    {{DType::fp8_e4m3_fnuz, DType::fp8_e4m3_fnuz, Quant::per_token}, "fp8 FNUZ per-token"},
    {{DType::fp8_e4m3_fnuz, DType::fp8_e4m3_fnuz, Quant::block_128}, "fp8 FNUZ block 1x128"},
    {{DType::fp8_e5m2, DType::fp8_e5m2, Quant::per_tensor}, "fp8 e5m2 per-tensor"},
    {{DType::fp8_e5m2, DType::fp8_e5m2, Quant::per_token}, "fp8 e5m2 per-token"},
    {{DType::fp8_e5m2, DType::fp8_e5m2, Quant::block_128}, "fp8 e5m2 block 1x128"},
    {{DType::int8, DType::int8, Quant::per_token}, "INT8 per-token / per-channel"},
    {{DType::mxfp4, DType::mxfp4, Quant::per_1x32}, "MXFP4 (fp4 x fp4)"},
    {{DType::bf16, DType::mxfp4, Quant::per_1x32}, "a16w4 (bf16 x MXFP4)"},
    {{DType::fp8_e4m3, DType::mxfp4, Quant::per_1x32}, "a8w4 (MXFP8 x MXFP4)"},
    {{DType::bf16, DType::int4, Quant::per_token}, "bf16 x INT4 per-channel"},
    {{DType::bf16, DType::int4, Quant::group_32}, "bf16 x INT4 group 32"},
    {{DType::bf16, DType::int4, Quant::group_128}, "bf16 x INT4 group 128"},
    {{DType::fp8_e4m3, DType::int4, Quant::per_token}, "fp8 OCP x INT4 per-channel"},
    {{DType::fp8_e4m3_fnuz, DType::int4, Quant::per_token}, "fp8 FNUZ x INT4 per-channel"},
};

std::string name(DType t) { return std::string(config::enum_name(t)); }
std::string name(Quant q) { return std::string(config::enum_name(q)); }

template <class T>
std::string join(const std::vector<T>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += i + 1 == v.size() ? " or " : ", ";
    s += name(v[i]);
  }
  return s;
}

}  // namespace

std::span<const SupportedFormat> supported_formats() { return kFormats; }

std::optional<FormatRefusal> format_refusal(const OperandFormats& f) {
  std::vector<DType> acts, weights;
  std::vector<Quant> quants;
  const auto add = [](auto& v, auto x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  };
  for (const SupportedFormat& s : kFormats) {
    add(acts, s.formats.activation);
    if (s.formats.activation == f.activation) add(weights, s.formats.weight);
    if (s.formats.activation == f.activation && s.formats.weight == f.weight) add(quants, s.formats.quant);
    if (s.formats == f) return std::nullopt;
  }
  if (weights.empty()) {
    return FormatRefusal{"dtype", "MoE scenarios run activations in " + join(acts) + ", not " +
                                      name(f.activation)};
  }
  if (quants.empty()) {
    return FormatRefusal{"weight_dtype", "dtype " + name(f.activation) +
                                             " pairs with weight_dtype " + join(weights) +
                                             " (the pairs AITER ships), not " + name(f.weight)};
  }
  return FormatRefusal{"quant", "dtype " + name(f.activation) + " with weight_dtype " +
                                    name(f.weight) + " runs with quant " + join(quants) +
                                    ", not " + name(f.quant)};
}

}  // namespace tdmsim

namespace tdmsim::config {

units::Parsed<WeightDType> ValueTraits<WeightDType>::parse(std::string_view t) {
  units::Parsed<WeightDType> out;
  if (t == "same") return out;
  if (const auto d = enum_from_name<DType>(t)) {
    out.value.dtype = *d;
    return out;
  }
  std::string names;
  for (const auto& n : enum_names<DType>()) names += n + ", ";
  out.error = "expected 'same' or a dtype (" + names.substr(0, names.size() - 2) + "), got '" +
              std::string(t) + "'";
  return out;
}

std::string ValueTraits<WeightDType>::text(const WeightDType& v) {
  return v.dtype ? std::string(enum_name(*v.dtype)) : "same";
}

}  // namespace tdmsim::config
