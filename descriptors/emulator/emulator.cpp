#include "descriptors/emulator/emulator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include <mutex>

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include "descriptors/emulator/activation.h"
#include "descriptors/emulator/gemm.h"
#include "descriptors/emulator/plan_check.h"
#include "descriptors/emulator/quantize.h"
#include "descriptors/emulator/row_gather.h"
#include "descriptors/emulator/synthetic.h"

namespace tdmsim::emu {
namespace {

using Clock = std::chrono::steady_clock;

// Row granularity of the emulator's GEMMs (the M of a 16-row matrix-core tile).
// Eigen computes a row identically in any GEMM whose row count is a multiple
// of 4 (checked for these shapes; see docs/emulator.md), 16 keeps clear of its
// small-product paths.
constexpr std::uint32_t kGemmRowTile = 16;
// Weight chunks must start on 128-row boundaries so block_128 scale blocks
// are whole inside a chunk (quantize_weights).
static_assert(kInterChunk % 128 == 0 && kHiddenChunk % 128 == 0);

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Adds the time since `start` to a nanosecond counter shared by tasks.
void add_ns(std::atomic<std::int64_t>& counter, Clock::time_point start) {
  counter += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

// Per-thread buffers reused across tasks (a task overwrites what it reads).
struct Scratch {
  std::vector<float> w;  // weight chunk
  std::vector<float> c;  // GEMM output tile
};

// One task of a GEMM stage: fused expert `expert`, column chunk `chunk`.
struct Task {
  std::uint32_t expert;
  std::uint32_t chunk;
};

// The state of one emulate() call.
class Run {
 public:
  Run(const plan::MoePlan& plan, std::span<const float> x, const EmulatorOptions& options)
      : plan_(plan), shape_(plan.shape), layout_(plan.layout), x_(x), options_(options),
        weights_(plan.shape, plan.seed, options.weights) {}

  EmulatorResult execute();

 private:
  std::uint32_t m() const { return layout_.block_m; }
  std::uint32_t blocks() const { return layout_.padded_rows / layout_.block_m; }
  bool is_pad(std::size_t p) const { return layout_.sorted_rows[p] == layout_.sentinel; }
  DType storage() const { return storage_dtype(shape_.dtype); }

  void prepare();
  void stage1();
  void quantize_intermediate();
  void stage2();
  void combine();
  // Tasks (expert, chunk) over experts that own blocks, `width(e)` columns each.
  template <class Width>
  std::vector<Task> tasks(Width width, std::uint32_t chunk) const;

  const plan::MoePlan& plan_;
  const plan::LayerShape& shape_;
  const plan::BlockLayout& layout_;
  std::span<const float> x_;
  const EmulatorOptions& options_;
  const WeightSource weights_;
  EmulatorResult r_;
  std::vector<std::vector<std::uint32_t>> blocks_of_;  // per fused expert, in layout order
  std::vector<std::uint32_t> live_rows_;               // per block: rows up to its last real one
  std::vector<std::uint32_t> gemm_rows_;               // per block: rows its GEMMs compute
  std::vector<float> inter_;                           // [padded_rows][inter]
  tbb::enumerable_thread_specific<Scratch> scratch_;
  std::atomic<std::int64_t> weights_ns_{0};
  std::atomic<std::int64_t> gemm_ns_{0};
  // Progress of the stage running (EmulatorOptions::progress).
  std::atomic<std::size_t> tasks_done_{0};
  std::atomic<std::size_t> percent_shown_{0};
  std::mutex progress_mutex_;
  std::size_t percent_printed_ = 0;  // guarded by progress_mutex_
  void task_done(const char* stage, std::size_t total);
  void stage_start() {
    tasks_done_ = 0;
    percent_shown_ = 0;
    percent_printed_ = 0;
  }
};

void Run::task_done(const char* stage, std::size_t total) {
  if (!options_.progress) return;
  const std::size_t done = ++tasks_done_;
  const std::size_t percent = done * 100 / std::max<std::size_t>(total, 1);
  std::size_t shown = percent_shown_.load();
  // Once per percent: the first task to reach it reports.
  while (shown < percent && !percent_shown_.compare_exchange_weak(shown, percent)) {
  }
  if (shown >= percent) return;
  const std::lock_guard<std::mutex> lock(progress_mutex_);
  // Two threads past the exchange may reach the lock out of order: never back.
  if (percent <= percent_printed_) return;
  percent_printed_ = percent;
  options_.progress(stage, done, total);
}

template <class Width>
std::vector<Task> Run::tasks(Width width, std::uint32_t chunk) const {
  std::vector<Task> out;
  for (std::uint32_t e = 0; e < blocks_of_.size(); ++e) {
    if (blocks_of_[e].empty()) continue;
    const std::uint32_t n = width(e);
    for (std::uint32_t c = 0; c * chunk < n; ++c) out.push_back({e, c});
  }
  return out;
}

void Run::prepare() {
  check_plan(plan_);
  const std::size_t t = shape_.tokens, h = shape_.hidden, s = shape_.slots();
  if (x_.size() != t * h) {
    throw std::invalid_argument("emulate: x has " + std::to_string(x_.size()) +
                                " values, expected tokens x hidden = " + std::to_string(t * h));
  }
  r_.tokens = shape_.tokens;
  r_.hidden = shape_.hidden;
  r_.slots = shape_.slots();
  r_.inter = shape_.inter;
  blocks_of_.assign(shape_.experts_fused(), {});
  live_rows_.assign(blocks(), 0);
  gemm_rows_.assign(blocks(), 0);
  for (std::uint32_t b = 0; b < blocks(); ++b) {
    // GEMMs cover the block's rows up to its last real one, rounded up to a
    // multiple of kGemmRowTile: padding rows past that are never computed
    // (they are most of a block at small batches), and a fixed granularity
    // keeps each row's result independent of how many rows share its block.
    std::uint32_t last = 0;
    for (std::uint32_t i = 0; i < m(); ++i) {
      if (!is_pad(std::size_t{b} * m() + i)) last = i + 1;
    }
    live_rows_[b] = last;
    gemm_rows_[b] = std::min(m(), (last + kGemmRowTile - 1) / kGemmRowTile * kGemmRowTile);
    if (last > 0) blocks_of_[layout_.block_expert[b]].push_back(b);
  }

  // The GEMM input: x quantised once per token as a kernel's input quant
  // step does, or, when the routing weight scales the input (Llama-4), each
  // routed row x[t] * w quantised on its own (per_tensor: one dynamic scale
  // over every row that is computed here).
  const auto& fused = plan_.fused;
  std::vector<float> src;
  RowSource source;
  if (!shape_.weight_on_input) {
    src.assign(x_.begin(), x_.end());
    source = {src.data(), shape_.tokens, shape_.hidden};
  } else {
    src.assign(t * s * h, 0.0f);
    for (std::size_t row = 0; row < t * s; ++row) {
      if (fused.expert[row] == plan::kRemoteExpert) continue;
      const float w = fused.weight[row];
      for (std::size_t i = 0; i < h; ++i) src[row * h + i] = x_[(row / s) * h + i] * w;
    }
    source = {src.data(), static_cast<std::uint32_t>(t * s), shape_.hidden};
  }
  const float amax = absmax(src.data(), source.rows, h, h);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, source.rows),
                    [&](const tbb::blocked_range<std::size_t>& rr) {
                      quantize_activations(src.data() + rr.begin() * h, rr.size(), h, h,
                                           shape_.dtype, shape_.quant, amax);
                    });

