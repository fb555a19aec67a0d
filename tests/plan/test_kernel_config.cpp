// Tuned kernel tables in AITER's CSV columns: the reader (good files of both
// column styles, every kind of bad file), AITER's padded-token lookup, tile
// names, the scenario-derived key (shared experts fused in), and AITER's
// default heuristic on hand-worked cases. Tables are the hand-made ones under
// tests/data/kernel_config/.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "descriptors/plan/aiter_heuristic.h"
#include "descriptors/plan/aiter_kernels.h"
#include "descriptors/plan/default_tile.h"
#include "descriptors/plan/kernel_config.h"
#include "descriptors/plan/kernel_request.h"
#include "descriptors/plan/moe_plan.h"
#include "descriptors/plan/routing.h"
#include "plan_test_util.h"
#include "workloads/config/diagnostics.h"

using namespace tdmsim;
using namespace tdmsim::plan;
using namespace tdmsim::plan::test;

namespace {

const std::filesystem::path kData = std::filesystem::path(TDMSIM_TEST_DATA_DIR) / "kernel_config";

KernelConfigTable table(const std::string& name) { return read_kernel_config(kData / name); }

// The first diagnostic of the ConfigError that reading `name` throws.
config::Diagnostic read_error(const std::string& name) {
  try {
    table(name);
  } catch (const config::ConfigError& e) {
    REQUIRE(!e.diagnostics().empty());
    return e.diagnostics().front();
  }
  FAIL("no error reading " << name);
  return {};
}

KernelConfigQuery query(std::uint32_t cu, std::uint32_t tokens, AiterFormat f, std::uint32_t expert = 8,
                        std::uint32_t topk = 2) {
  KernelConfigQuery q;
  q.cu_num = cu;
  q.tokens = tokens;
  q.model_dim = 256;
  q.inter_dim = 128;
  q.expert = expert;
  q.topk = topk;
  q.act_type = "ActivationType.Silu";
  q.dtype = "torch.bfloat16";
  q.format = f;
  return q;
}

constexpr AiterFormat kBf16{DType::bf16, Quant::none};
constexpr AiterFormat kFp8Token{DType::fp8_e4m3, Quant::per_token};
constexpr AiterFormat kFp8Block{DType::fp8_e4m3, Quant::block_128};

}  // namespace

TEST_CASE("AITER's padded token count: the next power of two to 32768, then 32768 and 131072", "[kernel_config]") {
  // fused_moe.py get_padded_M with _PADDED_M_TIERS = [32768, 131072], worked by hand.
  CHECK(aiter_padded_m(1) == 1);
  CHECK(aiter_padded_m(2) == 2);
  CHECK(aiter_padded_m(3) == 4);
  CHECK(aiter_padded_m(16) == 16);
  CHECK(aiter_padded_m(17) == 32);
  CHECK(aiter_padded_m(513) == 1024);
  CHECK(aiter_padded_m(1024) == 1024);
  CHECK(aiter_padded_m(2047) == 2048);
  CHECK(aiter_padded_m(3000) == 4096);
  CHECK(aiter_padded_m(16385) == 32768);
  CHECK(aiter_padded_m(32767) == 32768);
  CHECK(aiter_padded_m(32768) == 32768);
  CHECK(aiter_padded_m(131071) == 32768);
  CHECK(aiter_padded_m(131072) == 131072);
  CHECK(aiter_padded_m(16777216) == 131072);
}

TEST_CASE("AITER format names map to tdmsim formats - others map to nothing", "[kernel_config]") {
  CHECK(aiter_format("torch.bfloat16", "torch.bfloat16", "QuantType.No") == kBf16);
  CHECK(aiter_format("torch.float8_e4m3fn", "torch.float8_e4m3fn", "QuantType.per_1x128") == kFp8Block);
  CHECK(aiter_format("torch.float8_e4m3fn", "torch.float8_e4m3fn", "QuantType.per_128x128") == kFp8Block);
  CHECK(aiter_format("torch.float8_e4m3fn", "torch.float8_e4m3fn", "QuantType.per_Token") == kFp8Token);
  CHECK(aiter_format("torch.float8_e4m3fn", "torch.float8_e4m3fn", "QuantType.per_Tensor") ==
        AiterFormat{DType::fp8_e4m3, Quant::per_tensor});
  // Through the formats table (workloads/specs/aiter_names.h): MX, FNUZ and mixed pairs.
  CHECK(aiter_format("torch.float4_e2m1fn_x2", "torch.float4_e2m1fn_x2", "QuantType.per_1x32") ==
        AiterFormat{DType::mxfp4, Quant::per_1x32});
  CHECK(aiter_format("torch.float8_e4m3fnuz", "torch.float8_e4m3fnuz", "QuantType.per_Token") ==
        AiterFormat{DType::fp8_e4m3_fnuz, Quant::per_token});
  CHECK(aiter_format("torch.bfloat16", "torch.float4_e2m1fn_x2", "QuantType.per_1x32") ==
        AiterFormat{DType::bf16, Quant::per_1x32, DType::mxfp4});  // a16w4
  CHECK(aiter_format("torch.float8_e4m3fn", "torch.float8_e4m3fn", "QuantType.per_1x32") ==
        AiterFormat{DType::fp8_e4m3, Quant::per_1x32});  // MXFP8
  CHECK_FALSE(aiter_format("torch.bfloat16", "torch.bfloat16", "QuantType.per_Token"));
  CHECK_FALSE(aiter_format("torch.float32", "torch.float32", "QuantType.No"));
}

TEST_CASE("a table with CK kernel names and the optional columns is read", "[kernel_config]") {
  const KernelConfigTable t = table("ck_names.csv");
  CHECK(t.tile1_name == "kernelName1");
  REQUIRE(t.rows.size() == 6);
  const KernelConfigRow& r = t.rows[1];
  CHECK(r.line == 3);
  CHECK(r.cu_num == 304);
  CHECK(r.token == 64);
  CHECK(r.block_m == 64);
  CHECK(r.ksplit == 2);
  CHECK(r.dtype == "torch.bfloat16");
  CHECK(r.use_g1u1 == std::optional<bool>(true));
  CHECK(r.doweight_stage1 == std::optional<bool>(false));
  CHECK_FALSE(r.run_1stage);
  CHECK(t.rows[4].run_1stage);
  CHECK(read_row_tile(t, r, false).tile == KernelTile{256, 64, 128, 64});
  CHECK(read_row_tile(t, r, true).tile == KernelTile{256, 64, 64, 64});
}

TEST_CASE("a CK kernel name gives its pipeline's LDS buffers: v1 one, v2/v3 two, other names none",
          "[kernel_config]") {
  const KernelConfigTable t = table("ck_names.csv");
  CHECK(read_row_tile(t, t.rows[0], false).lds_buffers == 1);  // ..._TypeCast_v1_Nswizzle0_...
  CHECK(read_row_tile(t, t.rows[1], true).lds_buffers == 1);   // ..._TypeCast_v1 at the end
  KernelConfigRow r = t.rows[0];
  r.block_m = 128;
  r.tile2 = "moe_ck2stages_gemm2_256x128x64x64_1x4_TypeCastExpertWeight_v3_Nswizzle0_Quant0_MulRoutedWeight1_B16";
  CHECK(read_row_tile(t, r, true).lds_buffers == 2);
  r.tile2 = "moe_ck2stages_gemm2_256x128x64x64_1x4_TypeCast_v2_Nswizzle0";
  CHECK(read_row_tile(t, r, true).lds_buffers == 2);
  const KernelConfigTable s = table("short_tiles.csv");
  CHECK(read_row_tile(s, s.rows[4], false).lds_buffers == 0);  // 256x64x128x128: no version
  CHECK(read_row_tile(s, s.rows[0], true).lds_buffers == 0);   // empty
}

TEST_CASE("a CK kernel name's pipeline field: another version is noted, two versions refused", "[kernel_config]") {
  // _v9: no pipeline the model knows; read as a name without one, and said so.
  const std::string v9 = "moe_ck2stages_gemm1_256x32x64x128_1x4_MulABScale_v9_Nswizzle0";
  const AiterTileReading nine = read_aiter_tile(v9, 32, std::nullopt, false);
  CHECK(nine.error.empty());
  CHECK(nine.lds_buffers == 0);
  CHECK(nine.tile == KernelTile{256, 32, 64, 128});
  CHECK_THAT(nine.reading, Catch::Contains("its pipeline _v9 is not CK's v1, v2 or v3"));
  // The same version twice is one pipeline; two versions are no CK name.
  CHECK(read_aiter_tile("moe_ck2stages_gemm2_256x32x64x128_1x4_v1_MulABScale_v1", 32, std::nullopt, true).lds_buffers ==
        1);
  const std::string two = "moe_ck2stages_gemm2_256x32x64x128_1x4_v1_MulABScale_v3_Nswizzle0";
  CHECK_THAT(read_aiter_tile(two, 32, std::nullopt, true).error,
             Catch::Contains("names two pipelines (_v1 and _v3)"));
  // Not a version field: _v followed by letters, or digits then another character.
  CHECK(read_aiter_tile("moe_ck2stages_gemm1_256x32x64x128_1x4_vsilu_v3x_v2", 32, std::nullopt, false).lds_buffers ==
        2);
}

