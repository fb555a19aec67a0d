// `tdmsim run`: scenario -> plan -> kernels of each path -> SystemC machine
// model -> summary table, summary.json, stats.json, config.json, trace.json.
#include "apps/tdmsim/run_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <span>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "apps/tdmsim/attribution.h"
#include "apps/tdmsim/ep_layer.h"
#include "apps/tdmsim/ep_mpi.h"
#include "apps/tdmsim/layer_sim.h"
#include "apps/tdmsim/sweep_inputs.h"
#include "apps/tdmsim/output_dir.h"
#include "apps/tdmsim/serving_queue.h"
#include "apps/tdmsim/serving_run.h"
#include "apps/tdmsim/tenants_run.h"
#include "descriptors/format/moe_stream.h"
#include "descriptors/format/moe_stream_check.h"
#include "descriptors/plan/moe_plan.h"
#include "sim/core/json_text.h"
#include "sim/platform/gpu.h"
#include "sim/core/sim_error.h"
#include "sim/programs/moe_kernels.h"
#include "workloads/config/loader.h"
#include "workloads/config/writer.h"
#include "workloads/util/atomic_write.h"
#include "workloads/util/input_file.h"
#include "workloads/config/reader.h"

namespace tdmsim::cli {
namespace {

using config::Json;

struct RunOptions {
  std::string scenario;
  std::string machine;  // empty: the scenario's
  std::string path;     // empty: the scenario's
  std::string output;
  std::string kernel_config;  // empty: the scenario's kernel.config
  std::string descriptors;        // --descriptors: a .tdmm stream the TDM unit runs
  std::string write_descriptors;  // --write-descriptors: the stream the TDM unit ran
  std::uint32_t repeat = 1;
  std::uint32_t gpus = 0;  // --gpus: 0 = the scenario's parallel.ep
  bool one_gpu = false;    // --one-gpu: GPU 0's share of an expert-parallel layer only
  bool verbose = false;
  bool trace = false;
  bool quiet = false;
  bool force = false;
  // The host-memory estimate against this host's memory: off for `config
  // validate`, whose answer must not depend on the host it runs on.
  bool check_memory = true;
};

using serving::percentile;

void print_summary(const config::ResolvedScenario& sc, const plan::MoePlan& p,
                   const std::vector<PathRun>& runs, const Json& layer, bool verbose) {
  // "bf16", "fp8_e4m3 block_128", "bf16 x mxfp4 per_1x32": activation x weight and scales.
  const auto format_name = [](const plan::LayerShape& s) {
    std::string n(config::enum_name(s.dtype));
    if (s.weight_dtype != s.dtype) n += " x " + std::string(config::enum_name(s.weight_dtype));
    if (s.quant != Quant::none) n += " " + std::string(config::enum_name(s.quant));
    return n;
  };
  const auto& s = p.shape;
  fmt::print("{} on {}: {} token{} of {}, E={} (local {}) top-{}{}, H={} I={} {}\n",
             sc.scenario.spec.name, sc.machine.spec.name, s.tokens, s.tokens == 1 ? "" : "s", sc.model.spec.name,
             s.experts_total, s.experts_local, s.top_k,
             s.shared > 0 ? fmt::format(" +{} shared", s.shared) : std::string(), s.hidden, s.inter,
             format_name(s));
  fmt::print("kernel: {}\n", p.kernel.reason);
  if (verbose && !p.kernel.source.config_file.empty()) fmt::print("kernel.config: {}\n", p.kernel.source.detail);
  fmt::print("padding waste {:.1f}% ({} rows padded to {}); expert load max/mean {:.2f}, cv {:.2f}\n",
             100.0 * layer["padding_waste"].get<double>(), layer["rows"].get<std::uint64_t>(),
             layer["padded_rows"].get<std::uint64_t>(),
             layer["load_spread"]["max_over_mean"].get<double>(), layer["load_spread"]["cv"].get<double>());
  if (p.capacity.enabled) fmt::print("{}\n", capacity_line(p.capacity));
  fmt::print("\n");
  fmt::print("{:<9} {:<8} {:<18} {:>7} {:>11} {:>6}  {}\n", "path", "stage", "kernel", "wgs", "time us", "MHz",
             "per CU (limit)");
  for (const auto& r : runs) {
    bool first = true;
    for (const auto& st : r.metrics["stages"]) {
      const auto per_cu = st["workgroups_per_cu"].get<std::uint64_t>();
      fmt::print("{:<9} {:<8} {:<18} {:>7} {:>11.2f} {:>6.0f}  {}\n", first ? r.path : "",
                 st["stage"].get<std::string>(), st["kernel"].get<std::string>(),
                 st["workgroups"].get<std::uint64_t>(), st["time_us"].get<double>(),
                 st["clock_mhz"].get<double>(),
                 per_cu == 0 ? std::string("-")
                             : fmt::format("{} ({})", per_cu, st["occupancy_limiter"].get<std::string>()));
      first = false;
    }
    const auto& mt = r.metrics;
    fmt::print("{:<9} {:<8} {:<18} {:>7} {:>11.2f}   floor {:.2f} us ({}), {:.2f}x the floor\n", "", "total", "", "",
               mt["total_us"].get<double>(), mt["floor"]["us"].get<double>(),
               mt["floor"]["bound"].get<std::string>(), mt["over_floor"].get<double>());
    fmt::print("          routing {:.2f} us, sort {:.2f} us{}\n", mt["routing_us"].get<double>(),
               mt["sort_us"].get<double>(),
               sc.scenario.spec.routing.router_stage == RouterStage::given
                   ? " (routing.router_stage given: the router's output is in memory at the start)"
                   : r.path == "tdm" ? " (the unit routes and sorts in hardware)" : "");
    std::string mall = mt["mall_hit_rate"].is_null()
                           ? std::string()
                           : fmt::format(", MALL {:.0f}%", 100.0 * mt["mall_hit_rate"].get<double>());
    fmt::print("          {:.1f} TFLOP/s, {:.2f} TB/s HBM; CU utilization {:.0f}% (matrix {:.0f}%), "
               "bubbles {:.0f}%; hit rates L2 {:.0f}%{}, HBM row buffers {:.0f}%\n",
               mt["achieved_tflops"].get<double>(), mt["hbm_tbps"].get<double>(),
               100.0 * mt["cu_utilization"].get<double>(), 100.0 * mt["matrix_utilization"].get<double>(),
               100.0 * mt["bubble_fraction"].get<double>(), 100.0 * mt["l2_hit_rate"].get<double>(), mall,
               100.0 * mt["hbm_row_hit_rate"].get<double>());
  }
  if (runs.size() == 2) {
    fmt::print("\nTDM speedup over software: {:.2f}x\n", runs[0].total_s / runs[1].total_s);
  }
}

// --kernel-config: the table replaces the scenario's kernel.config (a path
// relative to the working directory), with the same checks the scenario key
// gets, before anything is built or written.
void apply_kernel_config_option(config::ResolvedScenario& sc, const std::string& file) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(file, ec);
  if (ec) throw BadInput(fmt::format("--kernel-config '{}': {}", file, ec.message()));
  try {
    util::check_input_file(abs, util::InputKind::kernel_config);
  } catch (const util::InputFileError& e) {
    throw BadInput(fmt::format("--kernel-config: kernel config table {}", e.what()));
  }
  sc.scenario.spec.kernel.config = abs.string();
  config::Diagnostics diags;
  config::Checker c(sc.scenario.set_at, {sc.scenario.file.string(), 1, 1}, diags);
  check(sc.scenario.spec, c);
  diags.throw_if_any();
}

// --descriptors: the stream read, decoded and checked against the scenario's
// layer before anything is simulated or written (exit 2 with the byte offset).
sim::programs::DescriptorBytes read_descriptor_stream(const std::string& file,
                                                      const config::ResolvedScenario& sc) {
  std::string raw;
  try {
    raw = util::read_input_file(file, util::InputKind::descriptor);
  } catch (const util::InputFileError& e) {
    throw BadInput(fmt::format("--descriptors {}: {}", file, e.reason()));
  }
  const auto bytes = std::as_bytes(std::span<const char>(raw.data(), raw.size()));
  const auto stream = format::decode_moe_stream(bytes);
  if (!stream) {
    throw BadInput(fmt::format("--descriptors {}: invalid descriptor stream: {}", file,
                               stream.error().to_string()));
  }
  // The routing of the scenario's seed: the layer the stream must describe.
  const plan::MoePlan p = plan::build_plan(sc);
  if (auto e = format::check_stream(stream.value(), p)) {
    throw BadInput(fmt::format("--descriptors {}: does not describe scenario {}'s layer: {}", file,
                               sc.scenario.spec.name, e->to_string()));
  }
  sim::programs::DescriptorBytes out;
  for (const auto& entry : stream.value()) out.emplace_back(entry.bytes.begin(), entry.bytes.end());
  return out;
}

// config.json: the resolved scenario, machine and model, their files, and how
// the command ran them (`run`).
Json resolved_config(const config::ResolvedScenario& sc, Json run) {
  return {{"scenario", config::to_json(sc.scenario.spec)},
          {"machine", config::to_json(sc.machine.spec)},
          {"model", config::to_json(sc.model.spec)},
          {"files", {{"scenario", sc.scenario.file.string()},
                     {"machine", sc.machine.file.string()},
                     {"model", sc.model.file.string()}}},
          {"run", std::move(run)}};
}

// --gpus N: the layer on N GPUs (parallel.ep N), checked as the scenario's
// own key is (an uneven split, a machine without links: exit 2).
void apply_gpus_option(config::ResolvedScenario& sc, std::uint32_t gpus) {
  sc.scenario.spec.parallel.ep = gpus;
  config::Diagnostics diags;
  config::Checker c(sc.scenario.set_at, {sc.scenario.file.string(), 1, 1}, diags);
  check(sc.scenario.spec, sc.model.spec, sc.machine.spec, c);
  try {
    diags.throw_if_any();
  } catch (const config::ConfigError& e) {
    throw BadInput(fmt::format("--gpus {}: {}", gpus, e.what()));
  }
}

// What a run is, checked before any file is touched or anything simulated
// (every MPI rank prepares it alike).
struct PreparedRun {
  config::ResolvedScenario sc;
  std::string path;                // as asked: software, tdm or both
  std::vector<std::string> paths;  // the paths that run
  std::string not_run;             // why `both` runs one path
  bool expert_parallel = false;
};

// The layer on parallel.ep GPUs (ep_layer.h), its paths run (`runs`): the
// summary printed and the outputs written. `mpi_ranks`: how many ranks ran it.
int write_ep_outputs(const config::ResolvedScenario& sc, const EpSetup& setup, const std::vector<EpPathRun>& runs,
                     const std::vector<std::string>& paths, const std::string& not_run, const RunOptions& o,
                     StagedDir* dir, std::chrono::steady_clock::time_point wall0, int mpi_ranks) {
  const MachineSpec& m = sc.machine.spec;
  Json summary = {{"scenario", sc.scenario.spec.name}, {"machine", m.name},
                  {"model", sc.model.spec.name}, {"seed", sc.scenario.spec.seed},
                  {"layer", ep_layer_summary(sc, setup)}, {"paths", Json::array()}};
  for (const auto& r : runs) summary["paths"].push_back(r.metrics);
  if (!not_run.empty()) summary["paths_not_run"] = {{"tdm", not_run}};
  if (runs.size() == 2) summary["tdm_speedup"] = runs[0].total_s / runs[1].total_s;
  summary["simulation_wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  if (!o.quiet) {
    const auto& L = summary["layer"];
    fmt::print("{} on {} x {}: {} tokens of {}, E={} top-{}, expert parallel over {} GPU{} ({} node{}), "
               "placement {}{}\n",
               sc.scenario.spec.name, setup.gpus, m.name, sc.scenario.spec.tokens, sc.model.spec.name,
               sc.model.spec.experts, sc.model.spec.top_k, setup.gpus, setup.gpus == 1 ? "" : "s", setup.nodes,
               setup.nodes == 1 ? "" : "s", L["ep"]["placement"].get<std::string>(),
               sc.scenario.spec.parallel.redundant_experts > 0
                   ? fmt::format(" with {} redundant experts", sc.scenario.spec.parallel.redundant_experts)
                   : std::string());
    fmt::print("expert load max/mean {:.2f}; picks per GPU max/mean {:.2f}\n",
               L["load_spread"]["max_over_mean"].get<double>(), L["ep"]["rank_picks_max_over_mean"].get<double>());
    if (mpi_ranks > 1) {
      fmt::print("simulated on {} MPI ranks (GPU g on rank g mod {}{})\n", mpi_ranks, mpi_ranks,
                 static_cast<std::uint32_t>(mpi_ranks) > setup.gpus ? "; the ranks beyond the GPUs idle" : "");
    }
    fmt::print("\n");
    for (const auto& r : runs) print_ep_path(r, setup);
    if (runs.size() == 2) fmt::print("\nTDM speedup over software: {:.2f}x\n", runs[0].total_s / runs[1].total_s);
    if (!not_run.empty()) fmt::print("\nnote: {}\n", not_run);
  }
  if (dir != nullptr) {
    util::write_file_atomic(dir->file("summary.json"), summary.dump(2) + "\n");
    // {path: {"gpu[g]": stats}}, each GPU's stats as its run wrote their text.
    std::vector<std::pair<std::string, std::string>> stats;
    for (const auto& r : runs) {
      std::vector<std::pair<std::string, std::string>> per;
      for (std::size_t g = 0; g < r.ranks.size(); ++g) per.emplace_back(fmt::format("gpu[{}]", g), r.ranks[g].run.stats_json);
      stats.emplace_back(r.path, sim::json_object_text(per, 1));
    }
    util::write_file_atomic(dir->file("stats.json"), sim::json_object_text(stats, 1) + "\n");
    Json resolved = resolved_config(sc, {{"paths", paths}, {"repeat", 1}, {"trace", o.trace}, {"gpus", setup.gpus}});
    util::write_file_atomic(dir->file("config.json"), resolved.dump(2) + "\n");
    if (o.trace) {
      std::vector<std::pair<std::string, std::string>> traces;
      for (const auto& r : runs) traces.emplace_back(r.path, r.trace);
      util::write_file_atomic(dir->file("trace.json"), combined_trace(traces));
    }
    dir->commit();
    if (!o.quiet) fmt::print("\nwrote {}\n", dir->target().string());
  }
  return kExitOk;
}

PreparedRun prepare_run(const RunOptions& o) {
  const config::Loader loader(config::default_roots());
  PreparedRun r{loader.resolve_scenario(o.scenario, o.machine, !o.kernel_config.empty()), {}, {}, {}, false};
  config::ResolvedScenario& sc = r.sc;
  if (!o.kernel_config.empty()) apply_kernel_config_option(sc, o.kernel_config);
  const bool stream = sc.scenario.spec.serving.has_value();
  if (stream && (o.gpus != 0 || o.one_gpu || o.repeat > 1 || !o.descriptors.empty() || !o.write_descriptors.empty())) {
    throw BadInput("a request stream (the scenario's serving: section) takes neither --gpus, --one-gpu, --repeat, "
                   "--descriptors nor --write-descriptors (every layer of every batch has its own routing draw; "
                   "docs/serving.md)");
  }
  if (o.one_gpu && o.gpus != 0) throw BadInput("--one-gpu and --gpus: give one of them");
  // (Else the flag would change nothing: the layer already runs on one GPU.)
  if (o.one_gpu && sc.scenario.spec.parallel.ep <= 1) {
    throw BadInput(fmt::format("--one-gpu simulates GPU 0's share of an expert-parallel layer, and {} has "
                               "parallel.ep {}: leave it out",
                               sc.scenario.file.string(), sc.scenario.spec.parallel.ep));
  }
  if (o.gpus != 0) apply_gpus_option(sc, o.gpus);
  const MachineSpec& m = sc.machine.spec;
  r.path = o.path.empty() ? std::string(config::enum_name(sc.scenario.spec.path)) : o.path;
  const std::string& path = r.path;
  // `both` is every path the machine has, whether the scenario's `path:` or
  // --path says it (as in sweeps); the path left out is said, not dropped
  // silently. An explicit `tdm` on a machine without the unit is refused.
  r.paths = paths_for(m, path);
  const std::vector<std::string>& paths = r.paths;
  if (paths.empty()) {
    // The scenario's own `path: tdm`: named at its line, as the loader names keys.
    const config::Location at =
        config::nearest_location(sc.scenario.set_at, "path", {sc.scenario.file.string(), 1, 1});
    const std::string what = fmt::format("tdm: machine {} ({}) has no tdm: section (no TDM MoE unit); "
                                         "use path software or both, or a TDM machine such as mi500x-tdm",
                                         m.name, sc.machine.file.string());
    throw BadInput(o.path.empty() ? config::Diagnostic{at, "path", what}.to_string() : "--path " + what);
  }
  if (path == "both" && paths.size() == 1) {
    r.not_run = fmt::format("machine {} ({}) has no tdm: section, so path both runs the software path only",
                            m.name, sc.machine.file.string());
  }
  r.expert_parallel = !o.one_gpu && (o.gpus != 0 || sc.scenario.spec.parallel.ep > 1);
  if (r.expert_parallel && (!o.descriptors.empty() || !o.write_descriptors.empty() || o.repeat > 1)) {
    throw BadInput("an expert-parallel run (parallel.ep > 1, or --gpus N, --gpus 1 included) takes neither "
                   "--descriptors, --write-descriptors nor --repeat (each GPU runs its own stream; one routing "
                   "draw); for the single-GPU run with them, leave --gpus out");
  }
  // Refused before anything is built or written if it would not fit in memory.
  if (o.check_memory) check_layer_memory(sc, static_cast<std::uint32_t>(paths.size()), o.trace);
  const bool tdm_runs = std::find(paths.begin(), paths.end(), "tdm") != paths.end();
  for (const auto* opt : {&o.descriptors, &o.write_descriptors}) {
    if (!opt->empty() && !tdm_runs) {
      const char* what = opt == &o.descriptors ? "--descriptors" : "--write-descriptors";
      if (!m.tdm) {
        throw BadInput(fmt::format("{} needs the TDM path, and machine {} ({}) has no tdm: section (no TDM MoE "
                                   "unit); use a TDM machine such as mi500x-tdm",
                                   what, m.name, sc.machine.file.string()));
      }
      throw BadInput(fmt::format("{} needs the TDM path, and this run has only --path {}", what, path));
    }
  }
  if (!o.descriptors.empty() && o.repeat > 1) {
    throw BadInput("--descriptors runs one layer's stream (one routing draw); give --repeat 1");
  }
  // (Each draw has its own stream: it had written the first draw's alone.)
  if (!o.write_descriptors.empty() && o.repeat > 1) {
    throw BadInput("--write-descriptors writes one layer's stream (one routing draw); give --repeat 1");
  }
  // Draw r runs with seed + r: the last must not wrap past 2^64 - 1 to 0.
  if (const std::uint64_t seed = sc.scenario.spec.seed;
      o.repeat > 1 && seed > std::numeric_limits<std::uint64_t>::max() - (o.repeat - 1)) {
    throw BadInput(fmt::format("--repeat {}: its draws take seeds {} to seed + {}, past 2^64 - 1; give the scenario "
                               "a smaller seed", o.repeat, seed, o.repeat - 1));
  }
  return r;
}

// The name --write-descriptors gives inside --output's folder (a file right
// in it), or empty where it names a file elsewhere (or either is not given).
// One of the folder's own files, or a file below a subfolder of it, is refused.
std::string descriptors_in_output(const RunOptions& o) {
  if (o.write_descriptors.empty() || o.output.empty()) return {};
  // Through symlinks too (a link to the folder names the same place); neither
  // need exist yet.
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::absolute(o.output), ec);
  if (ec) dir = fs::absolute(o.output).lexically_normal();
  fs::path file = fs::weakly_canonical(fs::absolute(o.write_descriptors), ec);
  if (ec) file = fs::absolute(o.write_descriptors).lexically_normal();
  const fs::path rel = file.lexically_relative(dir);
  if (rel.empty() || *rel.begin() == "..") return {};
  const std::string name = rel.string();
  if (rel.has_parent_path() || name == "." || name == "summary.json" || name == "stats.json" ||
      name == "config.json" || name == "trace.json" || name == kOutputMarker) {
    throw BadInput(fmt::format("--write-descriptors {}: inside --output {}, give a file name of its own right in "
                               "the folder (not summary.json, stats.json, config.json, trace.json or {}), or a "
                               "path outside it", o.write_descriptors, o.output, kOutputMarker));
  }
  return name;
}

