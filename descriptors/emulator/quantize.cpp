#include "descriptors/emulator/quantize.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "descriptors/emulator/minifloat.h"
#include "descriptors/emulator/numerics.h"
#include "workloads/config/schema.h"

namespace tdmsim::emu {
namespace {

constexpr std::size_t kBlock = 128;  // DeepSeek-V3 block size (both dimensions)
constexpr std::size_t kMxGroup = 32;  // OCP MX block size

std::string pair_name(DType t, Quant q) {
  return "dtype " + std::string(config::enum_name(t)) + " with quant " +
         std::string(config::enum_name(q));
}

// quant_dequant over a span, with the format fixed outside the loop and the
// fp32-domain rounding (minifloat::round_saturating, identical to the codec):
// this runs over every weight of a scaled layer.
void quant_dequant_span(float* p, std::size_t n, float scale, DType t) {
  using namespace minifloat;
  const auto run = [&](const MiniFloat& f, int exp_bits) {
    const RoundParams r = round_params(f, exp_bits);
    for (std::size_t i = 0; i < n; ++i) p[i] = round_saturating(p[i] / scale, r) * scale;
  };
  switch (t) {
    case DType::fp8_e4m3: run(kE4m3, 4); return;
    case DType::fp8_e5m2: run(kE5m2, 5); return;
    case DType::fp8_e4m3_fnuz: {
      // FNUZ has no -0: a product that rounds to zero is +0.
      const RoundParams r = round_params(kE4m3Fnuz, 4);
      for (std::size_t i = 0; i < n; ++i) {
        const float q = round_saturating(p[i] / scale, r);
        p[i] = q == 0.0f ? 0.0f : q * scale;
      }
      return;
    }
    default:
      for (std::size_t i = 0; i < n; ++i) p[i] = quant_dequant(p[i], scale, t);
  }
}

// The dtype switch sits outside the loops: these run over every weight.
void round_span(float* p, std::size_t n, DType storage) {
  switch (storage) {
    case DType::fp32: return;
    case DType::bf16:
      for (std::size_t i = 0; i < n; ++i) p[i] = round_to_bf16(p[i]);
      return;
    default:
      for (std::size_t i = 0; i < n; ++i) p[i] = round_to(p[i], storage);
  }
}

// OCP MX along a row: 32-element groups sharing a power-of-two scale.
void mx_row(float* p, std::size_t n, DType t) {
  for (std::size_t g = 0; g < n; g += kMxGroup) {
    const std::size_t len = std::min(kMxGroup, n - g);
    const float scale = std::ldexp(1.0f, mx_scale_exponent(absmax(p + g, 1, len, len), t));
    quant_dequant_span(p + g, len, scale, t);
  }
}

// Scale groups of `group` elements along a row, each with its own amax scale.
void grouped_row(float* p, std::size_t n, std::size_t group, DType t) {
  for (std::size_t g = 0; g < n; g += group) {
    const std::size_t len = std::min(group, n - g);
    quant_dequant_span(p + g, len, scale_for_amax(absmax(p + g, 1, len, len), t), t);
  }
}

}  // namespace

DType storage_dtype(DType gemm_dtype) {
  switch (gemm_dtype) {
    case DType::fp32: return DType::fp32;
    case DType::fp16: return DType::fp16;
    default: return DType::bf16;
  }
}

bool is_scaled(DType t) { return dtype_bits(t) <= 8; }

float quant_max(DType t) {
  switch (t) {
    case DType::fp8_e4m3: return 448.0f;
    case DType::fp8_e4m3_fnuz: return 240.0f;
    case DType::fp8_e5m2: return 57344.0f;
    case DType::int8: return 127.0f;
    case DType::mxfp4: return 6.0f;
    case DType::int4: return 7.0f;
    default: return 0.0f;
  }
}

void check_quant(DType t, Quant q) {
  using Q = Quant;
  const auto one_of = [q](std::initializer_list<Quant> ok) {
    return std::find(ok.begin(), ok.end(), q) != ok.end();
  };
  std::string need;
  switch (t) {
    case DType::fp32:
    case DType::bf16:
    case DType::fp16:
      if (q != Q::none) need = "none (scales apply to fp8, int8, mxfp4 and int4)";
      break;
    case DType::fp8_e4m3:
      if (!one_of({Q::per_tensor, Q::per_token, Q::block_128, Q::per_1x32}))
        need = "per_tensor, per_token, block_128 or per_1x32";
      break;
    case DType::fp8_e4m3_fnuz:
    case DType::fp8_e5m2:
    case DType::int8:
      if (!one_of({Q::per_tensor, Q::per_token, Q::block_128}))
        need = "per_tensor, per_token or block_128";
      break;
    case DType::mxfp4:
      if (!one_of({Q::per_1x32, Q::none})) need = "per_1x32";
      break;
    case DType::int4:
      if (!one_of({Q::per_token, Q::group_32, Q::group_128}))
        need = "per_token, group_32 or group_128";
      break;
  }
  if (!need.empty()) throw std::invalid_argument(pair_name(t, q) + ": needs quant " + need);
}

Quant operand_quant(DType t, Quant q) {
  if (!is_scaled(t)) return Quant::none;
  if (t == DType::mxfp4 && q == Quant::none) return Quant::per_1x32;
  return q;
}

float scale_for_amax(float amax, DType t) {
  if (!(amax > 0.0f) || !std::isfinite(amax)) return 1.0f;
  return amax / quant_max(t);
}

float quant_dequant(float v, float scale, DType t) {
  const float s = v / scale;
  switch (t) {
    case DType::fp8_e4m3: return fp8_e4m3_bits_to_fp32(fp32_to_fp8_e4m3_bits(s)) * scale;
    case DType::fp8_e5m2: return fp8_e5m2_bits_to_fp32(fp32_to_fp8_e5m2_bits(s)) * scale;
    case DType::fp8_e4m3_fnuz: {
      const float q = fp8_e4m3fnuz_bits_to_fp32(fp32_to_fp8_e4m3fnuz_bits(s));
      return q == 0.0f ? 0.0f : q * scale;
    }
    case DType::int8: return static_cast<float>(fp32_to_int8(s)) * scale;
    case DType::int4: return static_cast<float>(fp32_to_int4(s)) * scale;
    case DType::mxfp4: return fp4_e2m1_bits_to_fp32(fp32_to_fp4_e2m1_bits(s)) * scale;
    default: throw std::invalid_argument("quant_dequant: " +
                                         std::string(config::enum_name(t)) + " has no scales");
  }
}

float round_to(float v, DType storage) {
  switch (storage) {
    case DType::fp32: return v;
    case DType::fp16: return round_to_fp16(v);
    case DType::bf16: return round_to_bf16(v);
    default: throw std::invalid_argument("round_to: " + std::string(config::enum_name(storage)) +
                                         " is not a storage format");
  }
}

float absmax(const float* a, std::size_t rows, std::size_t cols, std::size_t stride) {
  float m = 0.0f;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) m = std::max(m, std::fabs(a[r * stride + c]));
  }
  return m;
}

