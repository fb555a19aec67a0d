#include "sim/platform/host_memory.h"

#include <algorithm>

#include <fmt/core.h>

#include "sim/core/sim_error.h"
#include "sim/mem/l2_cache.h"
#include "sim/mem/mall.h"
#include "workloads/config/units.h"
#include "workloads/util/memory_limit.h"

namespace tdmsim::sim {
namespace {

// Measured with /usr/bin/time (peak RSS) on this model, with margin: the
// process before any machine (SystemC kernel, libraries, configuration:
// 18-20 MB) ...
constexpr std::uint64_t kProcessBytes = 64ull << 20;
// ... one compute unit: its module and SystemC thread (the stack pages it
// touches), its slots' rings and line tables once a kernel runs, its stats
// (15 KB measured: 16 x 1024 CUs against 16 x 256).
constexpr std::uint64_t kCuBytes = 32ull << 10;
// One registered statistic (key, owner, name, unit, description strings),
// and one in a stats snapshot (a JSON object of value, unit and description):
// 8.5 KB measured per HBM pseudo-channel with 256 banks and four stats.
constexpr std::uint64_t kStatBytes = 512;
constexpr std::uint64_t kStatJsonBytes = 400;
// One trace event (a JSON object in the writer's buffer, and its name).
constexpr std::uint64_t kTraceEventBytes = 192;
// Per routed row of a MoE layer: the routing (ids, weights), the fused
// layout (expert, weight), the sorted layout (row, weight) with its padding,
// and each kernel's gather offsets (8 bytes) for the paths run.
constexpr std::uint64_t kPlanBytesPerRow = 6 * 4;
constexpr std::uint64_t kGatherBytesPerRow = 8;

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return UINT64_MAX;
  return a * b;
}

std::string gib(std::uint64_t b) {
  if (b < (1ull << 30)) return fmt::format("{:.0f} MiB", static_cast<double>(b) / (1ull << 20));
  return fmt::format("{:.1f} GiB", static_cast<double>(b) / (1ull << 30));
}

}  // namespace

std::uint64_t MemoryEstimate::total() const {
  std::uint64_t t = 0;
  for (const auto& p : parts) t = sat_add(t, p.bytes);
  return t;
}

void MemoryEstimate::add(std::string what, std::uint64_t bytes) { parts.push_back({std::move(what), bytes}); }

std::string MemoryEstimate::describe() const {
  std::vector<Part> sorted = parts;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Part& a, const Part& b) { return a.bytes > b.bytes; });
  std::string out;
  for (const auto& p : sorted) {
    if (p.bytes < (1ull << 20) && !out.empty()) continue;  // the parts that matter
    out += fmt::format("\n  {:>10}  {}", gib(p.bytes), p.what);
  }
  return out;
}

MemoryEstimate machine_memory(const MachineSpec& m) {
  MemoryEstimate e;
  e.add("the process itself (SystemC, libraries, configuration)", kProcessBytes);
  const std::uint64_t cus = std::uint64_t{m.compute.dies} * m.compute.cus_per_die;
  e.add(fmt::format("compute units (compute.dies x compute.cus_per_die = {} x {})", m.compute.dies,
                    m.compute.cus_per_die),
        sat_mul(cus, kCuBytes + sizeof(std::uint64_t) * 16));
  const auto& l2 = m.memory.l2;
  const std::uint64_t l2_channels = sat_mul(l2.channels_per_die, 16 * 8 + 5 * kStatBytes / 4);
  e.add(fmt::format("L2 tag arrays (compute.dies x memory.l2.size_per_die = {} x {}, line {}, {} ways)",
                    m.compute.dies, units::format(l2.size_per_die), units::format(l2.line), l2.ways),
        sat_mul(m.compute.dies, sat_add(sizeof(L2Cache) + l2_channels, L2Cache::tag_bytes(l2))));
  const auto& hbm = m.memory.hbm;
  if (m.memory.mall) {
    const auto& mall = *m.memory.mall;
    e.add(fmt::format("MALL tag arrays (memory.mall.size {}, {} ways)", units::format(mall.size), mall.ways),
          Mall::tag_bytes(mall, hbm.stacks));
  }
  const std::uint64_t channels = std::uint64_t{hbm.stacks} * hbm.channels_per_stack * hbm.pseudo_channels;
  // Per pseudo-channel: its state, its banks' open rows and times, four stats.
  const std::uint64_t per_channel = 96 + std::uint64_t{hbm.banks} * 16 + 4 * kStatBytes;
  e.add(fmt::format("HBM pseudo-channels (memory.hbm.stacks x channels_per_stack x pseudo_channels = "
                    "{} x {} x {}, {} banks each)",
                    hbm.stacks, hbm.channels_per_stack, hbm.pseudo_channels, hbm.banks),
        sat_mul(channels, per_channel));
  if (m.power) {
    // The clock governor's probe (sim/platform/gpu.cpp): a second GPU.
    std::uint64_t gpu = 0;
    for (std::size_t i = 1; i < e.parts.size(); ++i) gpu = sat_add(gpu, e.parts[i].bytes);
    e.add("the clock governor's probe (machine power: a second copy of every block above)", gpu);
  }
  return e;
}