// Every file the run reads (the scenario's, machine's and model's chains, a
// routing trace, a tuned table, --descriptors): --force must not replace an
// output folder that holds one.
std::vector<fs::path> run_inputs(const RunOptions& o, const PreparedRun& prepared) {
  std::vector<fs::path> files = point_files(config::ResolvedPoint{prepared.sc, prepared.paths});
  if (!o.descriptors.empty()) files.emplace_back(o.descriptors);
  if (!o.kernel_config.empty()) files.emplace_back(o.kernel_config);
  return files;
}

// The scenario's plan, each path's kernels checked to fit on a CU before any
// child process runs one: a tile the scenario file set is named at its key,
// else the machine key of the resource that ran out (check_kernels_fit).
plan::MoePlan check_fit_before_run(const config::ResolvedScenario& sc, const std::vector<std::string>& paths) {
  check_sort_fits(sc, paths, &sc.scenario.set_at);
  plan::MoePlan p = plan::build_plan(sc);
  check_paths_fit(p, sc.machine.spec, paths, &sc.scenario.set_at, &sc.machine.set_at);
  return p;
}

// One process: every GPU of an expert-parallel layer in a child of this one.
int run_local(const RunOptions& o) {
  const auto wall0 = std::chrono::steady_clock::now();
  PreparedRun prepared = prepare_run(o);
  config::ResolvedScenario& sc = prepared.sc;
  // The first draw's plan, checked (the repeat loop below uses it for draw 0).
  std::optional<plan::MoePlan> checked;
  if (!prepared.expert_parallel && !sc.scenario.spec.serving.has_value()) {
    checked = check_fit_before_run(sc, prepared.paths);
    // One GPU's share with no routed row (--one-gpu) runs no expert stage: no
    // descriptor, and an empty file is no stream --descriptors could read.
    if (!o.write_descriptors.empty() && checked->layout.block_expert.empty()) {
      throw BadInput("--write-descriptors: this layer has no routed row (this GPU's experts got no pick), so its TDM "
                     "unit runs no descriptor: nothing to write");
    }
  }
  const MachineSpec& m = sc.machine.spec;
  const std::vector<std::string>& paths = prepared.paths;
  const std::string& not_run = prepared.not_run;
  // --write-descriptors inside --output's folder goes into that folder as it
  // is staged (written with the rest, or not at all); anywhere else, a file
  // of its own.
  const std::string in_output = descriptors_in_output(o);
  if (!o.write_descriptors.empty() && in_output.empty()) {
    check_output_file(o.write_descriptors, o.force, run_inputs(o, prepared));
  }
  sim::programs::DescriptorBytes given;
  if (!o.descriptors.empty()) given = read_descriptor_stream(o.descriptors, sc);
  std::unique_ptr<StagedDir> dir;
  if (!o.output.empty()) dir = std::make_unique<StagedDir>(o.output, o.force, run_inputs(o, prepared));
  if (prepared.expert_parallel) {
    const EpSetup setup = ep_setup(sc);
    sim::SimOptions opts;
    opts.trace = o.trace;
    std::vector<EpPathRun> runs;
    for (const auto& p : paths) runs.push_back(run_ep_path(sc, setup, p, opts));
    return write_ep_outputs(sc, setup, runs, paths, not_run, o, dir.get(), wall0, 1);
  }
  if (sc.scenario.spec.serving.has_value()) {
    return run_serving(sc, paths, not_run, {o.trace, o.quiet},
                       resolved_config(sc, {{"paths", paths}, {"trace", o.trace}}), dir.get(), wall0);
  }

  sim::SimOptions opts;
  opts.trace = o.trace;
  std::string current_path;  // for the progress line
  const bool show_progress = !o.quiet && isatty(STDERR_FILENO);
  if (show_progress) {
    // One self-overwriting line on a terminal; nothing when piped or --quiet.
    opts.progress = [&current_path](const std::string& kernel, std::uint32_t done, std::uint32_t total) {
      fmt::print(stderr, "\r{} {}: {}/{} workgroups ({:.0f}%)   ", current_path, kernel, done, total,
                 100.0 * done / total);
    };
  }
  // Every path of every repeat runs on a fresh machine in a child process
  // (run_path_fresh), so `both` and `--repeat` give each run the result it
  // gives on its own; the trace is the first repeat's.
  std::vector<std::pair<std::string, std::string>> traces;
  const std::uint64_t seed0 = sc.scenario.spec.seed;
  std::vector<PathRun> detail;
  std::vector<std::vector<double>> totals(paths.size());
  plan::MoePlan first_plan;
  for (std::uint32_t rep = 0; rep < o.repeat; ++rep) {
    sc.scenario.spec.seed = seed0 + rep;  // fresh routing draws per repeat
    plan::MoePlan p = rep == 0 && checked ? std::move(*checked) : plan::build_plan(sc);
    for (std::size_t i = 0; i < paths.size(); ++i) {
      current_path = o.repeat > 1 ? fmt::format("[{}/{}] {}", rep + 1, o.repeat, paths[i]) : paths[i];
      std::string trace;
      sim::SimOptions run_opts = opts;
      run_opts.trace = o.trace && rep == 0;
      PathRun r = run_path_fresh(p, m, paths[i], run_opts,
                                 paths[i] == "tdm" && !o.descriptors.empty() ? &given : nullptr,
                                 run_opts.trace ? &trace : nullptr);
      if (run_opts.trace) traces.emplace_back(paths[i], std::move(trace));
      totals[i].push_back(r.total_s * 1e6);
      if (rep == 0) detail.push_back(std::move(r));
    }
    if (rep == 0) first_plan = std::move(p);
  }
  if (show_progress) fmt::print(stderr, "\r{:80}\r", "");  // clear the progress line
  sc.scenario.spec.seed = seed0;
  const plan::MoePlan& p = first_plan;

  const Json layer = layer_summary(p);
  Json summary = {{"scenario", sc.scenario.spec.name}, {"machine", m.name},
                  {"model", sc.model.spec.name}, {"seed", seed0}, {"layer", layer},
                  {"paths", Json::array()}};
  for (const auto& r : detail) summary["paths"].push_back(r.metrics);
  if (!not_run.empty()) summary["paths_not_run"] = {{"tdm", not_run}};
  if (detail.size() == 2) {
    summary["tdm_speedup"] = detail[0].total_s / detail[1].total_s;
    summary["tdm_vs_software"] = tdm_vs_software(path_causes(detail[0], m), path_causes(detail[1], m));
  }
  if (o.repeat > 1) {
    Json reps = Json::object();
    for (std::size_t i = 0; i < paths.size(); ++i) {
      const auto& v = totals[i];
      const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
      reps[paths[i]] = {{"repeats", v.size()}, {"p50_us", percentile(v, 0.5)},
                        {"p99_us", percentile(v, 0.99)}, {"mean_us", mean},
                        {"min_us", *std::min_element(v.begin(), v.end())},
                        {"max_us", *std::max_element(v.begin(), v.end())}, {"total_us", v}};
    }
    summary["repeats"] = reps;
  }
  summary["simulation_wall_s"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

  if (!o.quiet) {
    print_summary(sc, p, detail, layer, o.verbose);
    if (summary.contains("tdm_vs_software")) {
      fmt::print("\n");
      print_tdm_vs_software(summary["tdm_vs_software"]);
    }
    if (!not_run.empty()) fmt::print("\nnote: {}\n", not_run);
    if (o.repeat > 1) {
      fmt::print("\nover {} repeats with fresh routing draws (seeds {}..{}):\n", o.repeat, seed0,
                 seed0 + o.repeat - 1);
      for (const auto& [name, v] : summary["repeats"].items()) {
        fmt::print("  {:<9} p50 {:.2f} us, p99 {:.2f} us (min {:.2f}, max {:.2f})\n", name,
                   v["p50_us"].get<double>(), v["p99_us"].get<double>(), v["min_us"].get<double>(),
                   v["max_us"].get<double>());
      }
    }
  }
  if (!o.write_descriptors.empty()) {
    // The stream the TDM unit fetched (one draw: --repeat 1): a .tdmm file
    // that --descriptors reads back.
    std::string bytes;
    for (const auto& r : detail) {
      for (const auto& d : r.descriptors) bytes.append(reinterpret_cast<const char*>(d.data()), d.size());
    }
    if (in_output.empty()) {
      write_output_file(o.write_descriptors, bytes);
    } else {
      util::write_file_atomic(dir->file(in_output), bytes);
    }
    if (!o.quiet) fmt::print("\nwrote {} ({} bytes)\n", o.write_descriptors, bytes.size());
  }
  if (dir) {
    util::write_file_atomic(dir->file("summary.json"), summary.dump(2) + "\n");
    // {path: stats}, each path's stats as its run wrote their text.
    std::vector<std::pair<std::string, std::string>> stats;
    for (auto& r : detail) stats.emplace_back(r.path, std::move(r.stats_json));  // (not read after this)
    util::write_file_atomic(dir->file("stats.json"), sim::json_object_text(stats, 1) + "\n");
    Json resolved = resolved_config(sc, {{"paths", paths}, {"repeat", o.repeat}, {"trace", o.trace}});
    if (!o.descriptors.empty()) resolved["files"]["descriptors"] = std::filesystem::absolute(o.descriptors).string();
    util::write_file_atomic(dir->file("config.json"), resolved.dump(2) + "\n");
    if (!traces.empty()) util::write_file_atomic(dir->file("trace.json"), combined_trace(traces));
    dir->commit();
    if (!o.quiet) fmt::print("\nwrote {}\n", dir->target().string());
  }
  return kExitOk;
}

// Several MPI ranks (ep_mpi.h): an expert-parallel layer's GPUs spread over
// them, rank 0 writing everything; any other run on rank 0 alone while the
// others wait. Each step ends with every rank agreeing on its outcome.
int run_on_ranks(const RunOptions& o, const MpiSession& mpi) {
  const auto wall0 = std::chrono::steady_clock::now();
  const bool root = mpi.rank() == 0;
  std::optional<PreparedRun> prepared;
  std::optional<EpSetup> setup;
  std::unique_ptr<StagedDir> dir;  // rank 0's
  // Every rank prepares the run from the same inputs (a bad one: the same
  // error on each, printed once).
  int code = settle(mpi, run_guarded([&] {
    prepared = prepare_run(o);
    if (prepared->expert_parallel) {
      setup = ep_setup(prepared->sc);
      if (root && !o.output.empty()) dir = std::make_unique<StagedDir>(o.output, o.force, run_inputs(o, *prepared));
    }
    return std::string();
  }));
  if (code != kExitOk) return code;
  if (!prepared->expert_parallel) {
    RankOutcome alone;
    if (root) {
      int rc = kExitOk;
      alone = run_guarded([&] {
        rc = run_local(o);
        return std::string();
      });
      if (alone.code == kExitOk) alone.code = rc;
    }
    return settle(mpi, alone);
  }
  std::vector<std::string> payloads;
  code = simulate_ep_gpus_on_ranks(mpi, prepared->sc, *setup, prepared->paths, &payloads);
  if (code != kExitOk) return code;
  RankOutcome written;
  if (root) {
    written = run_guarded([&] {
      sim::SimOptions opts;
      opts.trace = o.trace;
      const auto runs = ep_paths_from_ranks(prepared->sc, *setup, prepared->paths, payloads, opts);
      write_ep_outputs(prepared->sc, *setup, runs, prepared->paths, prepared->not_run, o, dir.get(), wall0,
                       mpi.size());
      return std::string();
    });
  }
  return settle(mpi, written);
}

// A tenants file (kind: tenants): its own run (tenants_run.h), with the
// options that apply to it.
int run_tenants_command(const RunOptions& o, const MpiSession& mpi) {
  if (mpi.size() > 1) {
    // Every rank reaches this; one message is enough.
    if (mpi.rank() == 0) std::cerr << "tdmsim: error: a tenants file runs in one process; start it without mpirun\n";
    return kExitBadInput;
  }
  const std::vector<std::pair<bool, const char*>> refused = {
      {!o.machine.empty(), "--machine (the tenants file's machine: key names the partitioned GPU)"},
      {!o.kernel_config.empty(), "--kernel-config"},
      {!o.descriptors.empty(), "--descriptors"},
      {!o.write_descriptors.empty(), "--write-descriptors"},
      {o.repeat > 1, "--repeat"},
      {o.gpus != 0, "--gpus"},
      {o.one_gpu, "--one-gpu"}};
  for (const auto& [given, what] : refused) {
    if (given) {
      throw BadInput(fmt::format("{} is a tenants file (kind: tenants), which takes --path, --output, --trace, "
                                 "--quiet and --force only; not {}", o.scenario, what));
    }
  }
  return run_tenants({o.scenario, o.path, o.output, o.trace, o.quiet, o.force});
}

int run_command(const RunOptions& o) {
  // The trace is written into the output folder: without one it would be
  // recorded (memory, time) and dropped.
  if (o.trace && o.output.empty()) throw BadInput("--trace needs --output: the trace is written there as trace.json");
  const MpiSession mpi;  // active when started by mpirun
  if (is_tenants_file(o.scenario)) return run_tenants_command(o, mpi);
  if (mpi.size() > 1) return run_on_ranks(o, mpi);
  return run_local(o);
}

}  // namespace

