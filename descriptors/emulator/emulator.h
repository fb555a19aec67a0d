// The functional emulator: executes a MoePlan on the CPU stage by stage the
// way the fused-MoE kernels do (gather a block's token rows, gate/up GEMM,
// gated activation, quantise the intermediate, down GEMM, routed-weight
// multiply, combine). Results are bit-identical run to run and at any TBB
// thread count; numerics, accumulation order and tolerances are documented in
// docs/emulator.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "descriptors/emulator/expert_weights.h"
#include "descriptors/plan/moe_plan.h"

namespace tdmsim::emu {

struct EmulatorOptions {
  // Also return the gate/up output and the intermediate (debugging; costs
  // padded_rows x 3 x I floats).
  bool keep_intermediates = false;
  // The routed experts' weights from the caller instead of the seed (null:
  // all seeded); must outlive the call.
  const ExpertWeights* weights = nullptr;
  // Called as the two GEMM stages' expert tasks finish, at most once per
  // percent of a stage ("gate/up" or "down", tasks done, tasks in all), from
  // one thread at a time (any of the pool's): a progress line for long layers.
  std::function<void(const char* stage, std::size_t done, std::size_t total)> progress;
};

// Wall-clock seconds of each phase, plus the two GEMM stages' task time split
// into weight generation and GEMM + epilogue (wall time summed over tasks, so
// it includes any time a task's thread waited for a core).
struct EmulatorTimings {
  double prepare_s = 0;       // plan checks, input quantisation, row gather
  double stage1_s = 0;        // gate/up GEMM + activation
  double intermediate_s = 0;  // quantising the intermediate
  double stage2_s = 0;        // down GEMM + routed weight
  double combine_s = 0;
  double total_s = 0;
  double weights_task_s = 0;   // generating and quantising expert weights
  double gemm_task_s = 0;      // GEMMs, activation and epilogues
};

struct EmulatorResult {
  std::uint32_t tokens = 0;
  std::uint32_t hidden = 0;
  std::uint32_t slots = 0;
  std::uint32_t inter = 0;         // I: every fused expert's intermediate in the kernels
  std::vector<float> y;            // [tokens][hidden]: the layer output
  // The GEMM input rows as gathered, in sorted order, padding rows zero
  // (quantised x, or x times the routing weight for weight_on_input):
  // [padded_rows][hidden].
  std::vector<float> gathered;
  // Expert outputs after the routed-weight multiply and the store rounding,
  // by row id token * slots + slot (remote picks zero): [tokens * slots][hidden].
  std::vector<float> expert_out;
  // keep_intermediates only, both in sorted order, padding rows zero:
  std::vector<float> gate_up;       // [padded_rows][2I]: gate at [0, I), up at [I, 2I)
  std::vector<float> intermediate;  // [padded_rows][I]: activation output as the down GEMM reads it
  std::uint64_t gather_instructions = 0;  // tensor-mover gather instructions of the row gathers
  EmulatorTimings timings;
};

// Runs `plan` on activations x ([tokens][hidden], fp32, caller-provided or
// seeded_activations()); the expert weights come from the plan's seed unless
// options.weights gives them.
// Throws std::invalid_argument for an inconsistent plan (see check_plan) or a
// wrongly sized x.
EmulatorResult emulate(const plan::MoePlan& plan, std::span<const float> x,
                       const EmulatorOptions& options = {});

// Runs `plan` on its seeded activations (synthetic.h).
EmulatorResult emulate(const plan::MoePlan& plan, const EmulatorOptions& options = {});

// Upper bound of the bytes emulate() allocates for a layer with blocks of
// block_m rows (the x copy included), so callers can refuse sizes that would
// exhaust memory before building anything.
std::uint64_t emulator_bytes(const plan::LayerShape& shape, std::uint32_t block_m,
                             bool keep_intermediates);

// Intermediate (I) and down (H) columns one stage task covers: fixed, because
// the GEMM's summation order may depend on the tile shape (docs/emulator.md).
inline constexpr std::uint32_t kInterChunk = 128;
inline constexpr std::uint32_t kHiddenChunk = 128;

}  // namespace tdmsim::emu
