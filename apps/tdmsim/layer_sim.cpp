#include "apps/tdmsim/layer_sim.h"

#include "apps/tdmsim/attribution.h"
#include "apps/tdmsim/child_process.h"
#include "apps/tdmsim/ep_layer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <fmt/core.h>

#include "sim/core/sim_error.h"
#include "sim/platform/host_memory.h"

namespace tdmsim::cli {
namespace {

using config::Json;


// A counter's increase since `before` summed over the blocks whose name ends
// in `.kind` ("l2", "mall", "hbm").
double sum_of(const sim::StatRegistry& stats, const sim::StatRegistry::Snapshot& before, const std::string& kind,
              const std::string& name) {
  return stats.sum_keys("", "." + kind + "." + name, &before);
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// THREADSxMxNxK, as scenarios and tuning tables name tiles.
std::string tile_name(const KernelTile& t) { return fmt::format("{}x{}x{}x{}", t.threads, t.m, t.n, t.k); }

// Per-expert load over this GPU's routed experts: max/mean and the
// coefficient of variation of the rows each received.
Json load_spread(const plan::MoePlan& p) {
  const auto& rows = p.layout.expert_rows;
  const std::uint32_t n = p.shape.experts_local;
  double sum = 0, sq = 0, mx = 0;
  for (std::uint32_t e = 0; e < n; ++e) {
    sum += rows[e];
    sq += double(rows[e]) * rows[e];
    mx = std::max(mx, double(rows[e]));
  }
  const double mean = n > 0 ? sum / n : 0;
  const double var = n > 0 ? std::max(0.0, sq / n - mean * mean) : 0;
  std::uint32_t idle = 0;
  for (std::uint32_t e = 0; e < n; ++e) idle += rows[e] == 0 ? 1 : 0;
  return {{"max_over_mean", ratio(mx, mean)}, {"cv", ratio(std::sqrt(var), mean)},
          {"experts_without_tokens", idle}, {"experts", n}};
}

// A kernel's timing as it crosses in a PathRun (path_run_to_json).
Json timing_to_json(const sim::KernelTiming& t) {
  return {{"name", t.name},         {"launch", t.launch},         {"start", t.start},
          {"end", t.end},           {"workgroups", t.workgroups}, {"clock_hz", t.clock_hz},
          {"hbm_bytes", t.hbm_bytes}, {"work_end", t.work_end},   {"boundary", t.boundary},
          {"slot_ps", t.slots.ps},
          {"window_ps", t.slots.window_ps}, {"slots_per_cu", t.slots_per_cu},
          {"occupancy_limiter", t.occupancy_limiter}};
}
sim::KernelTiming timing_from_json(const Json& j) {
  sim::KernelTiming t;
  t.name = j.at("name").get<std::string>();
  t.launch = j.at("launch").get<sim::Tick>();
  t.start = j.at("start").get<sim::Tick>();
  t.end = j.at("end").get<sim::Tick>();
  t.workgroups = j.at("workgroups").get<std::uint32_t>();
  t.clock_hz = j.at("clock_hz").get<double>();
  t.hbm_bytes = j.at("hbm_bytes").get<double>();
  t.work_end = j.at("work_end").get<sim::Tick>();
  t.boundary = j.at("boundary").get<sim::Tick>();
  t.slots.ps = j.at("slot_ps").get<decltype(t.slots.ps)>();
  t.slots.window_ps = j.at("window_ps").get<std::uint64_t>();
  t.slots_per_cu = j.at("slots_per_cu").get<std::uint32_t>();
  t.occupancy_limiter = j.at("occupancy_limiter").get<std::string>();
  return t;
}
}  // namespace

// (layer_sim.h: a PathRun as it crosses from a child process or an MPI rank.)
Json path_run_to_json(const PathRun& r) {
  Json timings = Json::array();
  for (const auto& t : r.timings) timings.push_back(timing_to_json(t));
  Json descriptors = Json::array();
  for (const auto& d : r.descriptors) {
    descriptors.push_back(Json::binary(std::vector<std::uint8_t>(reinterpret_cast<const std::uint8_t*>(d.data()),
                                                                 reinterpret_cast<const std::uint8_t*>(d.data()) + d.size())));
  }
  // (The stats as one string: thousands of small objects would each be
  // encoded, decoded and rebuilt on the way.)
  return {{"path", r.path},         {"timings", timings},     {"stages", r.stages},
          {"total_s", r.total_s},   {"routing_s", r.routing_s}, {"sort_s", r.sort_s},
          {"metrics", r.metrics},   {"stats_json", r.stats_json}, {"descriptors", descriptors}};
}
PathRun path_run_from_json(Json& j) {
  PathRun r;
  r.path = j.at("path").get<std::string>();
  for (const auto& t : j.at("timings")) r.timings.push_back(timing_from_json(t));
  r.stages = j.at("stages").get<std::vector<std::string>>();
  r.total_s = j.at("total_s").get<double>();
  r.routing_s = j.at("routing_s").get<double>();
  r.sort_s = j.at("sort_s").get<double>();
  r.metrics = j.at("metrics");
  r.stats_json = std::move(j.at("stats_json").get_ref<std::string&>());
  for (const auto& d : j.at("descriptors")) {
    const auto& b = d.get_binary();
    std::vector<std::byte> bytes(b.size());
    std::memcpy(bytes.data(), b.data(), b.size());
    r.descriptors.push_back(std::move(bytes));
  }
  return r;
}

void check_kernels_fit(const sim::programs::MoeKernels& k, const plan::MoePlan& p, const MachineSpec& m,
                       const config::SetMap* scenario_keys, const config::SetMap* machine_keys) {
  // A gate/up kernel said to hold more workgroups a CU than the CU's wave
  // slots allow (kernel.gate_up_workgroups_per_cu, or a tuned row's assembly
  // kernel name): the count would change nothing, so it is refused.
  if (const std::uint32_t n = p.kernel.aiter_traits.gate_up_workgroups_per_cu; n != 0) {
    for (const auto& kernel : k.kernels) {
      const std::string_view name = kernel.name;
      if (kernel.workgroups == 0 || !name.ends_with("_gate_up")) continue;
      const std::uint32_t threads = kernel.program(0).threads;
      // (No LDS or registers: the bound of the wave slots alone.)
      const std::uint32_t by_waves = m.compute.occupancy(threads, 0, 0).workgroups;
      if (n <= by_waves) continue;
      const auto& src = p.kernel.source;
      throw sim::NotSimulatable(fmt::format(
          "{} says kernel {} holds {} workgroups a CU, but a CU of machine {} holds at most {} of {} threads "
          "(simds_per_cu x wave_slots_per_simd = {} waves)",
          src.config_line != 0 ? fmt::format("the assembly kernel name of kernel.config {}:{}", src.config_file,
                                             src.config_line)
                               : std::string("kernel.gate_up_workgroups_per_cu"),
          kernel.name, n, m.name, by_waves, threads, m.compute.simds_per_cu * m.compute.wave_slots_per_simd));
    }
  }
  // A kernel that does not fit on a CU (Gpu::submit would refuse it too):
  // said here with the scenario keys that chose it.
  for (const auto& kernel : k.kernels) {
    if (kernel.workgroups == 0) continue;
    const std::string why = sim::fit_problem(m.compute, kernel.program(0));
    if (why.empty()) continue;
    const auto ends = [&](std::string_view s) {
      return kernel.name.size() >= s.size() && kernel.name.compare(kernel.name.size() - s.size(), s.size(), s) == 0;
    };
    const bool down = ends("_down");
    const auto& src = p.kernel.source;
    // The scenario's kernel.*_lds_buffers 2 (AITER's CK v3 pipeline) doubles
    // the stage's LDS: one buffer (v1) is the other way out.
    const auto scenario_buffers = [&](bool d) {
      const std::uint32_t b = d ? p.kernel.aiter_traits.down_lds_buffers : p.kernel.aiter_traits.gate_up_lds_buffers;
      return p.kernel.code == KernelCode::aiter && src.config_line == 0 && b == 2 && !ends("_fused") &&
             why.find("LDS") != std::string::npos;
    };
    const std::string chosen = src.config_line != 0
                                   ? fmt::format(" (chosen by kernel.config {}:{})", src.config_file, src.config_line)
                                   : std::string();
    const std::string hint =
        ends("_gate_up") || ends("_fused") || down
            ? fmt::format("its tile is {} ({}; block_m {}, pipeline_stages {}){}: {}",
                          tile_name(down ? p.kernel.down_tile : plan::named_gate_up_tile(p.kernel)),
                          down ? "kernel.down_tile" : "kernel.gate_up_tile", p.kernel.block_m,
                          p.kernel.pipeline_stages, chosen,
                          chosen.empty() ? scenario_buffers(down)
                                             ? fmt::format("set kernel.{0}_lds_buffers 1 (CK's v1 pipeline, one LDS "
                                                           "buffer) or choose a smaller kernel.{0}_tile, or leave "
                                                           "them out", down ? "down" : "gate_up")
                                             : fmt::format("choose a smaller kernel.{} or kernel.pipeline_stages, or "
                                                           "leave them auto", down ? "down_tile" : "gate_up_tile")
                                         : p.kernel.code == KernelCode::aiter
                                             ? std::string("give that row a smaller tile (AITER's kernels' "
                                                           "LDS does not shrink with kernel.pipeline_stages "
                                                           "above 1)")
                                             : std::string("give that row a smaller tile, or set a smaller "
                                                           "kernel.pipeline_stages"))
            : std::string("tdmsim's MoE kernels need more of this resource than machine ") + m.name + " has";
    // A tile the scenario's own file set: named at its key, as the loader
    // names keys (a table's row is named in the hint instead).
    std::string at;
    if (scenario_keys != nullptr && chosen.empty() && (ends("_gate_up") || ends("_fused") || down)) {
      const std::string key = down ? "kernel.down_tile" : "kernel.gate_up_tile";
      if (const auto it = scenario_keys->find(key); it != scenario_keys->end() && !it->second.file.empty()) {
        at = config::Diagnostic{it->second, key, ""}.to_string();
      }
    }
    // Otherwise the machine's key of the resource that ran out, where a file
    // set it (the tile was the heuristic's or a table's choice).
    if (at.empty() && machine_keys != nullptr) {
      const std::string key = sim::fit_problem_key(m.compute, kernel.program(0));
      if (const auto it = machine_keys->find(key); it != machine_keys->end() && !it->second.file.empty()) {
        at = config::Diagnostic{it->second, key, ""}.to_string();
      }
    }
    throw sim::NotSimulatable(fmt::format("{}kernel {} does not fit on a CU of machine {}: it {}; {}", at,
                                          kernel.name, m.name, why, hint));
  }
}

void check_sort_fits(const config::ResolvedScenario& sc, const std::vector<std::string>& paths,
                     const config::SetMap* scenario_keys) {
  if (std::find(paths.begin(), paths.end(), "software") == paths.end()) return;
  const ScenarioSpec& s = sc.scenario.spec;
  const ModelSpec& model = sc.model.spec;
  const MachineSpec& m = sc.machine.spec;
  // As the plan counts them: the GPU's routed experts (redundant copies
  // included) and the shared-expert chunks fused in (sim/programs/
  // moe_sort_programs.cpp: 4 B of LDS an expert in moe_align_block_size's
  // histogram and in our count and place kernels).
  const std::uint64_t fused = experts_per_gpu(s, model);
  const std::uint64_t local = fused - shared_slots(s, model);
  const std::uint64_t bytes = fused * 4;
  if (bytes <= m.compute.lds_per_cu.bytes) return;
  std::string at;
  if (scenario_keys != nullptr) {
    if (const auto it = scenario_keys->find("model"); it != scenario_keys->end() && !it->second.file.empty()) {
      at = config::Diagnostic{it->second, "model", ""}.to_string();
    }
  }
  throw sim::NotSimulatable(fmt::format(
      "{}the software path's sort kernel counts rows per expert in LDS, 4 B an expert: model {}'s {} experts "
      "a GPU ({}ep {}) need {}, and compute.lds_per_cu of machine {} is {}: shard the experts further with "
      "parallel.ep{}",
      at, model.name, fused, fused > local ? fmt::format("{} routed + {} shared chunks, ", local, fused - local) : "",
      s.parallel.ep, units::format(units::Bytes{bytes}), m.name, units::format(m.compute.lds_per_cu),
      m.tdm ? ", or run only the tdm path" : ""));
}

void check_paths_fit(const plan::MoePlan& p, const MachineSpec& m, const std::vector<std::string>& paths,
                     const config::SetMap* scenario_keys, const config::SetMap* machine_keys) {
  for (const auto& path : paths) {
    sim::AddressSpace as;
    check_kernels_fit(path == "tdm" ? sim::programs::tdm_moe(as, p, m) : sim::programs::software_moe(as, p, m), p, m,
                      scenario_keys, machine_keys);
  }
}

PathRun run_path(sim::Gpu& gpu, sim::AddressSpace& as, const plan::MoePlan& p,
                 const MachineSpec& m, const std::string& path,
                 const sim::programs::DescriptorBytes* descriptors) {
  const auto before = gpu.stats().snapshot();
  sim::programs::MoeKernels k = path == "tdm" ? sim::programs::tdm_moe(as, p, m, descriptors)
                                              : sim::programs::software_moe(as, p, m);
  PathRun r;
  r.path = path;
  r.stages = k.stage;
  r.descriptors = sim::programs::descriptor_bytes(k);
  check_kernels_fit(k, p, m);
  const auto floor = sim::programs::moe_floor(p, m);
  r.timings = gpu.run(k.kernels, sim::stall_limit(m, floor.seconds(), k.kernels));
  r.stats_json = gpu.stats().to_json_text(&before);
  const sim::Tick t0 = r.timings.front().launch, t1 = r.timings.back().end;
  r.total_s = sim::tick_seconds(t1 - t0);
  if (r.total_s < floor.seconds()) {
    throw std::logic_error(fmt::format(
        "internal error: predicted {:.3f} us is below the physical floor {:.3f} us "
        "({} path); please report this scenario", r.total_s * 1e6, floor.seconds() * 1e6, path));
  }
  const double cus = m.compute.total_cus();
  const double total_ps = static_cast<double>(t1 - t0);
  const double busy = gpu.stats().sum("gpu.", "busy_time", &before);
  const double matrix = gpu.stats().sum("gpu.", "matrix_busy_time", &before);
  const sim::StatRegistry& st = gpu.stats();
  const double hbm_bytes = sum_of(st, before, "hbm", "read_bytes") + sum_of(st, before, "hbm", "write_bytes");
  const double l2_hits = sum_of(st, before, "l2", "hits"), l2_miss = sum_of(st, before, "l2", "misses");
  const double mall_hits = sum_of(st, before, "mall", "hits"), mall_miss = sum_of(st, before, "mall", "misses");
  // HBM row buffers, over every pseudo-channel.
  const double row_hits = st.sum_keys("gpu.hbm.ch[", ".row_hits", &before);
  const double row_misses = st.sum_keys("gpu.hbm.ch[", ".row_misses", &before);
  // Each stage's span (routing, sort): first launch to last end.
  const auto span_of = [&r](const std::string& stage) {
    sim::Tick first = 0, last = 0;
    bool any = false;
    for (std::size_t i = 0; i < r.timings.size(); ++i) {
      if (r.stages[i] != stage) continue;
      if (!any) first = r.timings[i].launch;
      last = r.timings[i].end;
      any = true;
    }
    return any ? sim::tick_seconds(last - first) : 0.0;
  };
  r.routing_s = span_of("routing");
  r.sort_s = span_of("sort");
  if (auto* trace = gpu.trace()) {
    // A track of the layer's stages per path, beside the CUs' workgroups.
    const std::uint32_t pid = trace->process("stages " + path);
    trace->thread_name(pid, 0, path);
    for (std::size_t i = 0; i < r.timings.size(); ++i) {
      trace->slice(pid, 0, r.stages[i] + ": " + r.timings[i].name, r.timings[i].launch, r.timings[i].end);
    }
  }
  Json stages = Json::array();
  for (std::size_t i = 0; i < r.timings.size(); ++i) {
    const auto& t = r.timings[i];
    stages.push_back({{"stage", r.stages[i]}, {"kernel", t.name}, {"workgroups", t.workgroups},
                      {"time_us", sim::tick_seconds(t.end - t.launch) * 1e6},
                      {"launch_overhead_us", sim::tick_seconds(t.start - t.launch) * 1e6},
                      {"clock_mhz", t.clock_hz * 1e-6},
                      {"workgroups_per_cu", t.workgroups_per_cu()},
                      {"occupancy_limiter", t.occupancy_limiter}});
  }
  r.metrics = {
      {"path", path},
      {"stages", stages},
      {"total_us", r.total_s * 1e6},
      {"routing_us", r.routing_s * 1e6},
      {"sort_us", r.sort_s * 1e6},
      {"floor", {{"us", floor.seconds() * 1e6},
                 {"memory_us", floor.memory_s * 1e6},
                 {"compute_us", floor.compute_s * 1e6},
                 {"bound", floor.memory_s >= floor.compute_s ? "memory" : "compute"},
                 {"weight_bytes", floor.weight_bytes},
                 {"activation_bytes", floor.activation_bytes},
                 {"useful_flops", floor.flops}}},
      {"over_floor", r.total_s / floor.seconds()},
      {"achieved_tflops", floor.flops / r.total_s / 1e12},
      {"hbm_tbps", hbm_bytes / r.total_s / 1e12},
      {"hbm_bytes", hbm_bytes},
      {"cu_utilization", ratio(busy, cus * total_ps)},
      {"matrix_utilization", ratio(matrix, cus * m.compute.simds_per_cu * total_ps)},
      {"bubble_fraction", 1.0 - ratio(busy, cus * total_ps)},
      {"l2_hit_rate", ratio(l2_hits, l2_hits + l2_miss)},
      {"mall_hit_rate", m.memory.mall ? Json(ratio(mall_hits, mall_hits + mall_miss)) : Json()},
      {"hbm_row_hit_rate", ratio(row_hits, row_hits + row_misses)},
  };
  r.metrics["time_by_cause"] = causes_json(path_causes(r, m));
  return r;
}

namespace {
// Which row of the tuned table chose the kernel, or which rule did.
Json kernel_source(const plan::KernelSource& k) {
  Json j = {{"heuristic", k.heuristic}, {"chosen_by", k.chosen_by}};
  if (!k.config_file.empty()) {
    j["config"] = {{"file", k.config_file},
                   {"line", k.config_line == 0 ? Json(nullptr) : Json(k.config_line)},
                   {"matched", k.config_line != 0},
                   {"padded_token", k.padded_token},
                   {"bypassed", k.bypassed},
                   {"detail", k.detail}};
  }
  return j;
}
}  // namespace

Json layer_summary(const plan::MoePlan& p) {
  std::uint64_t rows = 0;
  for (auto r : p.layout.expert_rows) rows += r;
  return {{"tokens", p.shape.tokens}, {"rows", rows}, {"padded_rows", p.layout.padded_rows},
          // (No rows at all, a GPU whose experts got no pick: nothing padded.)
          {"padding_waste", p.layout.padded_rows > 0 ? 1.0 - ratio(double(rows), p.layout.padded_rows) : 0.0},
          {"block_m", p.layout.block_m}, {"stages", p.kernel.stages}, {"split_k", p.kernel.split_k},
          {"split_down", p.kernel.split_down},
          {"gate_up_tile", tile_name(plan::named_gate_up_tile(p.kernel))}, {"down_tile", tile_name(p.kernel.down_tile)},
          {"pipeline_stages", p.kernel.pipeline_stages}, {"raster_group", p.kernel.raster_group},
          {"kernel_reason", p.kernel.reason}, {"kernel_source", kernel_source(p.kernel.source)},
          {"load_spread", load_spread(p)}, {"capacity", capacity_summary(p.capacity)}};
}

std::vector<std::string> paths_for(const MachineSpec& m, const std::string& path) {
  if (path == "both") {
    return m.tdm ? std::vector<std::string>{"software", "tdm"} : std::vector<std::string>{"software"};
  }
  if (path == "tdm" && !m.tdm) return {};
  return {path};
}

void check_layer_memory(const config::ResolvedScenario& sc, std::uint32_t paths, bool trace) {
  const MachineSpec& m = sc.machine.spec;
  sim::MemoryEstimate e = sim::machine_memory(m);
  sim::add_layer_memory(e, sc.scenario.spec, sc.model.spec, m, std::max(1u, paths), trace);
  sim::check_memory(e, sim::memory_limit(),
                    fmt::format("scenario {} on machine {}", sc.scenario.file.string(), sc.machine.file.string()));
}

PathRun run_path_fresh(const plan::MoePlan& p, const MachineSpec& m, const std::string& path,
                       const sim::SimOptions& opts, const sim::programs::DescriptorBytes* descriptors,
                       std::string* trace_json) {
  Json j = run_in_child(fmt::format("the {} path", path), [&] {
    // The child leaves with _exit as soon as this returns, so its machine is
    // never taken apart (on mi355x that was 13 M instructions of destructors).
    sim::Gpu& gpu = *new sim::Gpu(m, opts);
    sim::AddressSpace as;
    Json out = {{"run", path_run_to_json(run_path(gpu, as, p, m, path, descriptors))}};
    if (gpu.trace() != nullptr) out["trace"] = gpu.trace()->to_json();
    return out;
  });
  if (trace_json != nullptr && j.contains("trace")) *trace_json = std::move(j["trace"].get_ref<std::string&>());
  return path_run_from_json(j.at("run"));
}

std::string combined_trace(const std::vector<std::pair<std::string, std::string>>& traces) {
  if (traces.size() == 1) return traces.front().second;
  // Each path's track groups are numbered from 1; the next path's follow on.
  Json events = Json::array();
  std::uint64_t base = 0;
  for (const auto& [path, text] : traces) {
    Json doc = Json::parse(text);
    std::uint64_t top = 0;
    for (auto& e : doc["traceEvents"]) {
      const auto pid = e["pid"].get<std::uint64_t>();
      top = std::max(top, pid);
      e["pid"] = base + pid;
      if (e["ph"] == "M" && e["name"] == "process_name") {
        const auto name = e["args"]["name"].get<std::string>();
        // The stages track already names its path.
        if (name.rfind("stages ", 0) != 0) e["args"]["name"] = path + ": " + name;
      }
      events.push_back(std::move(e));
    }
    base += top;
  }
  Json doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ns";
  return doc.dump() + "\n";
}

Json simulate_layer(const config::ResolvedScenario& sc, const std::vector<std::string>& paths) {
  const MachineSpec& m = sc.machine.spec;
  check_layer_memory(sc, static_cast<std::uint32_t>(paths.size()), false);
  if (sc.scenario.spec.parallel.ep > 1) {
    // Every GPU of the expert-parallel group (ep_layer.h).
    const EpSetup setup = ep_setup(sc);
    Json out = {{"layer", ep_layer_summary(sc, setup)}, {"paths", Json::array()}};
    for (const auto& path : paths) out["paths"].push_back(run_ep_path(sc, setup, path, sim::SimOptions{}).metrics);
    return out;
  }
  const plan::MoePlan p = plan::build_plan(sc);
  Json out = {{"layer", layer_summary(p)}, {"paths", Json::array()}};
  for (const auto& path : paths) out["paths"].push_back(run_path_fresh(p, m, path, sim::SimOptions{}).metrics);
  return out;
}

}  // namespace tdmsim::cli
