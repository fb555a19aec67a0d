// Our AMD kernels' main-loop instruction mix (descriptors/plan/amd_kernels.h):
// the simulator's table is the disassembly summaries', the plan-tile rule,
// and the CU's CDNA issue model (sim/cu/compute_unit.cpp wave_issue).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "descriptors/plan/amd_kernels.h"
#include "sim/platform/gpu.h"
#include "workloads/config/loader.h"
#include "tests/sim/shipped_inputs.h"

namespace {

using tdmsim::test::kernel_us;

using namespace tdmsim;
namespace fs = std::filesystem;

// The summaries' directory: TDMSIM_AMD_SUMMARY_DIR (cdna_mix.table_matches_code_objects
// points it at summaries made from freshly compiled code objects), else the
// committed validation/data/amd.
fs::path summary_dir() {
  if (const char* d = std::getenv("TDMSIM_AMD_SUMMARY_DIR"); d != nullptr && *d != '\0') return d;
  return fs::path(TDMSIM_SOURCE_DIR) / "validation/data/amd";
}

// One CSV record: fields split at commas outside double quotes.
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (const char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

// Rows of a summary by kernel name, columns by header name.
std::map<std::string, std::map<std::string, std::string>> read_summary(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);
  const auto header = fields(line);
  std::map<std::string, std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const auto f = fields(line);
    REQUIRE(f.size() == header.size());
    auto& r = rows[f[0]];
    for (std::size_t i = 0; i < f.size(); ++i) r[header[i]] = f[i];
  }
  return rows;
}

bool gemm_256(const std::string& name) {
  for (const char* k : {"gate_up_kernel<", "down_kernel<", "fused_kernel<"}) {
    if (name.rfind(k, 0) == 0) return name.find(", 384>") == std::string::npos;
  }
  return false;
}

}  // namespace

TEST_CASE("the model's AMD main-loop table is the disassembly summaries'", "[cdna-mix-table]") {
  INFO("summaries in " << summary_dir());
  for (const plan::CdnaTarget t : {plan::CdnaTarget::gfx90a, plan::CdnaTarget::gfx940}) {
    const auto rows = read_summary(summary_dir() / ("kernels-" + std::string(plan::target_name(t)) + ".csv"));
    std::size_t gemms = 0, matched = 0;
    for (const auto& [name, r] : rows) {
      if (!gemm_256(name)) continue;
      ++gemms;
      for (const auto& c : plan::compiled_loops()) {
        if (c.target != t || c.name != name) continue;
        ++matched;
        INFO(plan::target_name(t) << " " << name);
        const auto n = [&](const char* col) { return static_cast<std::uint32_t>(std::stoul(r.at(col))); };
        CHECK(c.mix.mfma == n("loop_mfma"));
        CHECK(c.mix.ds_read == n("loop_ds_read"));
        CHECK(c.mix.ds_write == n("loop_ds_write"));
        CHECK(c.mix.vmem_load == n("loop_vmem_load"));
        CHECK(c.mix.valu == n("loop_valu"));
        CHECK(c.mix.salu == n("loop_salu"));
        CHECK(c.mix.barrier == n("loop_barrier"));
        CHECK(c.mix.instructions == n("loop_instructions"));
        CHECK(c.lds_static == n("lds_static_bytes"));
      }
    }
    std::size_t in_table = 0;
    for (const auto& c : plan::compiled_loops()) in_table += c.target == t ? 1 : 0;
    CHECK(gemms > 0);
    CHECK(matched == gemms);   // every GEMM kernel of the summary, once
    CHECK(in_table == gemms);  // and nothing else
  }
}

TEST_CASE("the MFMA count the model charges is the code objects'", "[cdna-mix]") {
  // The matrix pipe is charged by FLOPs (sim/cu/compute_unit.cpp matrix_cost);
  // that equals the compiled loop's MFMAs x their passes only if the tile's
  // MFMA count is the code object's: checked for every instantiation.
  for (const auto& c : plan::compiled_loops()) {
    INFO(plan::target_name(c.target) << " " << c.name);
    CHECK(plan::tile_mfmas(c.target, c.fp8, c.m, c.n, c.k) == c.mix.mfma);
    // 4 wavefronts x MFMAs x (16x16x16 bf16 or 16x16x32 e4m3) = the tile's product.
    const double per_mfma = 2.0 * 16 * 16 * (c.fp8_mfma ? 32 : 16);
    CHECK(4.0 * c.mix.mfma * per_mfma == Approx(2.0 * c.m * c.n * c.k));
  }
}