  // The token-row gather of every block (one per tile job on the GPU): the
  // rows up to the block's last real one; the tile's remaining rows are
  // zero-filled, and a padding row inside that range names source.rows, one
  // past the end, which the tensor mover zero-fills too.
  r_.gathered.assign(std::size_t{layout_.padded_rows} * h, 0.0f);
  std::atomic<std::uint64_t> instructions{0};
  tbb::parallel_for(std::uint32_t{0}, blocks(), [&](std::uint32_t b) {
    std::vector<std::uint32_t> index(live_rows_[b]);
    for (std::uint32_t i = 0; i < live_rows_[b]; ++i) {
      const std::uint32_t row = layout_.sorted_rows[std::size_t{b} * m() + i];
      index[i] = row == layout_.sentinel  ? source.rows
                 : shape_.weight_on_input ? row
                                          : static_cast<std::uint32_t>(row / s);
    }
    instructions += gather_rows(source, index, m(), r_.gathered.data() + std::size_t{b} * m() * h)
                        .instructions;
  });
  r_.gather_instructions = instructions.load();
}

void Run::stage1() {
  const std::size_t h = shape_.hidden, stride = shape_.inter;
  inter_.assign(std::size_t{layout_.padded_rows} * stride, 0.0f);
  if (options_.keep_intermediates) r_.gate_up.assign(std::size_t{layout_.padded_rows} * 2 * stride, 0.0f);
  const bool round_gate_up = plan_.kernel.stages == 2;
  const float limit = static_cast<float>(shape_.activation_limit);
  // Chunks past a shared slot's real columns are skipped: their weights are
  // zero padding and their intermediate stays zero.
  const auto todo = tasks([&](std::uint32_t e) { return expert_columns(shape_, e); }, kInterChunk);
  stage_start();
  tbb::parallel_for(std::size_t{0}, todo.size(), [&](std::size_t ti) {
    const Task task = todo[ti];
    const std::uint32_t inter = shape_.inter;
    const std::uint32_t j0 = task.chunk * kInterChunk;
    const std::uint32_t nc = std::min(kInterChunk, inter - j0);
    Scratch& sc = scratch_.local();
    auto t0 = Clock::now();
    sc.w.resize(2 * std::size_t{nc} * h);
    weights_.gate_up_rows(task.expert, j0, j0 + nc, sc.w.data());
    add_ns(weights_ns_, t0);
    t0 = Clock::now();
    const std::size_t ldc = 2 * std::size_t{nc};
    sc.c.resize(std::size_t{m()} * ldc);
    for (std::uint32_t b : blocks_of_[task.expert]) {
      const std::size_t p0 = std::size_t{b} * m();
      gemm_abt(r_.gathered.data() + p0 * h, h, sc.w.data(), h, gemm_rows_[b], ldc, h,
               sc.c.data(), ldc);
      for (std::size_t i = 0; i < gemm_rows_[b]; ++i) {
        const std::size_t p = p0 + i;
        if (is_pad(p)) continue;
        float* c = sc.c.data() + i * ldc;
        // A 2-stage kernel stores the gate/up output in the storage dtype and
        // the activation kernel reads it back; the fused kernel keeps fp32.
        if (round_gate_up) {
          for (std::size_t n = 0; n < ldc; ++n) c[n] = round_to(c[n], storage());
        }
        if (options_.keep_intermediates) {
          float* g = r_.gate_up.data() + p * 2 * stride;
          std::copy_n(c, nc, g + j0);
          std::copy_n(c + nc, nc, g + inter + j0);
        }
        gated_activation(shape_.activation, c, c + nc, inter_.data() + p * stride + j0, nc, limit);
      }
    }
    add_ns(gemm_ns_, t0);
    task_done("gate/up", todo.size());
  });
}

void Run::quantize_intermediate() {
  const std::size_t inter = shape_.inter;
  if (is_scaled(shape_.dtype)) {
    // The activation's output is stored in the storage dtype first: the
    // 2-stage kernel writes it (bf16) and a quantisation kernel reads it
    // back; the 1-stage kernel keeps its slice of it in LDS as bf16 and
    // multiplies that by the dequantised down weights, with no requantisation
    // (a slice is narrower than a 1x128 scale group). docs/gpu-kernels.md.
    tbb::parallel_for(std::size_t{0}, std::size_t{layout_.padded_rows}, [&](std::size_t p) {
      if (is_pad(p)) return;
      float* row = inter_.data() + p * inter;
      for (std::size_t j = 0; j < inter; ++j) row[j] = round_to(row[j], storage());
    });
    if (plan_.kernel.stages == 1) return;
  }
  float amax = 0.0f;  // per_tensor: one dynamic scale over every real row
  for (std::size_t p = 0; p < layout_.padded_rows; ++p) {
    if (!is_pad(p)) amax = std::max(amax, absmax(inter_.data() + p * inter, 1, inter, inter));
  }
  tbb::parallel_for(std::size_t{0}, std::size_t{layout_.padded_rows}, [&](std::size_t p) {
    if (is_pad(p)) return;
    quantize_activations(inter_.data() + p * inter, 1, inter, inter, shape_.dtype, shape_.quant,
                         amax);
  });
}

void Run::stage2() {
  const std::size_t h = shape_.hidden, stride = shape_.inter;
  r_.expert_out.assign(std::size_t{shape_.tokens} * shape_.slots() * h, 0.0f);
  const auto todo = tasks([&](std::uint32_t) { return shape_.hidden; }, kHiddenChunk);
  stage_start();
  tbb::parallel_for(std::size_t{0}, todo.size(), [&](std::size_t ti) {
    const Task task = todo[ti];
    const std::uint32_t inter = shape_.inter;
    const std::uint32_t h0 = task.chunk * kHiddenChunk;
    const std::uint32_t nh = std::min(kHiddenChunk, shape_.hidden - h0);
    Scratch& sc = scratch_.local();
    auto t0 = Clock::now();
    sc.w.resize(std::size_t{nh} * inter);
    weights_.down_rows(task.expert, h0, h0 + nh, sc.w.data());
    add_ns(weights_ns_, t0);
    t0 = Clock::now();
    sc.c.resize(std::size_t{m()} * nh);
    for (std::uint32_t b : blocks_of_[task.expert]) {
      const std::size_t p0 = std::size_t{b} * m();
      gemm_abt(inter_.data() + p0 * stride, stride, sc.w.data(), inter, gemm_rows_[b], nh, inter,
               sc.c.data(), nh);
      for (std::size_t i = 0; i < gemm_rows_[b]; ++i) {
        const std::size_t p = p0 + i;
        if (is_pad(p)) continue;
        // Epilogue: the routed weight multiplies the fp32 accumulator (unless
        // it was applied to the input), then the row is stored.
        const float w = shape_.weight_on_input ? 1.0f : layout_.sorted_weights[p];
        const float* c = sc.c.data() + i * nh;
        float* out = r_.expert_out.data() + std::size_t{layout_.sorted_rows[p]} * h + h0;
        for (std::size_t n = 0; n < nh; ++n) out[n] = round_to(c[n] * w, storage());
      }
    }
    add_ns(gemm_ns_, t0);
    task_done("down", todo.size());
  });
}

void Run::combine() {
  const std::size_t h = shape_.hidden, s = shape_.slots();
  r_.y.assign(std::size_t{shape_.tokens} * h, 0.0f);
  tbb::parallel_for(std::size_t{0}, std::size_t{shape_.tokens}, [&](std::size_t t) {
    float* y = r_.y.data() + t * h;
    for (std::size_t k = 0; k < s; ++k) {  // fixed slot order: top-k picks, then shared
      const std::size_t row = t * s + k;
      if (plan_.fused.expert[row] == plan::kRemoteExpert) continue;
      const float* e = r_.expert_out.data() + row * h;
      for (std::size_t i = 0; i < h; ++i) y[i] += e[i];
    }
  });
}

EmulatorResult Run::execute() {
  const auto start = Clock::now();
  auto t0 = start;
  const auto lap = [&t0](double& into) {
    const auto now = Clock::now();
    into = seconds(now - t0);
    t0 = now;
  };
  EmulatorTimings& tm = r_.timings;
  prepare();
  lap(tm.prepare_s);
  stage1();
  lap(tm.stage1_s);
  quantize_intermediate();
  lap(tm.intermediate_s);
  stage2();
  lap(tm.stage2_s);
  combine();
  lap(tm.combine_s);
  tm.total_s = seconds(Clock::now() - start);
  tm.weights_task_s = static_cast<double>(weights_ns_.load()) * 1e-9;
  tm.gemm_task_s = static_cast<double>(gemm_ns_.load()) * 1e-9;
  if (options_.keep_intermediates) r_.intermediate = std::move(inter_);
  return std::move(r_);
}

}  // namespace