void add_layer_memory(MemoryEstimate& e, const ScenarioSpec& s, const ModelSpec& model, const MachineSpec& m,
                      std::uint32_t paths, bool trace) {
  const std::uint64_t tokens = s.tokens;
  const std::uint64_t rows = tokens * (model.top_k + model.shared_experts);
  const std::uint64_t experts =
      (model.experts + s.parallel.redundant_experts) / std::max(1u, s.parallel.ep) + model.shared_experts;
  // The sorted layout pads every expert that has rows to whole blocks (of
  // 256 rows at most).
  const std::uint64_t with_rows = std::min(experts, rows);
  const std::uint64_t padded = rows + with_rows * 256;
  // Two plans live at once with --repeat (the first one's, kept for the
  // summary, and the current draw's).
  e.add(fmt::format("the MoE plan (tokens x (top_k + shared_experts) = {} x {} routed rows)", tokens,
                    model.top_k + model.shared_experts),
        sat_mul(2, sat_add(sat_mul(rows, kPlanBytesPerRow), sat_mul(padded, 8))));
  // Workgroups: a job per block (16 rows at least) and N tile of each stage
  // (the scenario's tiles' N, or 32 for the heuristic's), each a TileJob,
  // its dispatch order and release time, and its hardware record on the TDM
  // path.
  const std::uint64_t inter = model.intermediate_size / std::max(1u, s.parallel.tp);
  const std::uint64_t blocks = rows / 16 + with_rows;
  std::uint64_t tile_n = 32;
  for (const auto& t : {s.kernel.gate_up_tile, s.kernel.down_tile}) {
    if (!t.is_auto()) tile_n = std::min<std::uint64_t>(tile_n, t.n);
  }
  const std::uint64_t n_tiles = (2 * inter + model.hidden_size) / std::max<std::uint64_t>(16, tile_n) + 2;
  const std::uint64_t jobs = sat_mul(blocks, n_tiles);
  e.add(fmt::format("kernel jobs and gathers (routed rows, model.hidden_size {}, intermediate_size / tp {})",
                    model.hidden_size, inter),
        sat_add(sat_mul(sat_mul(jobs, 6 * 4 + 12 + 12), paths), sat_mul(sat_mul(padded, kGatherBytesPerRow), 2 * paths)));
  // The routing source `router` computes real router logits: W^T and
  // tokens x experts scores in floats.
  if (s.routing.source == RoutingSource::router) {
    e.add(fmt::format("router logits (model.hidden_size x experts + tokens x experts = {} x {} + {} x {})",
                      model.hidden_size, model.experts, tokens, model.experts),
          sat_mul(sat_add(sat_mul(model.hidden_size, model.experts), sat_mul(tokens, model.experts)), 4));
  }
  // Stats snapshots: one per path and the run's (every counter as a double
  // and as JSON).
  const auto& hbm = m.memory.hbm;
  const std::uint64_t stats = std::uint64_t{m.compute.dies} * (m.compute.cus_per_die * 6 + 8) +
                              std::uint64_t{hbm.stacks} * hbm.channels_per_stack * hbm.pseudo_channels * 4;
  e.add("stats snapshots (every CU's and pseudo-channel's counters)", sat_mul(stats, sat_mul(paths + 1, kStatJsonBytes)));
  if (trace) add_trace_memory(e, sat_mul(jobs, paths));
}

void add_chase_memory(MemoryEstimate& e, std::uint64_t footprint, std::uint32_t stride, std::uint32_t hops) {
  const std::uint64_t slots = footprint / std::max(1u, stride);
  e.add(fmt::format("pointer-chase cycle (--footprint / --stride = {} slots, --hops {})", slots, hops),
        // (the hop addresses: the two kernels' lists, the running workgroup's
        // copy and the one a CU builds to size the kernel, 8 B each)
        sat_add(sat_mul(slots, 2 * 8), sat_mul(hops, 4 * 8)));
}

void add_trace_memory(MemoryEstimate& e, std::uint64_t workgroups) {
  e.add(fmt::format("trace events (--trace: {} workgroups)", workgroups), sat_mul(workgroups, kTraceEventBytes));
}

std::uint64_t memory_limit() {
  try {
    return util::memory_limit();
  } catch (const util::MemoryLimitError& e) {
    throw NotSimulatable(e.what());
  }
}

void check_memory(const MemoryEstimate& e, std::uint64_t limit, const std::string& subject) {
  const std::uint64_t need = e.total();
  if (need <= limit) return;
  throw NotSimulatable(fmt::format("{} needs about {} of host memory to simulate, over the limit of {} ({}); the estimate:{}",
                                   subject, gib(need), gib(limit), util::memory_limit_source(), e.describe()));
}

}  // namespace tdmsim::sim