void check_runnable_file(const std::string& file) {
  try {
    const config::Loader loader(config::default_roots());
    if (loader.kind_of(file) == config::SpecKind::sweep) {
      // As `tdmsim sweep --dry-run` checks it: every point resolved and runnable.
      const auto sweep = loader.resolve_sweep(file);
      check_all_points(loader, sweep, config::expand_points(sweep.sweep.spec),
                       [](const config::SweepPoint&, const config::ResolvedPoint&) {});
      return;
    }
    check_scenario_runs(file);
  } catch (const config::ConfigError&) {
    throw;
  } catch (const BadInput&) {
    throw;
  } catch (...) {
    const sim::Failure f = sim::classify(std::current_exception());
    if (!f.bad_input) throw;
    throw BadInput(f.message);
  }
}

void check_scenario_runs(const std::string& file) {
  if (is_tenants_file(file)) return;  // its scenarios are the tenants' own files
  RunOptions o;
  o.scenario = file;
  o.check_memory = false;
  const PreparedRun prepared = prepare_run(o);
  const config::ResolvedScenario& sc = prepared.sc;
  if (prepared.expert_parallel) {
    (void)ep_setup(sc);
    return;
  }
  if (sc.scenario.spec.serving.has_value()) return;  // its batches are planned as they arrive
  check_fit_before_run(sc, prepared.paths);
}

