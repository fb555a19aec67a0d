// `tdmsim emulate`: scenario -> plan -> emulator -> .npy files + summary.json.
#include "apps/tdmsim/emulate_command.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <system_error>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <unistd.h>

#include "descriptors/emulator/emulator.h"
#include "descriptors/emulator/npy.h"
#include "descriptors/emulator/quantize.h"
#include "descriptors/emulator/synthetic.h"
#include "descriptors/plan/moe_plan.h"
#include "workloads/config/loader.h"
#include "workloads/config/writer.h"
#include "workloads/util/atomic_write.h"
#include "workloads/util/memory_limit.h"
#include "apps/tdmsim/capacity_json.h"
#include "apps/tdmsim/output_dir.h"
#include "apps/tdmsim/input_files.h"
#include "apps/tdmsim/serving_queue.h"

namespace tdmsim::cli {
namespace {

namespace fs = std::filesystem;
using config::Json;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Bytes the command needs at its peak: the emulator's buffers (with the
// largest block size the plan may pick unless the scenario fixes one) plus
// the router's logits.
std::uint64_t estimate_bytes(const config::ResolvedScenario& r, bool intermediates) {
  const plan::LayerShape shape = plan::layer_shape(r);
  const std::uint32_t block_m = r.scenario.spec.kernel.block_m != 0 ? r.scenario.spec.kernel.block_m : 256;
  const std::uint64_t emu = emu::emulator_bytes(shape, block_m, intermediates);
  const std::uint64_t logits = std::uint64_t{shape.tokens} * shape.experts_total * 4;
  return emu > UINT64_MAX - logits ? UINT64_MAX : emu + logits;
}

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

// Writes one array and returns its entry for summary.json.
template <class T>
Json write_array(const StagedDir& dir, const std::string& name, const std::vector<T>& data,
                 std::vector<std::uint64_t> shape, const std::string& what) {
  const std::string file = name + ".npy";
  emu::write_npy(dir.file(file), std::span<const T>(data), shape);
  double sum = 0, sq = 0;
  for (const T v : data) {
    sum += static_cast<double>(v);
    sq += static_cast<double>(v) * static_cast<double>(v);
  }
  Json j = Json::object();
  j["file"] = file;
  j["what"] = what;
  j["dtype"] = std::is_same_v<T, float> ? "float32" : "uint32";
  j["shape"] = shape;
  j["fnv1a64"] = fmt::format("{:016x}", emu::fnv1a64(bytes_of(data)));
  j["sum"] = sum;
  if constexpr (std::is_same_v<T, float>) j["l2"] = std::sqrt(sq);
  return j;
}

Json shape_json(const plan::LayerShape& s) {
  return {{"tokens", s.tokens},
          {"hidden", s.hidden},
          {"inter", s.inter},
          {"shared_inter", s.shared_inter},
          {"experts_total", s.experts_total},
          {"experts_local", s.experts_local},
          {"shared_experts", s.shared_experts},
          {"shared_chunks", s.shared_chunks},
          {"shared_slots", s.shared},
          {"top_k", s.top_k},
          {"slots", s.slots()},
          {"dtype", config::enum_name(s.dtype)},
          {"weight_dtype", config::enum_name(s.weight_dtype)},
          {"quant", config::enum_name(s.quant)},
          {"storage_dtype", config::enum_name(emu::storage_dtype(s.dtype))},
          {"activation", config::enum_name(s.activation)},
          {"activation_limit", s.activation_limit},
          {"weight_on_input", s.weight_on_input}};
}

Json kernel_json(const plan::KernelChoice& k) {
  return {{"stages", k.stages},
          {"block_m", k.block_m},
          {"gate_up_tile", config::ValueTraits<KernelTile>::text(plan::named_gate_up_tile(k))},
          {"down_tile", config::ValueTraits<KernelTile>::text(k.down_tile)},
          {"split_k", k.split_k},
          {"split_down", k.split_down},
          {"pipeline_stages", k.pipeline_stages},
          {"raster_group", k.raster_group},
          {"reason", k.reason}};
}

Json layout_json(const plan::BlockLayout& l) {
  std::uint32_t empty = 0, busiest = 0;
  for (std::uint32_t rows : l.expert_rows) {
    empty += rows == 0 ? 1 : 0;
    busiest = std::max(busiest, rows);
  }
  return {{"block_m", l.block_m},
          {"blocks", l.block_expert.size()},
          {"padded_rows", l.padded_rows},
          {"capacity", l.capacity},
          {"sentinel", l.sentinel},
          {"experts_without_rows", empty},
          {"most_rows_per_expert", busiest}};
}

Json timings_json(const emu::EmulatorTimings& t) {
  return {{"prepare", t.prepare_s},         {"stage1_gate_up", t.stage1_s},
          {"intermediate", t.intermediate_s}, {"stage2_down", t.stage2_s},
          {"combine", t.combine_s},         {"emulate_total", t.total_s},
          {"weights_tasks", t.weights_task_s}, {"gemm_tasks", t.gemm_task_s}};
}

// Everything the command writes besides summary.json; returns the "arrays" entry.
Json write_arrays(const StagedDir& dir, const plan::MoePlan& p, const std::vector<float>& x,
                  const emu::EmulatorResult& r, bool intermediates) {
  const std::uint64_t t = p.shape.tokens, h = p.shape.hidden, k = p.shape.top_k,
                      s = p.shape.slots(), rows = p.layout.padded_rows;
  const std::vector<std::uint32_t> sorted(p.layout.sorted_rows.begin(),
                                          p.layout.sorted_rows.begin() + std::ptrdiff_t(rows));
  const std::vector<float> sorted_w(p.layout.sorted_weights.begin(),
                                    p.layout.sorted_weights.begin() + std::ptrdiff_t(rows));
  Json a = Json::object();
  a["x"] = write_array(dir, "x", x, {t, h}, "layer input (fp32, before quantisation)");
  a["routing_ids"] = write_array(dir, "routing_ids", p.routing.ids, {t, k},
                                 "router top-k expert ids (global), selection order");
  a["routing_weights"] = write_array(dir, "routing_weights", p.routing.weights, {t, k},
                                     "routing weights after renormalisation and scaling");
  a["fused_experts"] = write_array(dir, "fused_experts", p.fused.expert, {t, s},
                                   "fused local expert per slot (4294967295 = remote)");
  a["fused_weights"] = write_array(dir, "fused_weights", p.fused.weight, {t, s},
                                   "weight per slot (shared slots 1)");
  a["sorted_rows"] = write_array(dir, "sorted_rows", sorted, {rows},
                                 "row id token*slots+slot per sorted position, sentinel = padding");
  a["sorted_weights"] = write_array(dir, "sorted_weights", sorted_w, {rows},
                                    "weight per sorted position, 0 for padding");
  a["block_expert"] = write_array(dir, "block_expert", p.layout.block_expert,
                                  {p.layout.block_expert.size()}, "fused expert of each block");
  a["y"] = write_array(dir, "y", r.y, {t, h}, "layer output (fp32)");
  if (intermediates) {
    a["gathered"] = write_array(dir, "gathered", r.gathered, {rows, h},
                                "GEMM input rows in sorted order, as quantised");
    a["gate_up"] = write_array(dir, "gate_up", r.gate_up, {rows, 2 * std::uint64_t{r.inter}},
                               "gate/up GEMM output in sorted order (gate | up)");
    a["intermediate"] = write_array(dir, "intermediate", r.intermediate,
                                    {rows, std::uint64_t{r.inter}},
                                    "activation output as the down GEMM reads it");
    a["expert_out"] = write_array(dir, "expert_out", r.expert_out, {t, s, h},
                                  "expert outputs after the routed weight, by (token, slot)");
  }
  return a;
}

void print_summary(const config::ResolvedScenario& sc, const plan::MoePlan& p,
                   const emu::EmulatorResult& r, const Json& y, double plan_s, double write_s,
                   const fs::path& out) {
  const auto& s = p.shape;
  fmt::print("emulated {} ({} on {})\n", sc.scenario.spec.name, sc.model.spec.name,
             sc.machine.spec.name);
  fmt::print("  layer   {} tokens, H {}, I {}, {} local experts (+{} shared slots), top-{}, {}{}\n",
             s.tokens, s.hidden, s.inter, s.experts_local, s.shared, s.top_k,
             s.weight_dtype == s.dtype
                 ? std::string(config::enum_name(s.dtype))
                 : fmt::format("{} x {}", config::enum_name(s.dtype), config::enum_name(s.weight_dtype)),
             s.quant == Quant::none ? "" : fmt::format(" {}", config::enum_name(s.quant)));
  fmt::print("  plan    {}-stage, block_m {}, {} blocks, {} padded rows ({})\n", p.kernel.stages,
             p.layout.block_m, p.layout.block_expert.size(), p.layout.padded_rows,
             p.kernel.reason);
  if (p.capacity.enabled) fmt::print("  routing {}\n", capacity_line(p.capacity));
  fmt::print("  time    plan {:.3f} s, emulate {:.3f} s (gate/up {:.3f}, down {:.3f}), write {:.3f} s\n",
             plan_s, r.timings.total_s, r.timings.stage1_s, r.timings.stage2_s, write_s);
  fmt::print("  y       l2 {:.6g}, fnv1a64 {}\n", y["l2"].get<double>(),
             y["fnv1a64"].get<std::string>());
  fmt::print("  wrote   {}\n", out.string());
}

void emulate_command(const EmulateOptions& o) {
  const auto start = Clock::now();
  const config::Loader loader(config::default_roots());
  const config::ResolvedScenario sc = loader.resolve_scenario(o.scenario);
  serving::refuse_serving(sc, "tdmsim emulate");
  const double limit = o.max_memory_gib * 1024.0 * 1024.0 * 1024.0;
  const std::uint64_t need = estimate_bytes(sc, o.intermediates);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  if (static_cast<double>(need) > limit) {
    throw BadInput(fmt::format(
        "{}: emulating {} tokens of {} needs about {:.3g} GiB, more than the {:.3g} GiB limit "
        "(reduce tokens, shard with parallel.tp / parallel.ep, or raise --max-memory)",
        o.scenario, sc.scenario.spec.tokens, sc.model.spec.name, static_cast<double>(need) / kGiB, o.max_memory_gib));
  }
  // --max-memory raises the emulator's own default, not what the host has.
  std::uint64_t host = 0;
  try {
    host = util::memory_limit();
  } catch (const util::MemoryLimitError& e) {
    throw BadInput(e.what());
  }
  if (need > host) {
    throw BadInput(fmt::format("{}: emulating {} tokens of {} needs about {:.3g} GiB, more than this host allows, "
                               "{:.3g} GiB ({}); reduce tokens, or shard with parallel.tp / parallel.ep",
                               o.scenario, sc.scenario.spec.tokens, sc.model.spec.name,
                               static_cast<double>(need) / kGiB, static_cast<double>(host) / kGiB,
                               util::memory_limit_source()));
  }
  StagedDir dir(o.output, o.force, point_files(config::ResolvedPoint{sc, {}}));

  auto t0 = Clock::now();
  const plan::MoePlan p = plan::build_plan(sc);
  const double plan_s = since(t0);
  const auto x = emu::seeded_activations(p.seed, p.shape.tokens, p.shape.hidden);
  emu::EmulatorOptions eo;
  eo.keep_intermediates = o.intermediates;
  // A progress line on a terminal (a prefill layer takes minutes on two cores).
  const bool show_progress = !o.quiet && isatty(STDERR_FILENO);
  if (show_progress) {
    eo.progress = [](const char* stage, std::size_t done, std::size_t total) {
      fmt::print(stderr, "\remulating: {} {}/{} expert tasks ({}%)   ", stage, done, total, done * 100 / total);
      std::fflush(stderr);
    };
  }
  // The progress line is cleared however emulate() returns (an error's text then starts a line).
  struct ClearLine {
    bool on;
    ~ClearLine() {
      if (on) fmt::print(stderr, "\r{:60}\r", "");
    }
  };
  emu::EmulatorResult r;
  {
    const ClearLine clear{show_progress};
    r = emu::emulate(p, x, eo);
  }

  t0 = Clock::now();
  const Json arrays = write_arrays(dir, p, x, r, o.intermediates);
  Json resolved = Json::object();
  resolved["scenario"] = config::to_json(sc.scenario.spec);
  resolved["machine"] = config::to_json(sc.machine.spec);
  resolved["model"] = config::to_json(sc.model.spec);
  util::write_file_atomic(dir.file("config.json"), resolved.dump(2) + "\n");
  const double write_s = since(t0);

  Json summary = Json::object();
  summary["command"] = "tdmsim emulate";
  summary["scenario"] = sc.scenario.spec.name;
  summary["scenario_file"] = o.scenario;
  summary["model"] = sc.model.spec.name;
  summary["machine"] = sc.machine.spec.name;
  summary["seed"] = p.seed;
  summary["shape"] = shape_json(p.shape);
  summary["kernel"] = kernel_json(p.kernel);
  summary["layout"] = layout_json(p.layout);
  summary["capacity"] = capacity_summary(p.capacity);
  summary["tile_jobs"] = {{"stage1", p.stage1.size()}, {"stage2", p.stage2.size()}};
  summary["tdm_gather_instructions"] = r.gather_instructions;
  summary["numerics"] = {
      {"gemm", "fp32 accumulation (Eigen, fixed per tile shape); see docs/emulator.md"},
      {"combine", "fp32, slots in fixed order (top-k picks, then shared)"}};
  summary["memory_estimate_bytes"] = need;
  Json timings = timings_json(r.timings);
  timings["plan"] = plan_s;
  timings["write"] = write_s;
  timings["total"] = since(start);
  summary["timings_s"] = timings;
  summary["threads"] = std::thread::hardware_concurrency();
  summary["arrays"] = arrays;
  summary["config"] = "config.json";
  util::write_file_atomic(dir.file("summary.json"), summary.dump(2) + "\n");
  dir.commit();
  if (!o.quiet) print_summary(sc, p, r, arrays["y"], plan_s, write_s, dir.target());
}

}  // namespace

int run_emulate(const EmulateOptions& options) {
  try {
    emulate_command(options);
    return kExitOk;
  } catch (const config::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitBadInput;
  } catch (const BadInput& e) {
    std::cerr << "tdmsim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "tdmsim: error: " << failure_text(e) << "\n";
    return kExitFailure;
  }
}

void add_emulate_command(CLI::App& app, CommandResult& result) {
  auto opts = std::make_shared<EmulateOptions>();
  auto* cmd = app.add_subcommand(
      "emulate", "Run a scenario's MoE layer through the functional emulator and write its "
                 "inputs, routing, sorted layout and outputs (.npy) with summary.json");
  cmd->add_option("scenario", opts->scenario, "Scenario YAML file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", opts->output, "Output folder (created; must not exist)")
      ->required();
  cmd->add_flag("-q,--quiet", opts->quiet, "Print errors only");
  cmd->add_flag("--force", opts->force, "Replace an existing output folder");
  cmd->add_flag("--intermediates", opts->intermediates,
                "Also write gathered rows, gate/up output, intermediate and expert outputs");
  // A finite number above 0: CLI11's PositiveNumber lets NaN through (every
  // comparison with it is false) and answers others with a 300-digit range.
  cmd->add_option("--max-memory", opts->max_memory_gib,
                  "Refuse layers needing more than this many GiB (default 8)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            double v = 0;
            std::size_t used = 0;
            try {
              v = std::stod(text, &used);
            } catch (const std::exception&) {
              used = 0;
            }
            if (used != text.size() || !std::isfinite(v) || v <= 0) {
              return "must be a finite number of GiB above 0, got '" + text + "'";
            }
            return {};
          },
          "GIB"));
  cmd->callback([opts, &result] { result.exit_code = run_emulate(*opts); });
}

}  // namespace tdmsim::cli
