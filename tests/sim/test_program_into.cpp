// A compute unit builds each workgroup's program into its slot's program
// (KernelLaunch::program_into: TileProgram::reset keeps the vectors'
// storage), whatever that held before. The reference: the same workgroup's
// program built into a fresh one (KernelLaunch::program). Random workgroups
// of the MoE kernels, each built into a program last used for another
// workgroup or kernel, must equal it field for field.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>

#include "descriptors/plan/moe_plan.h"
#include "sim/mem/address_space.h"
#include "sim/programs/moe_kernels.h"
#include "workloads/config/loader.h"

namespace {

using namespace tdmsim;
namespace fs = std::filesystem;

config::ResolvedScenario scenario(const std::string& file, std::uint32_t tokens, std::uint32_t stages) {
  const fs::path root = fs::path(TDMSIM_SOURCE_DIR);
  const config::Loader loader({root / "workloads"});
  auto sc = loader.resolve_scenario(root / "workloads/scenarios" / file);
  sc.scenario.spec.tokens = tokens;
  sc.scenario.spec.kernel.stages = stages;
  return sc;
}

// A program with something in every vector and odd scalars: what a slot may
// hold from its last workgroup (of any kernel).
isa::TileProgram dirty() {
  isa::TileProgram p;
  p.threads = 7;
  p.lds_bytes = 9;
  p.pipeline_depth = 5;
  p.chase = {1, 2, 3};
  p.extra_time_ps = 11;
  p.epilogue_vector_ops = 13;
  p.epilogue_issue_bound = true;
  p.epilogue_threads = 17;
  p.iteration_overhead_ps = 19;
  p.prologue_loads.push_back(isa::strided(64, 4));
  p.stores.push_back(isa::strided(128, 8, 2, 8));
  p.stores.back().atomic = true;
  for (int i = 0; i < 3; ++i) {
    isa::Loop l;
    l.iterations = 23;
    l.dtype = DType::fp8_e4m3;
    l.m = l.n = l.k = 16;
    l.moe_kernel = l.wgmma = l.ws = true;
    l.vector_ops = 29;
    l.vector_after_matrix = l.vector_issue_bound = true;
    l.wait_ps = 31;
    l.issue_instructions = 37;
    l.wave_issue = {41, 43};
    l.b_in_registers = true;
    l.loads.push_back(isa::strided(256, 16, 4, 64, 16));
    l.loads.back().tensor_mover = true;
    l.loads.back().to_registers = true;
    p.loops.push_back(l);
  }
  return p;
}

}  // namespace

TEST_CASE("a reset program is a default one with default loops, whatever it held", "[cu][programs]") {
  // The reference: a fresh program (TileProgram::reset writes the defaults
  // field by field, keeping the vectors' storage).
  for (const std::size_t loops : {0u, 1u, 2u, 3u, 5u}) {
    isa::TileProgram p = dirty();
    const std::size_t capacity = p.loops.empty() ? 0 : p.loops[0].loads.capacity();
    p.reset(loops);
    isa::TileProgram want;
    want.loops.resize(loops);
    INFO("loops " << loops);
    CHECK(p == want);
    if (loops > 0) CHECK(p.loops[0].loads.capacity() == capacity);  // storage kept
  }
}

TEST_CASE("programs built into a reused program equal fresh ones", "[cu][programs]") {
  std::mt19937_64 rng(20261204);
  std::size_t compared = 0;
  // (The last is AITER's kernels, whose weight loads go to registers:
  // tests/sim/test_aiter_two_stage.cpp; its tiles are 2-stage ones.)
  for (const char* file : {"deepseek-v3-decode-mi355x.yaml", "qwen3-30b-decode-h200.yaml",
                           "mixtral-8x7b-64tok-bf16-mi300x.yaml",
                           "../../tests/data/aiter/two-stage-dsv3-tp4-mi300x.yaml"}) {
    const bool aiter = std::string_view(file).find("aiter") != std::string_view::npos;
    for (const std::uint32_t tokens : {1u, 64u, 700u}) {
      for (const std::uint32_t stages : {1u, 2u}) {
        if (aiter && stages == 1) continue;
        const auto sc = scenario(file, tokens, stages);
        const plan::MoePlan plan = plan::build_plan(sc);
        sim::AddressSpace as;
        const auto k = sim::programs::software_moe(as, plan, sc.machine.spec);
        isa::TileProgram reused = dirty();
        for (const auto& launch : k.kernels) {
          if (!launch.program_into || launch.workgroups == 0) continue;
          for (int n = 0; n < 40; ++n) {
            const auto wg = static_cast<std::uint32_t>(rng() % launch.workgroups);
            if (n % 10 == 9) reused = dirty();
            launch.program_into(wg, reused);
            INFO(file << " tokens " << tokens << " stages " << stages << " " << launch.name << " wg " << wg);
            REQUIRE(reused == launch.program(wg));
            ++compared;
          }
        }
      }
    }
  }
  CHECK(compared > 400);
}