TEST_CASE("a plan tile takes its compiled loop's mix, or the nearest one's scaled by MFMAs", "[cdna-mix]") {
  using plan::LoopKernel;
  const auto t = plan::CdnaTarget::gfx940;
  const auto exact = plan::loop_mix(t, LoopKernel::down, false, false, 128, 128, 64);
  REQUIRE(exact);
  CHECK(exact->exact);
  CHECK(exact->from->name == "down_kernel<bf16, 128, 128, 64, false, 256>(Args)");
  // 128x64x128 bf16 is not compiled: 2 x the MFMAs of 128x64x64 (32 -> 64)
  // and of 64x128x64; the nearest count is 64 (64x128x128, 128x128x64), the
  // nearest shape of those 128x128x64 (|log| 0 + 0.69 + 0.69) against
  // 64x128x128 (0.69 + 0.69 + 0): a tie, kept by the summary's order.
  const auto near = plan::loop_mix(t, LoopKernel::down, false, false, 128, 64, 128);
  REQUIRE(near);
  CHECK_FALSE(near->exact);
  CHECK(near->mix.mfma == plan::tile_mfmas(t, false, 128, 64, 128));
  CHECK(near->from->mix.mfma == near->mix.mfma);  // a loop of as many MFMAs: counts as they are
  CHECK(near->mix.valu == near->from->mix.valu);
  // 16x64x64 bf16: 4 MFMAs; the nearest compiled (16x64x128, 8) halved.
  const auto small = plan::loop_mix(t, LoopKernel::gate_up, false, false, 16, 64, 64);
  REQUIRE(small);
  CHECK(small->from->name == "gate_up_kernel<bf16, 16, 64, 128, false>(Args)");
  CHECK(small->mix.mfma == 4);
  CHECK(small->mix.valu == (small->from->mix.valu + 1) / 2);
  CHECK(small->mix.barrier == small->from->mix.barrier);
  // A tile without its instantiation borrows only from its own kind:
  // kernel, operand type and block scaling.
  const auto bs = plan::loop_mix(t, LoopKernel::down, true, true, 128, 64, 128);
  REQUIRE(bs);
  CHECK_FALSE(bs->exact);
  CHECK(bs->from->block_scaled);
  CHECK(bs->from->fp8);
  CHECK(bs->from->kernel == LoopKernel::down);
}

namespace {
// A grid of four workgroups per CU on the mi300x (as many as its registers
// hold: 256 threads x 128 VGPRs), each a main loop of a
// 128x128x64 bf16 product per iteration (1024 matrix cycles on its 4 SIMDs
// at CDNA3's 512 bf16 FLOP a clock a SIMD) with a tiny load, and the given
// per-wavefront issue mix.
isa::KernelLaunch mix_loop(const char* name, std::uint32_t wgs, std::uint32_t iterations, std::uint32_t instructions,
                           std::uint32_t valu) {
  return {name, wgs, [=](std::uint32_t wg) {
            isa::TileProgram p;
            p.threads = 256;
            p.vgprs_per_thread = 128;
            p.lds_bytes = 16384;
            p.pipeline_depth = 2;
            isa::Loop loop;
            loop.iterations = iterations;
            loop.loads.push_back(isa::strided((1ull << 36) + std::uint64_t{wg} * 65536, 64, 1, 0, 64));
            loop.moe_kernel = true;
            loop.dtype = DType::bf16;
            loop.m = 128;
            loop.n = 128;
            loop.k = 64;
            loop.wave_issue.instructions = instructions;
            loop.wave_issue.valu = valu;
            p.loops.push_back(std::move(loop));
            return p;
          },
          nullptr, nullptr};  // hardware dispatch, hardware routing
}
}  // namespace

TEST_CASE("the CDNA issue cost bounds a loop whose mix outlasts its MFMAs", "[cdna-mix][cu]") {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  const config::Loader loader({root});
  MachineSpec m = loader.machine(root / "machines/mi300x.yaml").spec;
  // Matrix work at the full rate, so that the issue-bound mixes below outlast it
  // (the machine file's fitted efficiency would stretch the products past them).
  m.kernels.matrix_efficiency = 1.0;
  sim::Gpu gpu(m);
  const std::uint32_t wgs = 4 * m.compute.total_cus();
  const double mhz = static_cast<double>(m.compute.clock.hz) / 1e6;
  const auto slope = [&](std::uint32_t instructions, std::uint32_t valu) {
    const auto t = gpu.run({mix_loop("a", wgs, 64, instructions, valu), mix_loop("b", wgs, 320, instructions, valu)});
    return (kernel_us(t[1]) - kernel_us(t[0])) / 256 * mhz;  // cycles per added iteration (all four workgroups)
  };
  const double none = slope(0, 0);
  const double light = slope(100, 50);      // 400 issue cycles < the matrix work: no change
  const double scalar = slope(2000, 0);     // 8000 issue cycles a wave, the workgroups' waves side by side
  const double vector = slope(1010, 1000);  // 4000 VALU cycles each on the shared SIMDs: 16000
  INFO("cycles per iteration: none " << none << ", light " << light << ", scalar-heavy " << scalar
                                     << ", VALU-heavy " << vector);
  // The four workgroups' products share the 4 matrix pipes: 4 x 1024 cycles.
  const double matrix = 4 * 2.0 * 128 * 128 * 64 / (512.0 * 4 * m.kernels.matrix_efficiency * m.compute.matrix_efficiency);
  CHECK(none == Approx(matrix).epsilon(0.05));
  CHECK(light == Approx(none).epsilon(0.02));
  CHECK(scalar == Approx(8000).epsilon(0.05));
  CHECK(vector == Approx(16000).epsilon(0.05));
}