int mx_scale_exponent(float amax, DType t) {
  if (!(amax > 0.0f) || !std::isfinite(amax)) return 0;
  int e = 0;
  (void)std::frexp(amax, &e);  // amax = f * 2^e, f in [0.5, 1): floor(log2 amax) = e - 1
  // emax_elem: the exponent of the element format's largest normal value
  // (e2m1 6 = 1.5 x 2^2, e4m3 448 = 1.75 x 2^8, e5m2 57344 = 1.75 x 2^15).
  const int emax = t == DType::fp8_e4m3 ? 8 : t == DType::fp8_e5m2 ? 15 : 2;
  return std::clamp(e - 1 - emax, -127, 127);
}

void quantize_activations(float* a, std::size_t rows, std::size_t cols, std::size_t stride,
                          DType t, Quant q, float tensor_amax) {
  q = operand_quant(t, q);
  check_quant(t, q);
  if (!is_scaled(t)) {
    for (std::size_t r = 0; r < rows; ++r) round_span(a + r * stride, cols, t);
    return;
  }
  const float tensor_scale = scale_for_amax(tensor_amax, t);
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = a + r * stride;
    switch (q) {
      case Quant::per_tensor: quant_dequant_span(row, cols, tensor_scale, t); break;
      case Quant::per_token:
        quant_dequant_span(row, cols, scale_for_amax(absmax(row, 1, cols, cols), t), t);
        break;
      case Quant::block_128:
        for (std::size_t c = 0; c < cols; c += kBlock) {
          const std::size_t len = std::min(kBlock, cols - c);
          quant_dequant_span(row + c, len, scale_for_amax(absmax(row + c, 1, len, len), t), t);
        }
        break;
      case Quant::per_1x32: mx_row(row, cols, t); break;
      case Quant::group_32: grouped_row(row, cols, 32, t); break;
      case Quant::group_128: grouped_row(row, cols, 128, t); break;
      case Quant::none: break;  // rejected by check_quant
    }
  }
}

void quantize_weights(float* w, std::size_t rows, std::size_t cols, std::size_t row0,
                      DType t, Quant q, float bound) {
  q = operand_quant(t, q);
  check_quant(t, q);
  if (!is_scaled(t)) {
    round_span(w, rows * cols, t);
    return;
  }
  switch (q) {
    case Quant::per_tensor:
      quant_dequant_span(w, rows * cols, scale_for_amax(bound, t), t);
      break;
    case Quant::per_token:
      for (std::size_t r = 0; r < rows; ++r) {
        float* row = w + r * cols;
        quant_dequant_span(row, cols, scale_for_amax(absmax(row, 1, cols, cols), t), t);
      }
      break;
    case Quant::block_128:
      if (row0 % kBlock != 0) {
        throw std::invalid_argument("quantize_weights: block_128 rows must start on a "
                                    "128-row boundary, got row " + std::to_string(row0));
      }
      for (std::size_t r0 = 0; r0 < rows; r0 += kBlock) {
        const std::size_t nr = std::min(kBlock, rows - r0);
        for (std::size_t c0 = 0; c0 < cols; c0 += kBlock) {
          const std::size_t nc = std::min(kBlock, cols - c0);
          float* blk = w + r0 * cols + c0;
          const float scale = scale_for_amax(absmax(blk, nr, nc, cols), t);
          for (std::size_t r = 0; r < nr; ++r) quant_dequant_span(blk + r * cols, nc, scale, t);
        }
      }
      break;
    case Quant::per_1x32:
      for (std::size_t r = 0; r < rows; ++r) mx_row(w + r * cols, cols, t);
      break;
    case Quant::group_32:
    case Quant::group_128: {
      const std::size_t group = q == Quant::group_32 ? 32 : 128;
      for (std::size_t r = 0; r < rows; ++r) grouped_row(w + r * cols, cols, group, t);
      break;
    }
    case Quant::none: break;  // rejected by check_quant
  }
}

}  // namespace tdmsim::emu