TEST_CASE("a table with short tile names: empty, THREADSxMxNxK and assembly MxN", "[kernel_config]") {
  const KernelConfigTable t = table("short_tiles.csv");
  CHECK(t.tile1_name == "tile1");
  REQUIRE(t.rows.size() == 10);
  CHECK_FALSE(t.rows[0].dtype.size());  // no dtype column
  CHECK_FALSE(t.rows[0].use_g1u1);
  // MxN: an assembly kernel's M x N; 256 threads and the K of the default
  // tile for M in the row's format, the bf16 default's LDS bytes: 16x128 in
  // fp8 takes K 256 (bf16 128 x 2), 32x64 in bf16 K 128, 128x128 in MXFP4 K
  // 256 (bf16 64 x 4).
  CHECK(read_row_tile(t, t.rows[0], false).tile == KernelTile{256, 16, 128, 256});
  CHECK(read_row_tile(t, t.rows[7], false).tile == KernelTile{256, 32, 64, 128});
  CHECK(read_row_tile(t, t.rows[8], false).tile == KernelTile{256, 128, 128, 256});
  CHECK(read_row_tile(t, t.rows[0], true).tile.is_auto());  // empty: the heuristic's tile
  CHECK(read_row_tile(t, t.rows[1], false).tile.is_auto());
  CHECK(read_row_tile(t, t.rows[1], true).tile == KernelTile{64, 32, 32, 64});
  CHECK(read_row_tile(t, t.rows[5], true).tile == KernelTile{128, 16, 128, 128});
}

