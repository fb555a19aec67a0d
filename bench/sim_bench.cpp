// Simulator throughput on fixed fixtures: simulated workgroups per wall
// second and simulated time per wall second (docs/performance.md).
//   tdmsim_sim_bench [--benchmark_filter=...]
// SystemC allows one elaboration per process, so all fixtures share one
// simulated MI300X and run their kernels back to back on it.
#include <chrono>
#include <memory>

#include <benchmark/benchmark.h>

#include "sim/platform/gpu.h"
#include "sim/programs/microbench.h"
#include "workloads/config/loader.h"

namespace {

using namespace tdmsim;

struct Fixture {
  MachineSpec machine;
  std::unique_ptr<sim::Gpu> gpu;
  sim::AddressSpace as;
};

Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    const auto root = std::filesystem::path(TDMSIM_SOURCE_DIR) / "workloads";
    x.machine = config::Loader({root}).machine(root / "machines/mi300x.yaml").spec;
    x.gpu = std::make_unique<sim::Gpu>(x.machine);
    return x;
  }();
  return f;
}

void report(benchmark::State& state, const std::vector<sim::KernelTiming>& t, double wall) {
  double wgs = 0, simulated = 0;
  for (const auto& k : t) {
    wgs += k.workgroups;
    simulated += static_cast<double>(k.end - k.launch) * 1e-12;
  }
  state.counters["workgroups_per_wall_s"] = benchmark::Counter(wgs / wall);
  state.counters["simulated_us_per_wall_s"] = benchmark::Counter(simulated * 1e6 / wall);
}

template <class Make>
void run(benchmark::State& state, Make make) {
  auto& f = fixture();
  for (auto _ : state) {
    const std::vector<isa::KernelLaunch> kernels = make(f);
    const auto t0 = std::chrono::steady_clock::now();
    const auto timings = f.gpu->run(kernels);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(wall);
    report(state, timings, wall);
  }
}

void BM_StreamCopy256MiB(benchmark::State& state) {
  run(state, [](Fixture& f) {
    return std::vector<isa::KernelLaunch>{sim::programs::stream_copy(f.as, 256ull << 20)};
  });
}
BENCHMARK(BM_StreamCopy256MiB)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

// The machine-model issue's speed target: 1 GiB copied on MI300X in < 1 s.
void BM_StreamCopy1GiB(benchmark::State& state) {
  run(state, [](Fixture& f) {
    return std::vector<isa::KernelLaunch>{sim::programs::stream_copy(f.as, 1ull << 30)};
  });
}
BENCHMARK(BM_StreamCopy1GiB)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Gemm2048Bf16(benchmark::State& state) {
  run(state, [](Fixture& f) {
    return std::vector<isa::KernelLaunch>{
        sim::programs::gemm(f.as, {2048, 2048, 2048, DType::bf16}, f.machine)};
  });
}
BENCHMARK(BM_Gemm2048Bf16)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_PointerChase20k(benchmark::State& state) {
  run(state, [](Fixture& f) { return sim::programs::pointer_chase(f.as, 1ull << 30, 256, 20000); });
}
BENCHMARK(BM_PointerChase20k)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
