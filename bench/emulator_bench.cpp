// Speed of the functional emulator and its parts. The layer benchmarks run
// the shipped scenarios docs/performance.md reports:
//   tdmsim_emulator_bench --benchmark_filter=Layer
// Thread counts are set with tbb::global_control (the argument).
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include "descriptors/emulator/emulator.h"
#include "descriptors/emulator/gemm.h"
#include "descriptors/emulator/row_gather.h"
#include "descriptors/emulator/synthetic.h"
#include "descriptors/plan/moe_plan.h"
#include "workloads/config/loader.h"

namespace {

using namespace tdmsim;

plan::LayerShape shape_of(DType dtype, Quant quant) {
  plan::LayerShape s;
  s.tokens = 64;
  s.hidden = 4096;
  s.inter = 14336;
  s.experts_total = s.experts_local = 8;
  s.top_k = 2;
  s.dtype = dtype;
  s.weight_dtype = s.dtype;
  s.quant = quant;
  return s;
}

// One stage-1 task's weights: 128 gate + 128 up rows of H = 4096, generated and quantised.
void BM_WeightChunk(benchmark::State& state, DType dtype, Quant quant) {
  const auto shape = shape_of(dtype, quant);
  std::vector<float> w(2 * 128 * std::size_t{shape.hidden});
  for (auto _ : state) {
    emu::expert_gate_up_rows(shape, 1, 3, 0, 128, w.data());
    benchmark::DoNotOptimize(w.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(w.size()));
}
BENCHMARK_CAPTURE(BM_WeightChunk, bf16, DType::bf16, Quant::none);
BENCHMARK_CAPTURE(BM_WeightChunk, fp8_block128, DType::fp8_e4m3, Quant::block_128);
BENCHMARK_CAPTURE(BM_WeightChunk, mxfp4, DType::mxfp4, Quant::none);

// One block's gate/up GEMM against one chunk: M rows x K 4096 x N 256.
void BM_Gemm(benchmark::State& state) {
  const std::size_t m = static_cast<std::size_t>(state.range(0)), k = 4096, n = 256;
  std::vector<float> a(m * k, 0.5f), w(n * k, 0.25f), c(m * n);
  for (auto _ : state) {
    emu::gemm_abt(a.data(), k, w.data(), k, m, n, k, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["flop/s"] = benchmark::Counter(static_cast<double>(2 * m * n * k),
                                                benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Gemm)->Arg(16)->Arg(64)->Arg(128);

// The TDM row gather of one 64-row block of a [4096][4096] activation tensor.
void BM_RowGather(benchmark::State& state) {
  const std::uint32_t rows = 4096, cols = 4096, m = 64;
  std::vector<float> src(std::size_t{rows} * cols, 1.0f), dst(std::size_t{m} * cols);
  std::vector<std::uint32_t> index(m);
  for (std::uint32_t i = 0; i < m; ++i) index[i] = (i * 977) % rows;
  for (auto _ : state) {
    benchmark::DoNotOptimize(emu::gather_rows({src.data(), rows, cols}, index, m, dst.data()));
  }
  state.SetBytesProcessed(state.iterations() * std::int64_t{m} * cols * 4);
}
BENCHMARK(BM_RowGather);

// A whole layer of a shipped scenario at `threads` TBB threads.
void BM_Layer(benchmark::State& state, const std::string& scenario) {
  const tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                                  static_cast<std::size_t>(state.range(0)));
  const config::Loader loader(config::default_roots());
  const auto plan = plan::build_plan(
      loader.resolve_scenario(std::string(TDMSIM_SOURCE_DIR) + "/workloads/scenarios/" + scenario));
  const auto x = emu::seeded_activations(plan.seed, plan.shape.tokens, plan.shape.hidden);
  double weights = 0, gemm = 0;
  for (auto _ : state) {
    const auto r = emu::emulate(plan, x);
    weights += r.timings.weights_task_s;
    gemm += r.timings.gemm_task_s;
    benchmark::DoNotOptimize(r.y.data());
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["weights_task_s"] = weights / n;
  state.counters["gemm_task_s"] = gemm / n;
}
BENCHMARK_CAPTURE(BM_Layer, mixtral_8x7b_64tok, "mixtral-8x7b-64tok-bf16-mi300x.yaml")
    ->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_Layer, qwen3_30b_a3b_512tok, "qwen3-30b-a3b-512tok-bf16-mi300x.yaml")
    ->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