void add_run_command(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run", "Simulate one MoE layer (a scenario) on the timing model: today's software "
             "fused-MoE kernels, the TDM MoE descriptor unit, or both");
  cmd->add_option("scenario", o->scenario, "Scenario YAML file")->required();
  cmd->add_option("-m,--machine", o->machine, "machine name or YAML file (default: the scenario's)");
  cmd->add_option("--path", o->path, "software, tdm or both (default: the scenario's path)")
      ->check(CLI::IsMember({"software", "tdm", "both"}));
  cmd->add_option("-o,--output", o->output,
                  "write summary.json, stats.json, config.json (and trace.json) to this new folder");
  cmd->add_option("--repeat", o->repeat, "runs with fresh routing draws (seed, seed+1, ...): p50/p99")
      ->check(CLI::Range(1u, 100000u));
  cmd->add_option("--gpus", o->gpus,
                  "run the layer on this many GPUs, expert parallel (replaces the scenario's parallel.ep): "
                  "every GPU simulated, the dispatch and combine all-to-all on the machine's interconnect "
                  "(docs/expert-parallel.md). Alone, the GPUs run one after another in child processes; "
                  "under `mpirun -np R` (one machine or several nodes) GPU g runs on rank g mod R and rank 0 "
                  "writes the outputs, byte for byte those of the single-process run")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_flag("--one-gpu", o->one_gpu,
                "of an expert-parallel layer (parallel.ep > 1), simulate GPU 0 alone: its experts with the "
                "picks routed to them, no all-to-all (what tdmsim emulate and gpu-case build; how a "
                "one-GPU measurement of such a layer is compared)");
  cmd->add_option("--kernel-config", o->kernel_config,
                  "tuned kernel table in AITER's CSV columns: the layer's row fixes block_m, tiles, "
                  "split_k and stages (replaces the scenario's kernel.config; docs/moe-plan.md)");
  cmd->add_option("--descriptors", o->descriptors,
                  "the TDM unit runs this MoE descriptor stream (.tdmm: descriptors back to back, "
                  "as --write-descriptors writes) instead of the ones built from the plan; the "
                  "scenario gives shapes and data, and a descriptor that disagrees with it is "
                  "refused with its byte offset (docs/moe-timing.md)");
  cmd->add_option("--write-descriptors", o->write_descriptors,
                  "write the MoE descriptor stream the TDM unit ran to this .tdmm file (one draw: --repeat 1)");
  cmd->add_flag("--trace", o->trace, "record a Perfetto/Chrome trace (trace.json)");
  cmd->add_flag("-v,--verbose", o->verbose, "also print the kernel.config lookup: the key and why rows did not match");
  cmd->add_flag("-q,--quiet", o->quiet, "print nothing on success");
  cmd->add_flag("--force", o->force, "replace an existing output folder");
  // (Bad input propagates to main, which says it and exits 2.)
  cmd->callback([o, &result] { result.exit_code = run_command(*o); });
}

}  // namespace tdmsim::cli
