// Simulator speed on MoE layers (the MoE-on-timing-model issue's targets):
// DeepSeek-V3 (E=256, top-8, H=7168, I=2048, fp8 block-128) at 64 and 4096
// tokens on mi355x, software path and TDM path. mi355x has no TDM unit, so
// the TDM fixtures give it mi500x-tdm's hypothetical `tdm:` section.
//   tdmsim_moe_bench [--benchmark_filter=...]
// One elaboration per process: every fixture runs on the same simulated GPU,
// each with fresh buffers (cold caches).
#include <chrono>
#include <filesystem>
#include <memory>

#include <benchmark/benchmark.h>

#include "descriptors/plan/moe_plan.h"
#include "sim/platform/gpu.h"
#include "sim/programs/moe_kernels.h"
#include "workloads/config/loader.h"

namespace {

using namespace tdmsim;
namespace fs = std::filesystem;

struct Fixture {
  config::ResolvedScenario decode, prefill;
  std::unique_ptr<sim::Gpu> gpu;
  sim::AddressSpace as;
};

Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    const fs::path root = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
    const config::Loader loader({root});
    x.decode = loader.resolve_scenario(root / "scenarios/deepseek-v3-decode-mi355x.yaml");
    x.prefill = loader.resolve_scenario(root / "scenarios/deepseek-v3-prefill-mi355x.yaml");
    const auto tdm = loader.machine(root / "machines/mi500x-tdm.yaml").spec.tdm;
    x.decode.machine.spec.tdm = tdm;
    x.prefill.machine.spec.tdm = tdm;
    x.gpu = std::make_unique<sim::Gpu>(x.decode.machine.spec);
    return x;
  }();
  return f;
}

void run(benchmark::State& state, const config::ResolvedScenario& sc, bool tdm) {
  auto& f = fixture();
  const plan::MoePlan p = plan::build_plan(sc);
  double simulated = 0, workgroups = 0;
  for (auto _ : state) {
    const auto k = tdm ? sim::programs::tdm_moe(f.as, p, sc.machine.spec)
                       : sim::programs::software_moe(f.as, p, sc.machine.spec);
    const auto t0 = std::chrono::steady_clock::now();
    const auto t = f.gpu->run(k.kernels);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(wall);
    simulated = static_cast<double>(t.back().end - t.front().launch) * 1e-12;
    workgroups = 0;
    for (const auto& kt : t) workgroups += kt.workgroups;
    state.counters["simulated_us_per_wall_s"] = benchmark::Counter(simulated * 1e6 / wall);
    state.counters["workgroups_per_wall_s"] = benchmark::Counter(workgroups / wall);
  }
  state.counters["layer_us"] = simulated * 1e6;
}

void BM_DeepSeekV3_64tok_Software(benchmark::State& s) { run(s, fixture().decode, false); }
void BM_DeepSeekV3_64tok_Tdm(benchmark::State& s) { run(s, fixture().decode, true); }
void BM_DeepSeekV3_4096tok_Software(benchmark::State& s) { run(s, fixture().prefill, false); }
void BM_DeepSeekV3_4096tok_Tdm(benchmark::State& s) { run(s, fixture().prefill, true); }
BENCHMARK(BM_DeepSeekV3_64tok_Software)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_DeepSeekV3_64tok_Tdm)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_DeepSeekV3_4096tok_Software)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_DeepSeekV3_4096tok_Tdm)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