EmulatorResult emulate(const plan::MoePlan& plan, std::span<const float> x,
                       const EmulatorOptions& options) {
  return Run(plan, x, options).execute();
}

EmulatorResult emulate(const plan::MoePlan& plan, const EmulatorOptions& options) {
  const auto x = seeded_activations(plan.seed, plan.shape.tokens, plan.shape.hidden);
  return emulate(plan, x, options);
}

std::uint64_t emulator_bytes(const plan::LayerShape& shape, std::uint32_t block_m,
                             bool keep_intermediates) {
  // Counted in 128-bit so absurd shapes saturate instead of wrapping.
  __extension__ typedef unsigned __int128 u128;  // GCC/Clang extension
  const u128 t = shape.tokens, h = shape.hidden, s = shape.slots();
  const u128 inter = shape.inter;
  // Each fused expert pads its rows by at most block_m - 1.
  const u128 padded = t * s + u128(shape.experts_fused()) * (block_m > 0 ? block_m - 1 : 0);
  const u128 threads = std::max(1u, std::thread::hardware_concurrency());
  u128 floats = t * h * 2                                    // caller's x and y
                + (shape.weight_on_input ? t * s * h : t * h)  // quantised input rows
                + padded * h                                 // gathered rows
                + padded * inter                             // intermediate
                + t * s * h                                  // expert outputs
                + threads * (2 * kInterChunk * h + kHiddenChunk * inter +
                             u128(block_m) * 2 * std::max<u128>(kInterChunk, kHiddenChunk));
  if (keep_intermediates) floats += padded * 2 * inter;
  const u128 plan_bytes = t * s * 32 + padded * 8;  // routing, fused routing, layout
  const u128 bytes = floats * 4 + plan_bytes;
  return bytes > std::numeric_limits<std::uint64_t>::max()
             ? std::numeric_limits<std::uint64_t>::max()
             : static_cast<std::uint64_t>(bytes);
}

}  // namespace tdmsim::emu