TEST_CASE("bad tables are refused at their file, line and column", "[kernel_config]") {
  SECTION("a missing column") {
    const auto d = read_error("missing_column.csv");
    CHECK(d.where.line == 1);
    CHECK(d.key == "q_type");
    CHECK(d.message.find("missing column 'q_type'") != std::string::npos);
    CHECK(d.where.file.find("missing_column.csv") != std::string::npos);
  }
  SECTION("no header: a blank first line, then a data row") {
    const auto d = read_error("no_header.csv");
    CHECK(d.where.line == 2);
    CHECK(d.message.find("expected the header line") != std::string::npos);
  }
  SECTION("both kernelName1/2 and tile1/2: two readings of a row's kernels") {
    const auto d = read_error("both_tile_columns.csv");
    CHECK(d.where.line == 1);
    CHECK(d.key == "tile1");
    CHECK(d.message.find("keep one pair") != std::string::npos);
  }
  SECTION("a bad number") {
    const auto d = read_error("bad_number.csv");
    CHECK(d.where.line == 3);
    CHECK(d.where.column == 11);  // "256,2,256,12a8": inter_dim starts at column 11
    CHECK(d.key == "inter_dim");
    CHECK(d.message.find("'12a8'") != std::string::npos);
  }
  SECTION("two rows of one key with different values") {
    const auto d = read_error("duplicate.csv");
    CHECK(d.where.line == 4);
    CHECK(d.message.find("line 2") != std::string::npos);
  }
  SECTION("a short row") {
    const auto d = read_error("short_row.csv");
    CHECK(d.where.line == 2);
    CHECK(d.message.find("15 fields, the header 19") != std::string::npos);
  }
  SECTION("a bad flag") {
    const auto d = read_error("bad_flag.csv");
    CHECK(d.where.line == 2);
    CHECK(d.key == "run_1stage");
  }
  SECTION("a block_m the layout cannot have") {
    const auto d = read_error("bad_block_m.csv");
    CHECK(d.key == "block_m");
    CHECK(d.message.find("a multiple of 16 in 16..256") != std::string::npos);
    CHECK(d.message.find("got 40") != std::string::npos);
  }
  SECTION("an empty file") { CHECK(read_error("empty.csv").message.find("empty") != std::string::npos); }
  SECTION("a file that does not exist") {
    CHECK(read_error("no-such-table.csv").message.find("no-such-table.csv") != std::string::npos);
  }
  SECTION("a folder") { CHECK(read_error("").message.find("is a folder") != std::string::npos); }
  SECTION("CRLF line ends, quoted fields, a NUL byte") {
    const std::string h = "cu_num,token,model_dim,inter_dim,expert,topk,act_type,q_dtype_a,q_dtype_w,q_type,block_m,"
                          "ksplit,tile1,tile2\r\n";
    const auto t = parse_kernel_config(
        h + "256,1,256,128,8,2,\"ActivationType.Silu\",torch.bfloat16,torch.bfloat16,QuantType.No,32,0,,\r\n", "x.csv");
    REQUIRE(t.rows.size() == 1);
    CHECK(t.rows[0].act_type == "ActivationType.Silu");
    CHECK_THROWS_WITH(parse_kernel_config(h + std::string("256,1\0,2\n", 9), "x.csv"), Catch::Contains("NUL"));
    CHECK_THROWS_AS(parse_kernel_config(h + "\"256,1\n", "x.csv"), config::ConfigError);
    // Lines ended by CR alone read as one line: refused at the first CR, not as a duplicated header column.
    std::string cr_only = h.substr(0, h.size() - 2) + "\r256,1,256,128,8,2\r";
    CHECK_THROWS_WITH(parse_kernel_config(cr_only, "x.csv"), Catch::Contains("a CR alone"));
  }
  SECTION("a shape no layer has: a zero dimension") {
    const std::string h = "cu_num,token,model_dim,inter_dim,expert,topk,act_type,q_dtype_a,q_dtype_w,q_type,block_m,"
                          "ksplit,tile1,tile2\n";
    const std::string tail = ",ActivationType.Silu,torch.bfloat16,torch.bfloat16,QuantType.No,32,0,,\n";
    const auto error_of = [&](const std::string& row) {
      try {
        parse_kernel_config(h + row + tail, "x.csv");
      } catch (const config::ConfigError& e) {
        return e.diagnostics().front();
      }
      FAIL("no error for " << row);
      return config::Diagnostic{};
    };
    const auto zero = error_of("256,1,256,0,8,2");
    CHECK(zero.where.line == 2);
    CHECK(zero.where.column == 11);
    CHECK(zero.key == "inter_dim");
    CHECK_THAT(zero.message, Catch::Contains("inter_dim: must be at least 1"));
    CHECK(error_of("0,1,256,128,8,2").key == "cu_num");
    CHECK(error_of("256,1,256,128,0,2").key == "expert");
    CHECK(error_of("256,1,256,128,8,0").key == "topk");
    // More picks than the GPU's experts: an expert-parallel shard's key (AITER's
    // expert is w1.shape[0], the local experts).
    CHECK(parse_kernel_config(h + "256,1,256,128,2,9" + tail, "x.csv").rows.size() == 1);
  }
  // A UTF-8 byte-order mark before the header is skipped.
  {
    std::ifstream in(kData / "ck_names.csv", std::ios::binary);
    const std::string ck((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(parse_kernel_config("\xEF\xBB\xBF" + ck, "bom.csv").rows.size() == table("ck_names.csv").rows.size());
  }
  // Identical duplicates are harmless (AITER's dict keeps one).
  CHECK(table("duplicate_same.csv").rows.size() == 1);
}

TEST_CASE("bad tile names and tiles whose M is not block_m are refused naming the tile", "[kernel_config]") {
  const KernelConfigTable bad = table("bad_tile.csv");
  try {
    read_row_tile(bad, bad.rows.at(0), false);
    FAIL("accepted a bad tile name");
  } catch (const config::ConfigError& e) {
    const auto& d = e.diagnostics().front();
    CHECK(d.where.line == 2);
    CHECK(d.where.column == 108);  // the tile1 field
    CHECK(d.key == "tile1");
    CHECK(d.message.find("'256x16x64'") != std::string::npos);  // three numbers
  }
  // A kernel name that is not a CK GEMM's or FlyDSL's (AITER's assembly
  // kernels) names no tile: the default tile, as for an empty name.
  KernelConfigRow asm_row = bad.rows.at(0);
  asm_row.tile1 = "fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x256";
  CHECK(read_row_tile(bad, asm_row, false).tile.is_auto());
  asm_row.tile1 = "_ZN5aiter40fmoe_fp8_g1u1_subGU_256E";
  CHECK(read_row_tile(bad, asm_row, false).tile.is_auto());
  const KernelConfigTable mm = table("tile_m_mismatch.csv");
  CHECK_THROWS_WITH(read_row_tile(mm, mm.rows.at(0), false),
                    Catch::Contains("256x32x64x128") && Catch::Contains("block_m 16"));
}

TEST_CASE("AITER's assembly stage-1 kernel names give their tile_m x tile_n", "[kernel_config]") {
  // hsa/gfx942/fmoe_2stages names, plain and mangled: 256 threads (asm_moe_2stage.cu
  // bdx), tile_m = block_m, tile_n the stage's output columns (gdx = inter_dim / tile_n),
  // K that of the default tile for M in the row's format (fp8: twice bf16's).
  const AiterFormat fp8_token{DType::fp8_e4m3_fnuz, Quant::per_token};
  const auto read = [&](std::string_view name, std::uint32_t block_m, bool second = false) {
    return read_aiter_tile(name, block_m, fp8_token, second);
  };
  const AiterTileReading mangled = read("_ZN5aiter48fmoe_stage1_bf16_pertokenFp8_g1u1_64x128_2tg_pf3E", 64);
  CHECK(mangled.error.empty());
  CHECK(mangled.assembly_stage1);
  CHECK(mangled.tile == KernelTile{256, 64, 128, 2 * default_tile(64).k});
  CHECK(read("fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf3", 32).tile ==
        KernelTile{256, 32, 128, 2 * default_tile(32).k});
  CHECK(read("fmoe_stage1_bf16_pertokenFp8_g1u1_16x512_pf3", 16).tile.n == 512);
  // Without a format, bf16's K.
  CHECK(read_aiter_tile("fmoe_stage1_bf16_pertokenInt8_g1u1_32x128_3tg_pf3", 32, std::nullopt, false).tile ==
        KernelTile{256, 32, 128, default_tile(32).k});
  // Refused: M other than block_m, a stage-1 kernel in the stage-2 column, no tile field.
  CHECK_THAT(read("fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf3", 64).error,
             Catch::Contains("block_m 64"));
  CHECK_THAT(read("fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf3", 32, true).error,
             Catch::Contains("stage-1 kernel in the stage-2 column"));
  CHECK_THAT(read("fmoe_stage1_bf16_pertokenFp8_g1u1", 32).error, Catch::Contains("no tile_m x tile_n"));
  CHECK(read("fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf3", 64).tile.is_auto());
  // A 1-stage assembly kernel's name (no CK tile, not a 2-stage kernel): the default tile.
  const AiterTileReading one = read("fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x256", 64);
  CHECK(one.error.empty());
  CHECK(one.tile.is_auto());
  CHECK(!one.assembly_stage1);
  // fused_moe.py runs no assembly stage 2 (its stage 2 is always ck_moe_stage2_fwd): such a
  // name is another kernel's, the default tile.
  CHECK(read("fmoe_stage2_bf16_pertokenInt8_g1u1_32x128", 32, true).tile.is_auto());
  // The table reader takes the same reading, refusing at the row's column.
  const KernelConfigTable bad = table("bad_tile.csv");
  KernelConfigRow row = bad.rows.at(0);  // fp8 OCP per-token, block_m 16
  row.tile1 = "fmoe_stage1_bf16_pertokenFp8_g1u1_16x256_2tg_pf3";
  CHECK(read_row_tile(bad, row, false).tile == KernelTile{256, 16, 256, 2 * default_tile(16).k});
  row.tile1 = "fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf3";
  CHECK_THROWS_WITH(read_row_tile(bad, row, false), Catch::Contains("column tile1") && Catch::Contains("block_m 16"));
  CHECK(read("fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf3", 32).lds_buffers == 0);
}

TEST_CASE("FlyDSL kernel names give their tile, and a stage-2 name its combine", "[kernel_config]") {
  // aiter/ops/flydsl moe kernels' flydsl_kernel_name:
  // flydsl_moe{stage}_a{a}_w{b}_{out}_t{M}x{N}x{K}[_{mode}], later versions
  // adding fields after the mode (_bnt2, _xcd4); 256 threads a workgroup.
  const auto read = [](std::string_view name, std::uint32_t block_m, bool second) {
    return read_aiter_tile(name, block_m, std::nullopt, second);
  };
  const AiterTileReading one = read("flydsl_moe1_afp4_wfp4_bf16_t32x256x256", 32, false);
  CHECK(one.error.empty());
  CHECK(one.tile == KernelTile{256, 32, 256, 256});  // tile_k in elements, as CK's K
  CHECK(one.combine == DownCombine::machine);       // stage 1 says nothing of the combine
  CHECK(!one.assembly_stage1);
  CHECK_THAT(one.reading, Catch::Contains("FlyDSL stage-1"));
  const AiterTileReading reduce = read("flydsl_moe2_afp4_wfp4_bf16_t64x128x256_reduce", 64, true);
  CHECK(reduce.error.empty());
  CHECK(reduce.tile == KernelTile{256, 64, 128, 256});
  CHECK(reduce.combine == DownCombine::reduce);
  const std::pair<const char*, DownCombine> modes[] = {
      {"flydsl_moe2_afp4_wfp4_bf16_t64x128x256_atomic", DownCombine::atomic},
      {"flydsl_moe2_abf16_wint4_bf16_t64x128x128_reduce_bnt2_xcd4", DownCombine::reduce},
      {"flydsl_moe2_afp8_wfp8_bf16_t64x128x128_bnt2_atomic", DownCombine::atomic},
      // No mode: FlyDSL's stage 2 accumulates (accumulate defaults to True).
      {"flydsl_moe2_afp4_wfp4_bf16_t64x128x256", DownCombine::atomic},
      {"flydsl_moe2_afp4_wfp4_bf16_t64x128x256_xcd4", DownCombine::atomic},
  };
  for (const auto& [name, mode] : modes) {
    INFO(name);
    const AiterTileReading r = read(name, 64, true);
    CHECK(r.error.empty());
    CHECK(r.combine == mode);
  }
  // Any other name leaves the combine to the machine; so does a stage-1 name.
  const std::tuple<const char*, std::uint32_t, bool> others[] = {
      {"moe_ck2stages_gemm2_256x32x64x64_1x4_TypeCastExpertWeight_v1_Nswizzle0_Quant0_MulRoutedWeight1_B16_B16_B16",
       32, true},
      {"256x64x128x128", 64, true},
      {"", 64, true},
      {"flydsl_moe1_afp4_wfp4_bf16_t32x256x256", 32, false},
      {"fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x256", 32, true},
  };
  for (const auto& [name, block_m, second] : others) {
    INFO(name);
    const AiterTileReading r = read(name, block_m, second);
    CHECK(r.error.empty());
    CHECK(r.combine == DownCombine::machine);
  }
  // FlyDSL's 8-bit stage 2 with bf16 output accumulates whatever its mode
  // (moe_kernels.py _get_compiled_stage2); with other output it reduces.
  const AiterTileReading fp8 = read("flydsl_moe2_afp8_wfp8_bf16_t64x128x128_reduce", 64, true);
  CHECK(fp8.combine == DownCombine::atomic);
  CHECK_THAT(fp8.reading, Catch::Contains("8-bit stage 2 with bf16 output adds atomically"));
  CHECK(read("flydsl_moe2_afp8_wfp8_f16_t64x128x128_reduce", 64, true).combine == DownCombine::reduce);
  // Fields the model does not read are said; a mode misspelt is one of them.
  CHECK_THAT(read("flydsl_moe2_abf16_wint4_bf16_t64x128x128_reduce_bnt2_xcd4", 64, true).reading,
             Catch::Contains("fields not read: bnt2, xcd4"));
  const AiterTileReading typo = read("flydsl_moe2_afp4_wfp4_bf16_t64x128x256_reduced", 64, true);
  CHECK(typo.combine == DownCombine::atomic);
  CHECK_THAT(typo.reading, Catch::Contains("fields not read: reduced"));
  CHECK_THAT(read("flydsl_moe1_direct_afp4_wfp4_bf16_t16x256x256", 16, false).reading,
             Catch::Contains("fields not read: direct"));
  // _sbm<S>: the sort's block; equal to tile_m it is the row's block_m as usual.
  CHECK(read("flydsl_moe2_afp4_wfp4_bf16_t64x256x256_reduce_sbm64", 64, true).tile == KernelTile{256, 64, 256, 256});
  CHECK_THAT(read("flydsl_moe2_afp4_wfp4_bf16_t64x256x256_reduce_sbm128", 128, true).error,
             Catch::Contains("sort block _sbm128 differs from its tile_m 64"));
  // Refused: the other stage's column, M other than block_m, no tile, not a
  // MoE stage, tile numbers out of range, both modes, a tile of four numbers.
  CHECK_THAT(read("flydsl_moe1_afp4_wfp4_bf16_t32x256x256", 32, true).error,
             Catch::Contains("FlyDSL stage-1 kernel in the stage-2 column"));
  CHECK_THAT(read("flydsl_moe2_afp4_wfp4_bf16_t32x128x256_reduce", 32, false).error,
             Catch::Contains("FlyDSL stage-2 kernel in the stage-1 column"));
  CHECK_THAT(read("flydsl_moe2_afp4_wfp4_bf16_t32x128x256_reduce", 64, true).error, Catch::Contains("block_m 64"));
  CHECK(read("flydsl_moe2_afp4_wfp4_bf16_t32x128x256_reduce", 64, true).tile.is_auto());
  CHECK_THAT(read("flydsl_moe2_afp4_wfp4_bf16_reduce", 32, true).error, Catch::Contains("no _t<M>x<N>x<K>"));
  CHECK_THAT(read("flydsl_moe2_afp4_wfp4_bf16_t32x128_reduce", 32, true).error,
             Catch::Contains("its tile field t32x128 is not M x N x K"));
  CHECK_THAT(read("flydsl_moe3_afp4_wfp4_bf16_t32x128x256", 32, true).error,
             Catch::Contains("not a FlyDSL MoE stage"));
  CHECK_THAT(read("flydsl_moe_afp4_wfp4_bf16_t32x128x256", 32, true).error,
             Catch::Contains("not a FlyDSL MoE stage"));
  CHECK_THAT(read("flydsl_moe2x_afp4_wfp4_bf16_t32x128x256", 32, true).error,
             Catch::Contains("not a FlyDSL MoE stage"));
  CHECK_THAT(read("flydsl_moe2_afp4_wfp4_bf16_t32x128x256_reduce_atomic", 32, true).error,
             Catch::Contains("names both modes"));
  CHECK_THAT(read("flydsl_moe2_afp4_wfp4_bf16_t32x128x256x4_reduce", 32, true).error,
             Catch::Contains("its tile field t32x128x256x4 is not M x N x K"));
  CHECK_THAT(read("flydsl_moe2_afp4_wfp4_bf16_t32x0x256", 32, true).error,
             Catch::Contains("not three whole numbers"));
  CHECK_THAT(read("flydsl_moe2_afp4_wfp4_bf16_t32x99999999999x256", 32, true).error,
             Catch::Contains("not three whole numbers"));
  // The table reader takes the same reading: a row's FlyDSL names give both
  // tiles, and its stage-2 name the combine (kernel_request).
  const KernelConfigTable bad = table("bad_tile.csv");
  KernelConfigRow row = bad.rows.at(0);  // block_m 16
  row.tile1 = "flydsl_moe1_abf16_wint4_bf16_t16x128x128";
  row.tile2 = "flydsl_moe2_abf16_wint4_bf16_t16x128x128_reduce";
  CHECK(read_row_tile(bad, row, false).tile == KernelTile{256, 16, 128, 128});
  CHECK(read_row_tile(bad, row, true).tile == KernelTile{256, 16, 128, 128});
  row.tile1 = row.tile2;
  CHECK_THROWS_WITH(read_row_tile(bad, row, false),
                    Catch::Contains("column tile1") && Catch::Contains("stage-2 kernel in the stage-1 column"));
}

TEST_CASE("AITER's assembly stage-1 kernel names give their workgroups a CU (_<N>tg)", "[kernel_config]") {
  // AITER's kernel lists call the field tg_num_perCU (hsa/gfx942/fmoe/silu/
  // fmoe_bf16_blockscaleFp8_g1u1_silu.csv); asm_moe_2stage.cu launches a
  // plain grid, so the count is what the code object's registers and LDS let
  // a CU hold.
  // (The tile of each name is 32 rows unless it says 16 or 64; read at its M.)
  const std::pair<const char*, std::uint32_t> cases[] = {
      {"fmoe_stage1_bf16_pertokenInt8_g1u1_32x128_3tg_pf3", 3},
      {"_ZN5aiter48fmoe_stage1_bf16_pertokenFp8_g1u1_64x128_2tg_pf3E", 2},
      {"fmoe_stage1_bf16_pertokenFp8_g1u1_16x256_2tg", 2},  // at the end
      {"_ZN5aiter44fmoe_stage1_bf16_pertokenFp8_g1u1_16x256_4tgE", 4},
      {"fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg", 3},
      // No such field, or not one of 1 to kMaxTgPerCu: 0 (nothing said).
      {"fmoe_stage1_bf16_pertokenFp8_g1u1_16x512_pf3", 0},
      {"fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_0tg_pf3", 0},
      {"fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_17tg_pf3", 0},
      {"fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_99999999999tg_pf3", 0},
      {"fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tgx_pf3", 0},
      {"fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_tg_pf3", 0},
      {"fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3", 0},
      // The first field counts.
      {"fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_2tg_3tg", 2},
      // Only assembly stage-1 names: a 1-stage kernel's list gives its count, and CK names have none.
      {"fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x256", 0},
      {"moe_ck2stages_gemm1_256x32x64x128_1x4_2tg_v1", 0},
      {"", 0},
  };
  for (const auto& [name, n] : cases) {
    INFO(name);
    const std::string_view text = name;
    const std::uint32_t m = text.find("_16x") != std::string_view::npos   ? 16
                            : text.find("_64x") != std::string_view::npos ? 64
                                                                          : 32;
    const AiterTileReading r = read_aiter_tile(name, m, std::nullopt, false);
    CHECK(r.error.empty());
    CHECK(r.workgroups_per_cu == n);
  }
  // And the reading says it.
  const AiterTileReading r =
      read_aiter_tile("fmoe_stage1_bf16_pertokenInt8_g1u1_32x128_3tg_pf3", 32, std::nullopt, false);
  CHECK(r.workgroups_per_cu == 3);
  CHECK_THAT(r.reading, Catch::Contains("3 workgroups a CU"));
  CHECK(read_aiter_tile("fmoe_stage1_bf16_pertokenFp8_g1u1_16x512_pf3", 16, std::nullopt, false).workgroups_per_cu == 0);
  // An out-of-range field is said, not read.
  const AiterTileReading big =
      read_aiter_tile("fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_17tg_pf3", 32, std::nullopt, false);
  CHECK(big.workgroups_per_cu == 0);
  CHECK_THAT(big.reading, Catch::Contains("its _17tg is not 1 to 16"));
  // One too large for 32 bits, and one for 64, too.
  const AiterTileReading huge =
      read_aiter_tile("fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_99999999999tg_pf3", 32, std::nullopt, false);
  CHECK(huge.workgroups_per_cu == 0);
  CHECK_THAT(huge.reading, Catch::Contains("its _99999999999tg is not 1 to 16"));
  CHECK_THAT(read_aiter_tile("fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_99999999999999999999999tg_pf3", 32,
                             std::nullopt, false).reading,
             Catch::Contains("its _<N>tg is not 1 to 16"));
}

TEST_CASE("a row of block_m 0 (AITER's tuner found no kernel) is read and never used", "[kernel_config]") {
  const KernelConfigTable t = parse_kernel_config(
      "cu_num,token,model_dim,inter_dim,expert,topk,act_type,q_dtype_a,q_dtype_w,q_type,block_m,ksplit,us1,"
      "tile1,us2,tile2,us,run_1stage\n"
      "304,16,256,128,8,2,ActivationType.Silu,torch.bfloat16,torch.bfloat16,QuantType.No,0,0,-1,,-1,,-1,0\n"
      "304,32,256,128,8,2,ActivationType.Silu,torch.bfloat16,torch.bfloat16,QuantType.No,32,0,7,,3,,10,0\n",
      "failed.csv");
  REQUIRE(t.rows.size() == 2);
  const KernelConfigLookup miss = lookup_kernel_config(t, query(304, 16, kBf16));
  CHECK(miss.row == nullptr);
  CHECK_THAT(miss.detail, Catch::Contains("line 2 has block_m 0 (AITER's tuner found no kernel for it)"));
  CHECK(miss.no_kernel_line == 2);
  const KernelConfigLookup hit = lookup_kernel_config(t, query(304, 32, kBf16));
  REQUIRE(hit.row != nullptr);
  CHECK(hit.row->line == 3);
  // A row with a kernel of the same key wins, before or after it, with no duplicate-key
  // conflict; so does one of another spelling of the key (per_128x128 for per_1x128).
  const std::string head =
      "cu_num,token,model_dim,inter_dim,expert,topk,act_type,q_dtype_a,q_dtype_w,q_type,block_m,ksplit,us1,"
      "tile1,us2,tile2,us,run_1stage\n";
  // (128 tokens: above the block-scale bypass of token x topk <= 128.)
  const std::string failed =
      "304,128,256,128,8,2,ActivationType.Silu,torch.float8_e4m3fnuz,torch.float8_e4m3fnuz,QuantType.per_1x128,0,0,"
      "-1,,-1,,-1,0\n";
  const std::string good =
      "304,128,256,128,8,2,ActivationType.Silu,torch.float8_e4m3fnuz,torch.float8_e4m3fnuz,QuantType.per_1x128,64,0,"
      "7,,3,,10,0\n";
  std::string other = good;
  other.replace(other.find("per_1x128"), 9, "per_128x128");
  const AiterFormat fp8_block{DType::fp8_e4m3_fnuz, Quant::block_128};
  for (const std::string& text : {head + failed + good, head + good + failed, head + failed + other}) {
    const KernelConfigTable two = parse_kernel_config(text, "two.csv");
    const KernelConfigLookup l = lookup_kernel_config(two, query(304, 128, fp8_block, 8, 2));
    INFO(text);
    REQUIRE(l.row != nullptr);
    CHECK(l.row->block_m == 64);
  }
}

TEST_CASE("the lookup pads the token count and matches every key column", "[kernel_config]") {
  const KernelConfigTable t = table("ck_names.csv");
  // 9..16 tokens pad to 16: line 2.
  for (std::uint32_t tokens : {9u, 16u}) {
    const auto hit = lookup_kernel_config(t, query(304, tokens, kBf16));
    REQUIRE(hit.row != nullptr);
    CHECK(hit.row->line == 2);
    CHECK(hit.padded_token == 16);
  }
  // 33..64 pad to 64: line 3.
  CHECK(lookup_kernel_config(t, query(304, 40, kBf16)).row->line == 3);
  // 513..1024 pad to 1024: line 4.
  CHECK(lookup_kernel_config(t, query(304, 1000, kBf16)).row->line == 4);
  // 2000 pads to 2048: no row.
  CHECK(lookup_kernel_config(t, query(304, 2000, kBf16)).row == nullptr);
  // The same layer on 256 CUs: line 5.
  CHECK(lookup_kernel_config(t, query(256, 16, kBf16)).row->line == 5);
  // fp8 per-token: line 6 (1-stage).
  CHECK(lookup_kernel_config(t, query(304, 16, kFp8Token)).row->line == 6);
  // 128 tokens: no row at that padded count.
  const auto miss = lookup_kernel_config(t, query(304, 100, kBf16));
  CHECK(miss.row == nullptr);
  CHECK(miss.padded_token == 128);
  CHECK(miss.detail.find("no row matched") != std::string::npos);
  CHECK(miss.detail.find("at other token counts") != std::string::npos);
  // 32 tokens: the only row there is use_g1u1 0, which tdmsim's gated layers never match.
  const auto g1u0 = lookup_kernel_config(t, query(304, 32, kBf16));
  CHECK(g1u0.row == nullptr);
  CHECK(g1u0.detail.find("use_g1u1") != std::string::npos);
  // Another shape: nothing.
  CHECK(lookup_kernel_config(t, query(304, 16, kBf16, 16, 2)).row == nullptr);
  // Another output dtype (the dtype column): nothing.
  auto fp16_out = query(304, 16, kBf16);
  fp16_out.dtype = "torch.float16";
  CHECK(lookup_kernel_config(t, fp16_out).row == nullptr);
}

TEST_CASE("rows of formats tdmsim cannot express never match, and the lookup says so", "[kernel_config]") {
  const KernelConfigTable t = table("short_tiles.csv");
  // Line 5 is MXFP4 at token 64; line 4 fp8 per-token at 64; line 8 fp32,
  // which no scenario expresses.
  const auto hit = lookup_kernel_config(t, query(256, 64, kFp8Token, 9, 3));
  REQUIRE(hit.row != nullptr);
  CHECK(hit.row->line == 4);
  const auto mx = lookup_kernel_config(t, query(256, 64, AiterFormat{DType::mxfp4, Quant::per_1x32}, 9, 3));
  REQUIRE(mx.row != nullptr);
  CHECK(mx.row->line == 5);
  const auto miss = lookup_kernel_config(t, query(256, 64, kBf16, 9, 3));
  CHECK(miss.row == nullptr);
  CHECK(miss.detail.find("torch.float4_e2m1fn_x2 x torch.float4_e2m1fn_x2 QuantType.per_1x32 (tdmsim dtype mxfp4, "
                         "weight_dtype mxfp4, quant per_1x32)") != std::string::npos);
  CHECK(miss.detail.find("torch.float32 x torch.float32 QuantType.No (not a format tdmsim scenarios can express "
                         "yet)") != std::string::npos);
}

TEST_CASE("fp8 block-scale layers of at most 128 routed rows bypass the table, as AITER's use_cfg", "[kernel_config]") {
  const KernelConfigTable t = table("short_tiles.csv");
  // Line 7: per_1x128 at token 16, topk 3: 48 rows <= 128.
  const auto small = lookup_kernel_config(t, query(256, 16, kFp8Block, 9, 3));
  CHECK(small.row == nullptr);
  CHECK(small.bypassed);
  CHECK(small.detail.find("use_cfg") != std::string::npos);
  // Line 6: token 256, 768 rows: looked up.
  const auto big = lookup_kernel_config(t, query(256, 200, kFp8Block, 9, 3));
  REQUIRE(big.row != nullptr);
  CHECK(big.row->line == 6);
  // AITER's fp8 is the GPU's own (dtypes.fp8: FNUZ on gfx942): FNUZ
  // block-scale layers are bypassed too, though line 11 would match.
  const auto fnuz = lookup_kernel_config(t, query(256, 16, AiterFormat{DType::fp8_e4m3_fnuz, Quant::block_128}, 9, 3));
  CHECK(fnuz.row == nullptr);
  CHECK(fnuz.bypassed);
}

TEST_CASE("a layer's key: expert and topk count the shared experts fused in", "[kernel_config]") {
  // DeepSeek-V3's shape at TP8: 256 routed + 1 shared of the routed size, top-8.
  ModelSpec m = make_model(256, 8, 7168, 2048);
  m.shared_experts = 1;
  m.shared_intermediate_size = 2048;
  auto sc = make_scenario(m, 64, 1);
  sc.machine.spec = shipped_machine("mi355x");
  sc.scenario.spec.parallel.tp = 8;
  sc.scenario.spec.dtype = DType::fp8_e4m3;
  sc.scenario.spec.quant = Quant::block_128;
  const KernelConfigQuery q = kernel_config_query(layer_shape(sc), sc.machine.spec);
  CHECK(q.cu_num == 256);
  CHECK(q.model_dim == 7168);
  CHECK(q.inter_dim == 256);
  CHECK(q.expert == 257);
  CHECK(q.topk == 9);
  CHECK(q.act_type == "ActivationType.Silu");
  CHECK(q.format == kFp8Block);
}

TEST_CASE("a matching row drives the plan: block_m, tiles, split-K, stages, and records its line", "[kernel_config]") {
  const KernelConfigTable t = table("short_tiles.csv");
  ModelSpec m = make_model(8, 2, 256, 128);
  m.shared_experts = 1;
  m.shared_intermediate_size = 128;  // expert 9, topk 3 as in the table
  auto sc = make_scenario(m, 20, 3);
  sc.machine.spec = shipped_machine("mi355x");
  sc.scenario.spec.dtype = DType::fp8_e4m3;
  sc.scenario.spec.quant = Quant::per_token;
  const LayerShape shape = layer_shape(sc);
  const KernelSpec spec = config::defaults<KernelSpec>();
  // 20 tokens pad to 32: line 3, block_m 32, tile1 empty, tile2 64x32x32x64, ksplit 2.
  KernelRequest r = kernel_request(spec, &t, shape, sc.machine.spec);
  CHECK(r.source.config_line == 3);
  CHECK(r.source.chosen_by == "kernel.config row");
  CHECK(r.spec.block_m == 32);
  CHECK(r.spec.gate_up_tile.is_auto());
  CHECK(r.spec.down_tile == KernelTile{64, 32, 32, 64});
  CHECK(r.spec.split_k == 2);
  CHECK(r.spec.stages == 2);
  // Through choose_kernel, the empty tile1 becomes the default tile for block_m 32.
  const FusedRouting fused = fuse_routing(shape, route(sc));
  const KernelChoice k = choose_kernel(shape, r.spec, sc.machine.spec, fused, r.fixed_by);
  CHECK(k.block_m == 32);
  CHECK(k.gate_up_tile == default_tile(32, Quant::per_token));
  CHECK(k.down_tile == KernelTile{64, 32, 32, 64});
  CHECK(k.split_k == 2);
  CHECK(k.reason.find("short_tiles.csv:3") != std::string::npos);
  // 64 tokens: line 4, run_1stage 1.
  sc.scenario.spec.tokens = 64;
  r = kernel_request(spec, &t, layer_shape(sc), sc.machine.spec);
  CHECK(r.source.config_line == 4);
  CHECK(r.spec.stages == 1);
  CHECK(r.spec.split_k == 1);
  // 128 tokens: no row; the project's rule decides and the output says so.
  sc.scenario.spec.tokens = 128;
  r = kernel_request(spec, &t, layer_shape(sc), sc.machine.spec);
  CHECK(r.source.config_line == 0);
  CHECK(r.source.chosen_by == "tdmsim heuristic");
  CHECK(r.spec.block_m == 0);
  CHECK(r.prefix.find("no row matched") != std::string::npos);
}

// The layer of the 1-stage table tests: 8 experts top-2 plus a fused shared
// expert (AITER's 9 / 3), H 256, I `inter`, 64 tokens, fp8 OCP per-token on mi355x.
static config::ResolvedScenario fp8_shared_layer(std::uint32_t inter) {
  ModelSpec m = make_model(8, 2, 256, inter);
  m.shared_experts = 1;
  m.shared_intermediate_size = inter;
  auto sc = make_scenario(m, 64, 3);
  sc.machine.spec = shipped_machine("mi355x");
  sc.scenario.spec.dtype = DType::fp8_e4m3;
  sc.scenario.spec.quant = Quant::per_token;
  return sc;
}

// A table of that layer's rows: AITER's columns, the stage kernels' names in
// `name`1 / `name`2 ("tile" as the MI355X file names them, "kernelName" as
// AITER's tuner writes them), and per row its token count, inter_dim, ksplit,
// stage-1 name, run_1stage and stage-2 name (the times are placeholders: 7 us).
struct Fp8SharedRow {
  std::uint32_t token, inter, ksplit;
  std::string name1;
  int run_1stage;
  std::string name2 = "";
};
static KernelConfigTable fp8_shared_table(std::string_view name, std::initializer_list<Fp8SharedRow> rows,
                                          const std::string& file) {
  std::string text = fmt::format(
      "cu_num,token,model_dim,inter_dim,expert,topk,act_type,q_dtype_a,q_dtype_w,q_type,block_m,ksplit,us1,"
      "{0}1,us2,{0}2,us,run_1stage\n",
      name);
  for (const Fp8SharedRow& r : rows) {
    text += fmt::format(
        "256,{},256,{},9,3,ActivationType.Silu,torch.float8_e4m3fn,torch.float8_e4m3fn,QuantType.per_Token,32,{},"
        "7,{},0,{},7,{}\n",
        r.token, r.inter, r.ksplit, r.name1, r.name2, r.run_1stage);
  }
  return parse_kernel_config(text, file);
}

TEST_CASE("a 1-stage row of AITER's kernels naming no 1-stage kernel runs AITER's heuristic one", "[kernel_config]") {
  // The layer of short_tiles.csv's line 4 (64 tokens, fp8 per-token, 1-stage),
  // its tile columns holding CK names, and an assembly kernel name at line 3.
  const KernelConfigTable t = fp8_shared_table(
      "tile",
      {{64, 128, 0, "256x32x64x128", 1, "256x32x64x64"},
       {32, 128, 0, "fmoe_fp8_g1u1_vs_silu_32x256", 0},
       // 1-stage, its tile1 an assembly stage-1 kernel of another M: not read, so not refused.
       {128, 128, 0, "fmoe_stage1_bf16_pertokenFp8_g1u1_64x128_2tg_pf3", 1},
       // 2-stage with an assembly stage 1 and ksplit 2: its tile, run unsplit.
       {16, 128, 2, "_ZN5aiter48fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf3E", 0}},
      "one.csv");
  auto sc = fp8_shared_layer(128);
  KernelSpec spec = config::defaults<KernelSpec>();
  spec.source = KernelCode::aiter;
  KernelRequest r = kernel_request(spec, &t, layer_shape(sc), sc.machine.spec);
  CHECK(r.source.config_line == 2);
  CHECK(r.spec.stages == 1);
  CHECK(r.spec.gate_up_tile.is_auto());
  CHECK(r.spec.down_tile.is_auto());
  CHECK_THAT(r.prefix, Catch::Contains("tile1 '256x32x64x128': not an AITER 1-stage assembly kernel name") &&
                          Catch::Contains("AITER's heuristic 1-stage kernel"));
  // Our kernels run the row's tiles in our fused kernel.
  spec.source = KernelCode::tdmsim;
  r = kernel_request(spec, &t, layer_shape(sc), sc.machine.spec);
  CHECK(r.spec.gate_up_tile == KernelTile{256, 32, 64, 128});
  // A 2-stage row naming an assembly kernel: the default tile, said so.
  sc.scenario.spec.tokens = 20;
  r = kernel_request(spec, &t, layer_shape(sc), sc.machine.spec);
  CHECK(r.source.config_line == 3);
  CHECK(r.spec.gate_up_tile.is_auto());
  CHECK(r.prefix.find("tile1 'fmoe_fp8_g1u1_vs_silu_32x256': no tile tdmsim reads") != std::string::npos);
  spec.source = KernelCode::aiter;
  sc.scenario.spec.tokens = 128;
  r = kernel_request(spec, &t, layer_shape(sc), sc.machine.spec);
  CHECK(r.source.config_line == 4);
  CHECK(r.spec.stages == 1);
  CHECK(r.spec.gate_up_tile.is_auto());
  // AITER's fused_moe.py calls asm_stage1 without ksplit (and its tuner times it with 0).
  sc.scenario.spec.tokens = 16;
  r = kernel_request(spec, &t, layer_shape(sc), sc.machine.spec);
  CHECK(r.source.config_line == 5);
  CHECK(r.spec.gate_up_tile == KernelTile{256, 32, 128, 2 * default_tile(32).k});
  CHECK(r.spec.split_k == 1);
  CHECK(r.prefix.find("ksplit 2 not used: AITER's assembly stage 1 runs unsplit") != std::string::npos);
}

TEST_CASE("a 1-stage row naming AITER's 1-stage kernel runs that kernel's subGU_m x subGU_n", "[kernel_config]") {
  // Kernel names of the lists (hsa/gfx942/fmoe/..., hsa/gfx950/fmoe/silu/...):
  // fmoe_<types>_g1u1_..._MxN, plain or mangled; subGU_n named as AITER names it.
  const AiterFormat fp8{DType::fp8_e4m3, Quant::per_token};
  const AiterFormat fp4{DType::mxfp4, Quant::per_1x32, DType::mxfp4};
  const auto one = [](std::string_view name, std::uint32_t block_m, const AiterFormat& f) {
    return read_aiter_one_stage_kernel(name, block_m, f);
  };
  CHECK(one("_ZN5aiter50fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_ps_32x512E", 32, fp8).tile ==
        KernelTile{256, 32, 512, 128});  // K: 128 bytes of fp8 a step (aiter_one_stage_k)
  CHECK(one("fmoe_bf16_pertokenMXfp4_g1u1_novs_silu_2tg_ps_2tg_32x256", 32, fp4).tile ==
        KernelTile{256, 32, 256, 256});
  // Flat and emsort kernels (a token row a workgroup, no sorted blocks), a subGU_n below
  // 128, no subGU_m x subGU_n field, not a 1-stage kernel's name (the 2-stage path's
  // fmoe_stage1_ / fmoe_stage2_ included), or empty: AITER's heuristic kernel.
  CHECK(one("fmoe_bf16_pertokenMXfp4_g1u1_flat_novs_silu_16x128", 16, fp4).tile.is_auto());
  CHECK_THAT(one("fmoe_bf16_pertokenMXfp4_g1u1_flat_novs_silu_16x128", 16, fp4).reading, Catch::Contains("flat"));
  CHECK(one("fmoe_bf16_pertokenMXfp4_g1u1_vs_silu_2tg_32x64", 32, fp4).tile.is_auto());
  CHECK(one("fmoe_stage2_bf16_pertokenInt8_g1u1_32x128", 32, fp8).tile.is_auto());
  CHECK(one("fmoe_bf16_pertokenMXfp4_g1u1_emsort_vs_silu_16xstk_t32_c8", 16, fp4).tile.is_auto());
  CHECK(one("fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf3", 32, fp8).tile.is_auto());
  CHECK(one("moe_ck2stages_gemm1_256x32x64x128_1x4_TypeCast_v3", 32, fp8).tile.is_auto());
  CHECK(one("256x32x64x128", 32, fp8).tile.is_auto());
  CHECK(one("", 32, fp8).tile.is_auto());
  CHECK(one("", 32, fp8).error.empty());
  // The subGU_m x subGU_n field is read as tile names are (x_separated): a number
  // beyond a tile's largest dimension is no field, so AITER's heuristic kernel.
  const std::string huge = fmt::format("fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_32x{}", KernelTile::kMaxDim + 1);
  CHECK(one(huge, 32, fp8).tile.is_auto());
  CHECK_THAT(one(huge, 32, fp8).reading, Catch::Contains("no subGU_m x subGU_n field"));
  CHECK_THAT(one("fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_32x0", 32, fp8).reading,
             Catch::Contains("no subGU_m x subGU_n field"));
  // The same numbers in a tile column: a zero, a trailing 'x', another separator or a
  // number too large is refused; 2 or 4 numbers are read.
  for (const std::string& bad : {std::string("256x0x64x128"), std::string("256x32x64x128x"), std::string("256x32*64x128"),
                                 std::string("32x") + std::to_string(KernelTile::kMaxDim + 1), std::string("32xx64"),
                                 std::string("32x64x128"), std::string("32x4294967296"), std::string("+32x64")}) {
    CAPTURE(bad);
    CHECK_THAT(read_aiter_tile(bad, 32, fp8, false).error, Catch::Contains("not a tile name"));
  }
  CHECK(read_aiter_tile("32x256", 32, fp8, false).tile == KernelTile{256, 32, 256, default_tile(32, fp8.quant, fp8.dtype, fp8.weight_dtype).k});
  // AITER runs a 1-stage kernel of subGU_m = block_m only.
  CHECK_THAT(one("fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_64x256", 32, fp8).error,
             Catch::Contains("subGU_m 64") && Catch::Contains("block_m 32"));
  CHECK(aiter_one_stage_name("fmoe_fp8_g1u1_vs_silu_32x256"));
  CHECK_FALSE(aiter_one_stage_name("fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf3"));

  // The table reader: a 1-stage row's kernelName1 sets the 1-stage tile, which
  // choose_kernel runs in both phases (AITER's heuristic would take another
  // width: every width is one round of workgroups here, and the narrowest
  // leaves the fewest CUs idle).
  const KernelConfigTable t =
      fp8_shared_table("kernelName",
                       {{64, 512, 0, "_ZN5aiter50fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_ps_32x256E", 1},
                        {32, 512, 0, "fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_64x256", 1}},
                       "named.csv");
  auto sc = fp8_shared_layer(512);
  KernelSpec spec = config::defaults<KernelSpec>();
  spec.source = KernelCode::aiter;
  const LayerShape shape = layer_shape(sc);
  const KernelRequest r = kernel_request(spec, &t, shape, sc.machine.spec);
  CHECK(r.source.config_line == 2);
  CHECK(r.spec.stages == 1);
  CHECK(r.spec.gate_up_tile == KernelTile{256, 32, 256, 128});
  CHECK_THAT(r.prefix, Catch::Contains("kernelName1: AITER's 1-stage kernel 32x256"));
  const KernelChoice k = choose_kernel(shape, r.spec, sc.machine.spec, fuse_routing(shape, route(sc)), r.fixed_by);
  CHECK(k.stages == 1);
  CHECK(k.gate_up_tile == KernelTile{256, 32, 512, 128});  // the model's N counts gate and up
  CHECK(k.down_tile == k.gate_up_tile);
  CHECK_THAT(k.reason, Catch::Contains("tiles 256x32x256x128 for the 1-stage kernel (named"));
  // Without the name, AITER's heuristic kernel (the fewest rounds, then the fewest idle CUs).
  KernelRequest unnamed = r;
  unnamed.spec.gate_up_tile = unnamed.spec.down_tile = KernelTile{};
  const KernelChoice h =
      choose_kernel(shape, unnamed.spec, sc.machine.spec, fuse_routing(shape, route(sc)), unnamed.fixed_by);
  CHECK(h.gate_up_tile == aiter_one_stage_tile(IsaFamily::cdna4, shape, 32, 256));
  CHECK(h.gate_up_tile != k.gate_up_tile);  // the name is what sets the width here
  // A kernel of another subGU_m than the row's block_m: refused at the row's column.
  sc.scenario.spec.tokens = 32;
  CHECK_THROWS_WITH(kernel_request(spec, &t, layer_shape(sc), sc.machine.spec),
                    Catch::Contains("column kernelName1") && Catch::Contains("block_m 32"));
}

TEST_CASE("AITER's get_block_size_M, worked by hand", "[aiter_heuristic]") {
  // Qwen3-235B TP4 (inter 384: 3 N tiles of 128), 128 experts, top-8, 304 CUs.
  // 64 tokens: M 32: rows 512 + 4096 - 8 = 4600, 3 * 4631 // 32 = 434 groups,
  // 2 rounds, 174 idle; M 64: 410 groups, 2 rounds, 198 idle; M 128: 398,
  // 2 rounds, 210 idle. Fewest rounds tie, fewest idle: 32.
  CHECK(aiter_block_size_m(64, 8, 128, 384, 304) == 32);
  // 16384 tokens: M 32 12674 groups, 42 rounds; M 64 6530, 22; M 128 3458, 12: 128.
  CHECK(aiter_block_size_m(16384, 8, 128, 384, 304) == 128);
}

TEST_CASE("AITER's get_ksplit, worked by hand", "[aiter_heuristic]") {
  // DeepSeek-V3 TP8 decode on MI355X: 1 token x 9 = 9 rows <= 257 experts;
  // grid 2 x 9 = 18 < 256 CUs; split_max ceil(256 / 18) = 15; the largest
  // i <= 15 with 7168 % i == 0 and (7168 / i) % 256 == 0 is 14 (512).
  CHECK(aiter_ksplit(1, 9, 257, 256, 7168, 256) == 14);
  // 4 tokens x 8 = 32 rows <= 128; grid 3 x 32 = 96 < 304; split_max 4; 4096 / 4 = 1024.
  CHECK(aiter_ksplit(4, 8, 128, 384, 4096, 304) == 4);
  CHECK(aiter_ksplit(32, 8, 128, 384, 4096, 304) == 0);   // 256 rows > 128 experts
  CHECK(aiter_ksplit(16, 9, 257, 256, 7168, 256) == 0);   // grid 2 x 144 >= 256 CUs
  CHECK(aiter_ksplit(1, 8, 128, 384, 4000, 304) == 0);    // no split divides 4000 into multiples of 256
}

// DeepSeek-V3 TP8 on MI355X (shared expert fused: 257 experts top-9) in `format`.
static AiterLayer dsv3_tp8_mi355x(const AiterFormat& format) {
  AiterLayer l;
  l.model_dim = 7168;
  l.inter_dim = 256;
  l.expert = 257;
  l.topk = 9;
  l.cu_num = 256;
  l.isa = IsaFamily::cdna4;
  l.format = format;
  return l;
}

TEST_CASE("AITER's default: the 1-stage rule per quant type, block_m and split-K", "[aiter_heuristic]") {
  AiterLayer l = dsv3_tp8_mi355x(kFp8Block);
  // fp8 block-scale: 1-stage when token > 32 and inter_dim % 256 == 0, block_m 32.
  l.token = 64;
  auto c = aiter_default(l);
  CHECK(c.run_1stage);
  CHECK(c.block_m == 32);
  CHECK(c.ksplit == 0);
  // 32 tokens: 2-stage, block_m 16, get_ksplit 0 (288 rows > 257 experts).
  l.token = 32;
  c = aiter_default(l);
  CHECK_FALSE(c.run_1stage);
  CHECK(c.block_m == 16);
  CHECK(c.ksplit == 0);
  // 1 token: 2-stage, block_m 16, ksplit 14.
  l.token = 1;
  c = aiter_default(l);
  CHECK(c.block_m == 16);
  CHECK(c.ksplit == 14);
  // A scenario's stage count: AITER's block_m and ksplit for that count. 64
  // tokens forced 2-stage: block-scale block_m 64; 1 token forced 1-stage:
  // BLOCK_SIZE_M 32 and no split (get_ksplit is for 2-stage layers).
  l.token = 64;
  c = aiter_default(l, 2);
  CHECK_FALSE(c.run_1stage);
  CHECK(c.block_m == 64);
  CHECK_THAT(c.reason, Catch::Contains("2-stage (kernel.stages of the scenario)"));
  l.token = 1;
  c = aiter_default(l, 1);
  CHECK(c.run_1stage);
  CHECK(c.block_m == 32);
  CHECK(c.ksplit == 0);
  // inter_dim 384 is not a multiple of 256: 2-stage even at 64 tokens, block_m 64.
  l.token = 64;
  l.inter_dim = 384;
  c = aiter_default(l);
  CHECK_FALSE(c.run_1stage);
  CHECK(c.block_m == 64);
  // fp8 per-token on gfx942: 1-stage above 16 tokens; on gfx950 only with doweight_stage1.
  l.format = kFp8Token;
  l.isa = IsaFamily::cdna3;
  l.token = 32;
  CHECK(aiter_default(l).run_1stage);
  l.token = 16;
  CHECK_FALSE(aiter_default(l).run_1stage);
  l.token = 32;
  l.isa = IsaFamily::cdna4;
  CHECK_FALSE(aiter_default(l).run_1stage);
  l.doweight_stage1 = true;
  CHECK(aiter_default(l).run_1stage);
  // gfx942's fp8 is e4m3 FNUZ (torch.float8_e4m3fnuz): the same entries.
  l.doweight_stage1 = false;
  l.isa = IsaFamily::cdna3;
  l.format = AiterFormat{DType::fp8_e4m3_fnuz, Quant::per_token};
  CHECK(aiter_default(l).run_1stage);
  // INT8 per-token: gfx942 only, above 32 tokens.
  l.format = AiterFormat{DType::int8, Quant::per_token};
  CHECK_FALSE(aiter_default(l).run_1stage);
  l.token = 64;
  CHECK(aiter_default(l).run_1stage);
  // The entries are doweight_stage1 False: a layer weighting its inputs runs 2-stage.
  l.doweight_stage1 = true;
  CHECK_FALSE(aiter_default(l).run_1stage);
  l.doweight_stage1 = false;
  l.isa = IsaFamily::cdna4;
  CHECK_FALSE(aiter_default(l).run_1stage);
  // fp8 activations with int4 weights are not an fp8 entry.
  l.isa = IsaFamily::cdna3;
  l.format = AiterFormat{DType::fp8_e4m3_fnuz, Quant::per_token, DType::int4};
  CHECK_FALSE(aiter_default(l).run_1stage);
  // bf16: AITER's bf16 1-stage kernels are for ungated layers only: 2-stage, get_block_size_M.
  l = AiterLayer{};
  l.token = 64;
  l.model_dim = 4096;
  l.inter_dim = 384;
  l.expert = 128;
  l.topk = 8;
  l.cu_num = 304;
  l.format = kBf16;
  c = aiter_default(l);
  CHECK_FALSE(c.run_1stage);
  CHECK(c.block_m == 32);
  CHECK(c.ksplit == 0);
}

TEST_CASE("AITER's default for MX (per_1x32) layers: get_ksplit, and CK-Tile's block_m", "[aiter_heuristic]") {
  // fused_moe.py at 000621842c: get_ksplit for per_1x32 as for per_1x128; CK-Tile's
  // kernels (block_m 16 below 2048 tokens, 32 below 16384, 64 above) for SwiGLU MX
  // layers (32 with fp8 activations) and for fp4-weight layers that split K.
  AiterLayer l = dsv3_tp8_mi355x(AiterFormat{DType::mxfp4, Quant::per_1x32});
  // 1 token: get_ksplit 14 (as for fp8 block-scale), so CK-Tile at block_m 16.
  l.token = 1;
  auto c = aiter_default(l);
  CHECK_FALSE(c.run_1stage);
  CHECK(c.ksplit == 14);
  CHECK(c.block_m == 16);
  CHECK(c.reason.find("CK-Tile") != std::string::npos);
  // fp4 x fp4 is in fused_moe_1stage_dict, but the rule never runs per_1x32 1-stage.
  CHECK_THAT(c.reason, Catch::Contains("never runs per_1x32 1-stage"));
  // Forced 1-stage: BLOCK_SIZE_M 32 and no split, not CK-Tile's tiers.
  c = aiter_default(l, 1);
  CHECK(c.run_1stage);
  CHECK(c.block_m == 32);
  CHECK(c.ksplit == 0);
  // 1024 tokens: no split (9216 rows > 257 experts): the CK path's get_block_size_M.
  l.token = 1024;
  c = aiter_default(l);
  CHECK(c.ksplit == 0);
  CHECK(c.block_m == aiter_block_size_m(1024, 9, 257, 256, 256));
  CHECK(c.reason.find("get_block_size_M") != std::string::npos);
  // gpt-oss-120b (SwiGLU, 128 experts top-4, H = I = 2880), bf16 x MXFP4 on MI355X:
  // get_block_m's tiers on the padded token count; fp8 activations: 32.
  l = AiterLayer{};
  l.model_dim = 2880;
  l.inter_dim = 2880;
  l.expert = 128;
  l.topk = 4;
  l.cu_num = 256;
  l.isa = IsaFamily::cdna4;
  l.activation = Activation::swiglu_oai;
  l.format = AiterFormat{DType::bf16, Quant::per_1x32, DType::mxfp4};
  for (const auto& [token, block_m] : {std::pair{64u, 16u}, {1024u, 16u}, {2048u, 32u}, {16384u, 64u}}) {
    l.token = token;
    INFO(token);
    CHECK(aiter_default(l).block_m == block_m);
  }
  // Forced 2-stage keeps CK-Tile's tier; forced 1-stage takes BLOCK_SIZE_M.
  CHECK(aiter_default(l, 2).block_m == 64);
  CHECK(aiter_default(l, 1).block_m == 32);
  l.format = AiterFormat{DType::fp8_e4m3, Quant::per_1x32, DType::mxfp4};
  l.token = 64;
  CHECK(aiter_default(l).block_m == 32);
  // 8 tokens: 32 rows <= 128 experts, grid 23 x 32 = 736 >= 256 CUs: no split.
  l.token = 8;
  CHECK(aiter_default(l).ksplit == 0);
}

TEST_CASE("AITER's 1-stage kernel inventory per format and GPU", "[aiter_heuristic]") {
  using D = DType;
  using Q = Quant;
  for (const IsaFamily isa : {IsaFamily::cdna3, IsaFamily::cdna4}) {
    CHECK(aiter_has_1stage_kernel(isa, {D::fp8_e4m3, Q::per_token}));
    CHECK(aiter_has_1stage_kernel(isa, {D::fp8_e4m3_fnuz, Q::block_128}));
    CHECK(aiter_has_1stage_kernel(isa, {D::int8, Q::per_token}));
    CHECK_FALSE(aiter_has_1stage_kernel(isa, {D::bf16, Q::none}));         // fmoe bf16 is ungated only
    CHECK_FALSE(aiter_has_1stage_kernel(isa, {D::fp8_e4m3, Q::per_tensor}));
    CHECK_FALSE(aiter_has_1stage_kernel(isa, {D::fp8_e4m3, Q::per_1x32}));  // MX fp8
    CHECK_FALSE(aiter_has_1stage_kernel(isa, {D::fp8_e4m3, Q::per_1x32, D::mxfp4}));  // a8w4
    CHECK_FALSE(aiter_has_1stage_kernel(isa, {D::bf16, Q::group_128, D::int4}));
  }
  CHECK(aiter_has_1stage_kernel(IsaFamily::cdna4, {D::mxfp4, Q::per_1x32}));
  // a16w4: the MXFP4 kernel quantises bf16 X inside, but fused_moe.py keys it
  // as fp4 x fp4; bf16 x MXFP4 layers run 2-stage.
  CHECK_FALSE(aiter_has_1stage_kernel(IsaFamily::cdna4, {D::bf16, Q::per_1x32, D::mxfp4}));
  CHECK_FALSE(aiter_has_1stage_kernel(IsaFamily::cdna3, {D::mxfp4, Q::per_1x32}));
  CHECK_FALSE(aiter_has_1stage_kernel(IsaFamily::gfx1250, {D::fp8_e4m3, Q::per_token}));
}

TEST_CASE("kernel.heuristic aiter fills what the scenario leaves open", "[aiter_heuristic]") {
  ModelSpec m = make_model(128, 8, 4096, 384);
  auto sc = make_scenario(m, 16384, 1);
  sc.scenario.spec.kernel.heuristic = KernelHeuristic::aiter;
  const LayerShape shape = layer_shape(sc);
  KernelRequest r = kernel_request(sc.scenario.spec.kernel, nullptr, shape, sc.machine.spec);
  CHECK(r.source.chosen_by == "aiter heuristic");
  CHECK(r.spec.block_m == 128);  // 16384 tokens pad to 16384: as worked above
  CHECK(r.spec.stages == 2);
  CHECK(r.spec.split_k == 1);
  sc.scenario.spec.kernel.block_m = 64;  // the scenario's value stays
  r = kernel_request(sc.scenario.spec.kernel, nullptr, shape, sc.machine.spec);
  CHECK(r.spec.block_m == 64);
}
