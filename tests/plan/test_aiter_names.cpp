// AITER's quantisation names <-> the scenario's (dtype, weight_dtype, quant),
// and the table of supported combinations behind both (quant_formats.h).
#include <string>

#include <catch2/catch.hpp>

#include "workloads/specs/aiter_names.h"

namespace tdmsim {
namespace {

struct Row {
  const char* a;
  const char* w;
  const char* q;
  OperandFormats want;
};

}  // namespace

TEST_CASE("AITER's names map to the scenario's formats", "[aiter][formats]") {
  using D = DType;
  using Q = Quant;
  const Row rows[] = {
      {"torch.bfloat16", "torch.bfloat16", "QuantType.No", {D::bf16, D::bf16, Q::none}},
      {"torch.float8_e4m3fn", "torch.float8_e4m3fn", "QuantType.per_Tensor",
       {D::fp8_e4m3, D::fp8_e4m3, Q::per_tensor}},
      {"torch.float8_e4m3fnuz", "torch.float8_e4m3fnuz", "QuantType.per_Token",
       {D::fp8_e4m3_fnuz, D::fp8_e4m3_fnuz, Q::per_token}},
      {"torch.float8_e4m3fn", "torch.float8_e4m3fn", "QuantType.per_1x128",
       {D::fp8_e4m3, D::fp8_e4m3, Q::block_128}},
      {"torch.float8_e4m3fnuz", "torch.float8_e4m3fnuz", "QuantType.per_128x128",
       {D::fp8_e4m3_fnuz, D::fp8_e4m3_fnuz, Q::block_128}},
      {"torch.float8_e4m3fn", "torch.float8_e4m3fn", "QuantType.per_1x32",
       {D::fp8_e4m3, D::fp8_e4m3, Q::per_1x32}},  // MXFP8
      {"torch.float4_e2m1fn_x2", "torch.float4_e2m1fn_x2", "QuantType.per_1x32",
       {D::mxfp4, D::mxfp4, Q::per_1x32}},  // MXFP4
      {"torch.bfloat16", "torch.float4_e2m1fn_x2", "QuantType.per_1x32",
       {D::bf16, D::mxfp4, Q::per_1x32}},  // a16w4
      {"torch.float8_e4m3fn", "torch.float4_e2m1fn_x2", "QuantType.per_1x32",
       {D::fp8_e4m3, D::mxfp4, Q::per_1x32}},  // a8w4
      {"torch.int8", "torch.int8", "QuantType.per_Token", {D::int8, D::int8, Q::per_token}},
      {"torch.bfloat16", "torch.int4", "QuantType.per_Token", {D::bf16, D::int4, Q::per_token}},
      {"torch.bfloat16", "torch.uint32", "QuantType.per_1x32", {D::bf16, D::int4, Q::group_32}},
      {"torch.bfloat16", "torch.int4", "QuantType.per_1x128", {D::bf16, D::int4, Q::group_128}},
      {"torch.float8_e4m3fnuz", "torch.uint32", "QuantType.per_Token",
       {D::fp8_e4m3_fnuz, D::int4, Q::per_token}},
      // torch.uint8, AITER's stand-in for fp4x2 where torch lacks it: fp4 with MX scales.
      {"torch.uint8", "torch.uint8", "QuantType.per_1x32", {D::mxfp4, D::mxfp4, Q::per_1x32}},
      {"torch.bfloat16", "torch.uint8", "QuantType.per_1x32", {D::bf16, D::mxfp4, Q::per_1x32}},
      // Tabs around a name, as spaces.
      {"torch.bfloat16\t", " torch.bfloat16", "\tQuantType.No", {D::bf16, D::bf16, Q::none}},
      // Prefixes are optional, as some tables and logs drop them.
      {"bfloat16", "float4_e2m1fn_x2", "per_1x32", {D::bf16, D::mxfp4, Q::per_1x32}},
  };
  for (const Row& r : rows) {
    INFO(r.a << " " << r.w << " " << r.q);
    std::string why;
    const auto f = formats_from_aiter(r.a, r.w, r.q, &why);
    REQUIRE(f.has_value());
    CHECK(*f == r.want);
    CHECK(why.empty());
    // And back: the names AITER writes (per_128x128 and uint32 come back as
    // per_1x128 and int4, their other spellings).
    const auto names = aiter_names(*f);
    REQUIRE(names.has_value());
    CHECK(formats_from_aiter(names->q_dtype_a, names->q_dtype_w, names->q_type) == f);
  }
  const auto names = aiter_names({D::fp8_e4m3, D::mxfp4, Q::per_1x32});
  REQUIRE(names.has_value());
  CHECK(names->q_dtype_a == "torch.float8_e4m3fn");
  CHECK(names->q_dtype_w == "torch.float4_e2m1fn_x2");
  CHECK(names->q_type == "QuantType.per_1x32");
}

TEST_CASE("names and combinations AITER does not ship are refused with a reason",
          "[aiter][formats]") {
  std::string why;
  // AITER's own names no MoE format of tdmsim's uses: refused as AITER quantisations (a
  // table may hold them: listed, not malformed); names AITER lacks: not AITER's.
  CHECK_FALSE(formats_from_aiter("torch.float32", "torch.float32", "QuantType.No", &why).has_value());
  CHECK(why.find("AITER quantisation (torch.float32") == 0);
  CHECK(why.find("q_dtype_a 'torch.float32' is AITER's") != std::string::npos);
  CHECK_FALSE(formats_from_aiter("torch.float8_e4m3fn", "torch.float8_e4m3fn", "QuantType.per_256x128", &why)
                  .has_value());
  CHECK(why.find("AITER quantisation (") == 0);
  CHECK(why.find("QuantType.per_256x128 is AITER's") != std::string::npos);
  CHECK_FALSE(formats_from_aiter("torch.float64", "torch.float64", "QuantType.No", &why).has_value());
  CHECK(why.find("q_dtype_a 'torch.float64' is not a dtype AITER's MoE uses") == 0);
  // uint8 without MX scales (AITER's fp8 on an unknown GPU, fp8_e8m0, u8): AITER's, not ours.
  CHECK_FALSE(formats_from_aiter("torch.uint8", "torch.uint8", "QuantType.per_Token", &why).has_value());
  CHECK(why.find("AITER quantisation (") == 0);
  CHECK(why.find("q_dtype_a 'torch.uint8' is AITER's") != std::string::npos);
  CHECK_FALSE(formats_from_aiter("torch.bfloat16", "torch.uint8", "QuantType.No", &why).has_value());
  CHECK(why.find("q_dtype_w 'torch.uint8' is AITER's") != std::string::npos);
  CHECK_FALSE(formats_from_aiter("torch.bfloat16", "torch.bfloat16", "QuantType.per_2x2", &why).has_value());
  CHECK(why.find("not an AITER QuantType") != std::string::npos);
  // fp4 weights need their MX scales.
  CHECK_FALSE(formats_from_aiter("torch.bfloat16", "torch.float4_e2m1fn_x2", "QuantType.No", &why).has_value());
  CHECK(why.find("runs with quant per_1x32") != std::string::npos);
  // fp8 activations never pair with bf16 weights.
  CHECK_FALSE(formats_from_aiter("torch.float8_e4m3fn", "torch.bfloat16", "QuantType.per_Token", &why).has_value());
  CHECK(why.find("pairs with weight_dtype") != std::string::npos);
  // MX scales are OCP: FNUZ has none.
  CHECK_FALSE(formats_from_aiter("torch.float8_e4m3fnuz", "torch.float8_e4m3fnuz", "QuantType.per_1x32", &why).has_value());
  CHECK_FALSE(aiter_names({DType::fp8_e5m2, DType::fp8_e5m2, Quant::per_token}).has_value());
  CHECK_FALSE(aiter_names({DType::bf16, DType::bf16, Quant::per_token}).has_value());
}

TEST_CASE("the format table names the key to change", "[formats]") {
  using D = DType;
  using Q = Quant;
  CHECK(format_refusal({D::fp32, D::fp32, Q::none})->key == "dtype");
  CHECK(format_refusal({D::int4, D::int4, Q::group_32})->key == "dtype");
  CHECK(format_refusal({D::bf16, D::fp8_e4m3, Q::per_token})->key == "weight_dtype");
  CHECK(format_refusal({D::mxfp4, D::int4, Q::per_1x32})->key == "weight_dtype");
  CHECK(format_refusal({D::fp8_e4m3, D::fp8_e4m3, Q::none})->key == "quant");
  CHECK(format_refusal({D::bf16, D::bf16, Q::per_token})->key == "quant");
  CHECK(format_refusal({D::bf16, D::int4, Q::per_1x32})->key == "quant");
  CHECK(format_refusal({D::int8, D::int8, Q::per_tensor})->key == "quant");
  CHECK_FALSE(format_refusal({D::fp16, D::fp16, Q::none}).has_value());
  CHECK_FALSE(format_refusal({D::fp8_e5m2, D::fp8_e5m2, Q::block_128}).has_value());
  CHECK(activation_quant({D::bf16, D::mxfp4, Q::per_1x32}) == Q::none);
  CHECK(activation_quant({D::fp8_e4m3, D::mxfp4, Q::per_1x32}) == Q::per_1x32);
  CHECK(compute_dtype({D::bf16, D::int4, Q::group_128}) == D::bf16);
}

}  // namespace tdmsim
