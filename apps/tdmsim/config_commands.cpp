// `tdmsim config ...`: validate, show and document configuration files.
#include "apps/tdmsim/config_commands.h"

#include <charconv>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "apps/tdmsim/input_files.h"
#include "apps/tdmsim/output_dir.h"
#include "descriptors/plan/kernel_config.h"
#include "isa/matrix_table.h"
#include "kernels/host/case_from_plan.h"
#include "workloads/specs/aiter_names.h"
#include "workloads/config/loader.h"
#include "workloads/config/reference.h"
#include "workloads/config/sweep_points.h"
#include "workloads/config/writer.h"
#include "workloads/config/yaml_parse.h"
#include "workloads/util/atomic_write.h"
#include "workloads/util/input_file.h"

namespace tdmsim::cli {
namespace {

using config::Json;
using config::Loader;
using config::SpecKind;
namespace fs = std::filesystem;

// Where each key of a spec got its value: "file:line".
Json origins(const config::SetMap& set_at) {
  Json j = Json::object();
  for (const auto& [key, loc] : set_at) j[key] = loc.file + ":" + std::to_string(loc.line);
  return j;
}

// Figures that follow from a machine's parameters (not parameters themselves).
Json derived(const MachineSpec& m) {
  Json d = Json::object();
  d["total_cus"] = m.compute.total_cus();
  for (DType t : {DType::bf16, DType::fp8_e4m3, DType::mxfp4}) {
    const double peak = isa::peak_matrix_flops(m, t);
    if (peak > 0) {
      d[fmt::format("peak_matrix_{}", config::enum_name(t))] =
          fmt::format("{:.1f} TFLOP/s", peak / 1e12);
    }
  }
  d["l2_total"] = units::format(units::Bytes{m.memory.l2.size_per_die.bytes * m.compute.dies});
  d["hbm_bandwidth_per_stack"] = fmt::format(
      "{:.1f} GB/s", static_cast<double>(m.memory.hbm.bandwidth.bytes_per_s) / 1e9 /
                         m.memory.hbm.stacks);
  return d;
}

template <class S>
Json with_origin(const config::Loaded<S>& l, bool show_origin) {
  Json j = config::to_json(l.spec);
  if (show_origin) j["_origin"] = origins(l.set_at);
  return j;
}

// `file` resolved as `config show` prints it; with `inputs`, every file it was
// read from goes there too (what `--output` must not overwrite), from the
// same one load.
Json resolve(const Loader& loader, const fs::path& file, bool show_origin, std::vector<fs::path>* inputs = nullptr) {
  const auto read = [inputs](const std::vector<fs::path>& files) {
    if (inputs != nullptr) inputs->insert(inputs->end(), files.begin(), files.end());
  };
  switch (loader.kind_of(file)) {
    case SpecKind::machine: {
      auto m = loader.machine(file);
      read(machine_files(m));
      Json j = with_origin(m, show_origin);
      j["_derived"] = derived(m.spec);
      return j;
    }
    case SpecKind::model: {
      auto m = loader.model(file);
      read(m.chain);
      return with_origin(m, show_origin);
    }
    case SpecKind::kernel_profile: {
      auto k = loader.kernel_profile(file);
      read(k.chain);
      return with_origin(k, show_origin);
    }
    case SpecKind::scenario: {
      const config::ResolvedPoint point{loader.resolve_scenario(file), {}};
      const auto& r = point.scenario;
      read(point_files(point));
      Json j = Json::object();
      j["scenario"] = with_origin(r.scenario, show_origin);
      j["machine"] = with_origin(r.machine, show_origin);
      j["machine"]["_derived"] = derived(r.machine.spec);
      j["model"] = with_origin(r.model, show_origin);
      j["_derived"] = {
          {"expert_weights_per_gpu",
           fmt::format("{:.2f} GB", static_cast<double>(expert_weight_bytes(r.scenario.spec,
                                                                            r.model.spec)) /
                                        1e9)}};
      return j;
    }
    case SpecKind::tenants: {
      auto r = loader.resolve_tenants(file);
      read(r.tenants.chain);
      read(machine_files(r.machine));
      for (const auto& sc : r.scenarios) {
        read(point_files(config::ResolvedPoint{sc, {}}));
      }
      Json j = Json::object();
      j["tenants"] = with_origin(r.tenants, show_origin);
      j["machine"] = with_origin(r.machine, show_origin);
      j["scenarios"] = Json::array();
      for (const auto& sc : r.scenarios) {
        j["scenarios"].push_back({{"scenario", with_origin(sc.scenario, show_origin)},
                                  {"model", with_origin(sc.model, show_origin)}});
      }
      return j;
    }
    case SpecKind::sweep: {
      auto r = loader.resolve_sweep(file);
      read(r.sweep.chain);
      read(point_files(config::ResolvedPoint{r.base, {}}));
      // Every point must resolve too (a combination of valid values can be
      // invalid); each point's files (a machine or model axis's) are read.
      const auto points = config::expand_points(r.sweep.spec);
      std::size_t rows = 0;
      config::resolve_all_points(loader, r, points, [&](const auto&, const config::ResolvedPoint& p) {
        rows += p.paths.size();
        read(point_files(p));
      });
      Json j = Json::object();
      j["sweep"] = with_origin(r.sweep, show_origin);
      j["points"] = points.size();
      j["rows"] = rows;
      j["scenario"] = with_origin(r.base.scenario, show_origin);
      j["machine"] = with_origin(r.base.machine, show_origin);
      j["model"] = with_origin(r.base.model, show_origin);
      return j;
    }
  }
  return {};
}

// The "Formats" section: every (dtype, weight_dtype, quant) a scenario may
// ask for, from the table the checks use (workloads/specs/quant_formats.cpp),
// with AITER's names and what runs it.
std::string formats_markdown() {
  std::string md =
      "## Formats\n\n"
      "`dtype` is the activation dtype (x, the intermediate, the GEMM A operand), "
      "`weight_dtype` the expert weights' (`same`: as `dtype`), `quant` the scale scheme of "
      "the quantised operand(s): `per_token` is per row of activations and per output channel "
      "of weights; `block_128` 1x128 on activations and 128x128 on weights; `per_1x32` one OCP "
      "MX E8M0 scale per 32 elements along K (of activations only when they are fp8/fp4); "
      "`group_32` / `group_128` one fp32 scale per 32 / 128 INT4 weights along K. `mxfp4` is "
      "the fp4 E2M1 element (always with its MX scales), `fp8_e4m3` OCP E4M3FN (MI355X, "
      "Hopper), `fp8_e4m3_fnuz` the MI300X variant. Every combination below is bit-exact in "
      "the emulator (docs/emulator.md, \"Numerics\") and timed by the timing model "
      "(weights streamed at their dtype plus scales, the matrix rate of the dtype the kernels "
      "multiply, in-register dequantisation of mixed pairs; docs/moe-timing.md, "
      "\"Formats\"); any other combination is refused naming the key to change. The GPU "
      "case (`tdmsim gpu-case`) runs only what the project's HIP kernels run; the others "
      "are refused with exit code 2.\n\n"
      "| format | `dtype` | `weight_dtype` | `quant` | AITER q_dtype_a / q_dtype_w / q_type "
      "| emulator | timing model | GPU case |\n|---|---|---|---|---|---|---|---|\n";
  for (const SupportedFormat& s : supported_formats()) {
    const OperandFormats& f = s.formats;
    const auto aiter = aiter_names(f);
    md += fmt::format("| {} | {} | {} | {} | {} | yes | yes | {} |\n", s.label,
                      config::enum_name(f.activation),
                      f.weight == f.activation ? "same" : config::enum_name(f.weight),
                      config::enum_name(f.quant),
                      aiter ? aiter->q_dtype_a + " / " + aiter->q_dtype_w + " / " + aiter->q_type
                            : std::string("(none)"),
                      gpu::gpu_kernels_run(f) ? "runs" : "refused");
  }
  return md + "\n";
}

bool writes_file(const std::string& output) { return !output.empty() && output != "-"; }

void emit(const std::string& text, const std::string& output) {
  if (!writes_file(output)) std::cout << text;
  else write_output_file(output, text);
}

}  // namespace

std::string resolved_json(const std::string& file, bool show_origin) {
  const Loader loader(config::default_roots());
  return resolve(loader, file, show_origin).dump();
}

std::string reference_document() {
  std::string md =
      "# tdmsim YAML reference\n\n"
      "Generated by `tdmsim config reference` from the parameter declarations in "
      "`workloads/specs/*.h`; a test fails if this file differs from the generated text. "
      "Do not edit by hand: change the declaration and run "
      "`tdmsim config reference --output docs/yaml-reference.md --force`.\n\n"
      "Common rules:\n\n"
      "- Quantities need a unit: frequencies `2100MHz`, `2.1GHz`; sizes `64KiB`, `256MiB`, "
      "`192GB` (KB/MB/GB are decimal, KiB/MiB/GiB binary); bandwidths `5.3TB/s`; "
      "times `1.5us`, `120ns`. Values are exact: `2.1GHz` is 2100000000 Hz. Integers, numbers "
      "and booleans are written without quotes: YAML reads `\"4\"` (or `!!str 4`) as text, which "
      "such a key refuses.\n"
      "- `base: other.yaml` (path relative to this file) reads that file first; this file "
      "then overrides only the keys it names. `~` removes an optional section, and unsets an "
      "optional string key (a file, a description). A path a key names (a scenario's "
      "`machine:` or `model:` file, `kernel.config`, `routing.trace`) is relative to the file "
      "that sets the key, a base file's own keys to the base file; a name (`machine: mi300x`) is "
      "looked up in the workloads folder of that file first, then in the shipped one.\n"
      "- A string key's value is never empty (`\"\"` would read as the key left out): "
      "leave the key out or write `~`. `kernel.config` alone takes `\"\"` for no table, as a "
      "sweep axis value beside a base scenario's table. Command-line options refuse empty "
      "values likewise.\n"
      "- `kind: machine|model|scenario|sweep|kernel_profile` is optional inside machines/, "
      "models/, scenarios/, sweeps/ and kernel-profiles/ folders; elsewhere `config validate` and "
      "`config show` need it to tell what a file is, while `run`, `emulate`, `gpu-case` and `sweep` "
      "read the file they are given as the kind they take (a scenario, a sweep), and a `base:` "
      "file as its child's kind. `kind: tenants` is always required (such files sit among the "
      "scenarios).\n"
      "- Unknown keys, missing required keys, values out of range and wrong units are "
      "errors naming file:line:column and the key path.\n"
      "- A key that the file's other keys make inert is an error too: a routing source's "
      "parameter under another `routing.source` (`zipf_s` on uniform routing), `routing.overflow` "
      "with `capacity_factor: none`, a machine's L1 shape (`l1_ways`, `l1_line`, `l1_hit_latency`, "
      "`l1_bytes_per_clock`) with `compute.l1_per_cu: 0`. An overlay that switches the governing key keeps its "
      "base's keys (the other source's, the L1's); one that restates a value under which the base's key was "
      "inert already does not, and that key is named in the base. A sweep axis over such a key is refused where the key that governs "
      "it is on no axis, and where no point of the sweep makes it apply (`hot_fraction` against "
      "`routing.source: [uniform, zipf]`).\n";
  // The input limits, from their declarations (workloads/util/input_file.h,
  // workloads/config/yaml_parse.h).
  md += fmt::format(
      "- A file is a regular file of at most {} MiB holding one YAML document of UTF-8 text, "
      "with YAML's core tags only (`!!str`, `!!int`, ...), at most {} levels of nesting and "
      "at most {} values with its aliases expanded.\n\n",
      util::kMaxYamlBytes >> 20, config::kMaxYamlDepth, config::kMaxYamlNodes);
  // A machine's `kernels` keys are its kernel profile's: listed once, in the
  // profile's table, which the machine's `kernels` row points to.
  md += config::reference_markdown(
      "Machine (`workloads/machines/*.yaml`)",
      "One GPU: compute units, caches, HBM, fabric, launch overheads and the optional TDM MoE "
      "descriptor unit.",
      config::fold_section(
          config::reference_rows<MachineSpec>(), "kernels",
          "the software fused-MoE kernels this machine runs: its kernel profile's values, read "
          "from the profile `kernel_profile` names. The keys are the profile's, listed once in "
          "\"Kernel profile\" below (a profile's `KEY` is the machine's `kernels.KEY`); keys "
          "given here override the profile's (a variant's overlay, a fit candidate)"));
  md += config::reference_markdown(
      "Kernel profile (`workloads/kernel-profiles/*.yaml`)",
      "What a machine family's software fused-MoE kernels cost: the knobs and the instructions "
      "each construct of the kernels issues, each value with its source as a comment "
      "(docs/calibration.md \"Kernel profiles\"). A machine names its profile with "
      "`kernel_profile:` (absent: the profile named after its `isa`); the loader reads it into "
      "the machine's `kernels` section: the key `KEY` below is the machine's `kernels.KEY` "
      "(for example `kernels.matrix_efficiency`, `kernels.nvidia.sort.count_ops`), which a "
      "machine file may override. A profile may "
      "`base:` another (the family profiles base `common.yaml`, the estimates they share).",
      config::reference_rows<KernelProfileSpec>());
  md += config::reference_markdown("Model (`workloads/models/*.yaml`)",
                                   "The MoE layer shape and gating of one model.",
                                   config::reference_rows<ModelSpec>());
  md += config::reference_markdown(
      "Scenario (`workloads/scenarios/*.yaml`)",
      "One MoE layer run: machine, model, tokens, dtype, routing and kernel configuration.",
      config::reference_rows<ScenarioSpec>());
  md += config::reference_markdown(
      "Sweep (`workloads/sweeps/*.yaml`)",
      "A base scenario and axes to vary, run by `tdmsim sweep` (docs/sweeps.md). Axis keys are "
      "paths such as `machine.memory.hbm.bandwidth`, `machine.tdm.slot_length`, `model.top_k` or "
      "`scenario.tokens`, or `path` (software, tdm, both), `machine` or `model` (a whole machine or "
      "model by name or path); values are lists or `range(A, B, xF)` / `range(A, B, +S)` "
      "(inclusive of B when reached).",
      config::reference_rows<SweepSpec>());
  md += config::reference_markdown(
      "Tenants (`kind: tenants`, among `workloads/scenarios/*.yaml`)",
      "Several scenarios at once on the compute partitions of one partitioned GPU (the machine's "
      "`partition:` section), run by `tdmsim run`: each tenant's time alone on its partition and "
      "together with the others (shared HBM and MALL), and the interference figure, per path "
      "(docs/partitions.md \"Tenants\"). Not a sweep's base scenario.",
      config::reference_rows<TenantsSpec>());
  md += formats_markdown();
  return md;
}

void add_config_commands(CLI::App& app, CommandResult& result, RunnableCheck runnable) {
  auto* cfg = app.add_subcommand("config", "Validate, show and document configuration files");
  cfg->require_subcommand(1);

  struct ValidateOpts {
    std::vector<std::string> files;
    bool quiet = false;
  };
  auto vopts = std::make_shared<ValidateOpts>();
  auto* validate = cfg->add_subcommand(
      "validate", "Check machine, model, scenario and sweep files: what they reference, and what `run` "
                  "(`sweep --dry-run`) checks before simulating");
  validate->add_option("files", vopts->files, "YAML files")->required()->check(CLI::ExistingFile);
  validate->add_flag("-q,--quiet", vopts->quiet, "Print errors only");
  validate->callback([vopts, &result, runnable] {
    const Loader loader(config::default_roots());
    int bad = 0, failed = 0;
    for (const auto& f : vopts->files) {
      try {
        const auto kind = loader.kind_of(f);
        (void)resolve(loader, f, false);
        if (runnable && (kind == SpecKind::scenario || kind == SpecKind::sweep || kind == SpecKind::tenants)) {
          runnable(f);
        }
        if (!vopts->quiet) fmt::print("ok      {} ({})\n", f, config::kind_name(kind));
      } catch (const config::ConfigError& e) {
        ++bad;
        std::cerr << e.what() << "\n";
      } catch (const BadInput& e) {
        ++bad;
        // Most messages name the file already (at a key); others get it.
        const std::string what = e.what();
        std::cerr << (what.find(f) == std::string::npos ? f + ": " : std::string()) << what << "\n";
      } catch (const std::exception& e) {
        // Not bad input (an internal error): said, and the other files still checked.
        ++failed;
        std::cerr << "tdmsim: error: " << f << ": " << e.what() << "\n";
      }
    }
    if (!vopts->quiet) {
      fmt::print(stderr, "{} of {} file(s) valid\n", vopts->files.size() - bad - failed, vopts->files.size());
    }
    result.exit_code = failed > 0 ? kExitFailure : bad > 0 ? kExitBadInput : kExitOk;
  });

  struct ShowOpts {
    std::string file;
    std::string format = "yaml";
    std::string output;
    bool origin = false;
    bool force = false;
  };
  auto sopts = std::make_shared<ShowOpts>();
  auto* show = cfg->add_subcommand(
      "show", "Print a file fully resolved: base overlays applied, defaults filled in, "
              "referenced machine and model included");
  show->add_option("file", sopts->file, "YAML file")->required()->check(CLI::ExistingFile);
  show->add_option("-f,--format", sopts->format, "yaml or json")
      ->check(CLI::IsMember({"yaml", "json"}));
  show->add_option("-o,--output", sopts->output, "Write to this file instead of stdout");
  show->add_flag("--force", sopts->force, "Replace an existing output file");
  show->add_flag("--origin", sopts->origin, "Add where each key got its value (file:line)");
  show->callback([sopts, &result] {
    const Loader loader(config::default_roots());
    // Every file the resolved document was read from: none is overwritten.
    std::vector<fs::path> inputs{sopts->file};
    const Json j = resolve(loader, sopts->file, sopts->origin, &inputs);
    if (writes_file(sopts->output)) check_output_file(sopts->output, sopts->force, inputs);
    emit(sopts->format == "json" ? j.dump(2) + "\n" : config::json_to_yaml(j), sopts->output);
    result.exit_code = kExitOk;
  });

  struct RefOpts {
    std::string output;
    bool force = false;
  };
  auto ref_opts = std::make_shared<RefOpts>();
  auto* ref = cfg->add_subcommand("reference",
                                  "Print the YAML reference generated from the declarations");
  ref->add_option("-o,--output", ref_opts->output, "Write to this file instead of stdout");
  ref->add_flag("--force", ref_opts->force, "Replace an existing output file");
  ref->callback([ref_opts, &result] {
    if (writes_file(ref_opts->output)) check_output_file(ref_opts->output, ref_opts->force, {});
    emit(reference_document(), ref_opts->output);
    result.exit_code = kExitOk;
  });

  // AITER's names of a quantisation (a tuned table's q_dtype_a, q_dtype_w,
  // q_type columns) as scenario keys, through formats_from_aiter: the one
  // mapping, so that scripts reading AITER tables (validation/calibration/)
  // keep no second table of their own.
  struct AiterOpts {
    std::vector<std::string> names;
  };
  auto aopts = std::make_shared<AiterOpts>();
  auto* aiter = cfg->add_subcommand(
      "aiter-format", "Print the scenario dtype, weight_dtype and quant of AITER's "
                      "q_dtype_a q_dtype_w q_type names (exit 2 where no supported format matches)");
  aiter->add_option("names", aopts->names, "q_dtype_a q_dtype_w q_type, e.g. torch.bfloat16 "
                                           "torch.float4_e2m1fn_x2 QuantType.per_1x32")
      ->required()
      ->expected(3);
  aiter->callback([aopts, &result] {
    const auto& n = aopts->names;
    std::string why;
    const auto f = formats_from_aiter(n[0], n[1], n[2], &why);
    if (!f) {
      std::cerr << "tdmsim: error: " << why << "\n";
      result.exit_code = kExitBadInput;
      return;
    }
    std::string_view label;
    for (const SupportedFormat& s : supported_formats()) {
      if (s.formats.activation == f->activation && s.formats.weight == f->weight &&
          s.formats.quant == f->quant) {
        label = s.label;
      }
    }
    fmt::print("dtype: {}\nweight_dtype: {}\nquant: {}\nlabel: {}\n", config::enum_name(f->activation),
               config::enum_name(f->weight), config::enum_name(f->quant), label);
    result.exit_code = kExitOk;
  });

  // A tuned table's tile name as the table reader (`--kernel-config`,
  // kernel.config) reads it, through plan::read_aiter_tile (a 1-stage row's
  // stage-1 name: plan::read_aiter_one_stage_kernel, --one-stage): the one
  // mapping, so that scripts reading AITER tables keep no second reading of names.
  struct AiterTileOpts {
    std::string name;
    std::uint32_t block_m = 0;
    int stage = 1;
    bool one_stage = false;
    std::vector<std::string> format;
  };
  auto topts = std::make_shared<AiterTileOpts>();
  auto* tile = cfg->add_subcommand(
      "aiter-tile", "Print the tile a tuned table's tile or kernel name gives at block_m, as --kernel-config reads "
                    "it (exit 2 where the name is refused, with why)");
  tile->add_option("name", topts->name, "tile1/tile2 or kernelName1/kernelName2 field (\"\" for an empty one)")
      ->required();
  // The values a table's block_m column takes (plan::valid_block_m), else the
  // answer would be a tile no table row can ask for.
  tile->add_option("--block-m", topts->block_m, "the row's block_m (" +
                                                    valid_block_m_text(KernelCode::aiter) + ")")
      ->required()
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::uint32_t v = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (ec != std::errc() || end != text.data() + text.size() ||
                !valid_block_m(v, KernelCode::aiter)) {
              return "must be " + valid_block_m_text(KernelCode::aiter) + ", as a table's block_m column, got '" +
                     text + "'";
            }
            return {};
          },
          "BLOCK_M"));
  tile->add_option("--stage", topts->stage, "1: the tile1/kernelName1 column, 2: tile2/kernelName2")
      ->check(CLI::IsMember({1, 2}));
  tile->add_option("--format", topts->format, "the row's q_dtype_a q_dtype_w q_type (sets an MxN name's K)")
      ->expected(3);
  tile->add_flag("--one-stage", topts->one_stage,
                 "the row says run_1stage 1: read the stage-1 name as AITER's 1-stage assembly kernel "
                 "(subGU_m x subGU_n; default: AITER's heuristic kernel)");
  tile->callback([topts, &result] {
    std::optional<plan::AiterFormat> format;
    if (!topts->format.empty()) {
      const auto& f = topts->format;
      format = plan::aiter_format(f[0], f[1], f[2]);
      if (!format) {
        std::cerr << "tdmsim: error: --format " << f[0] << " " << f[1] << " " << f[2]
                  << ": not a format AITER's tables name (tdmsim config aiter-format says why)\n";
        result.exit_code = kExitBadInput;
        return;
      }
    }
    if (topts->one_stage && topts->stage != 1) {
      std::cerr << "tdmsim: error: --one-stage reads the stage-1 column (a 1-stage row's stage-2 name is not run)\n";
      result.exit_code = kExitBadInput;
      return;
    }
    const plan::AiterTileReading r = topts->one_stage
                                         ? plan::read_aiter_one_stage_kernel(topts->name, topts->block_m, format)
                                         : plan::read_aiter_tile(topts->name, topts->block_m, format, topts->stage == 2);
    if (!r.error.empty()) {
      std::cerr << "tdmsim: error: " << r.error << "\n";
      result.exit_code = kExitBadInput;
      return;
    }
    const KernelTile& t = r.tile;
    // assembly_stage1: the row's stage 1 runs unsplit whatever its ksplit
    // (plan::aiter_asm_stage1_name), as --kernel-config runs it;
    // workgroups_per_cu: kernel.gate_up_workgroups_per_cu as --kernel-config
    // takes it from the name (0 for a 1-stage kernel, whose list gives it);
    // combine: kernel.down_combine as --kernel-config takes it from a
    // stage-2 name (machine: the machine's kernels.combine).
    fmt::print("tile: {}\nlds_buffers: {}\nassembly_stage1: {}\nworkgroups_per_cu: {}\ncombine: {}\nreading: {}\n",
               t.is_auto() ? std::string("default") : fmt::format("{}x{}x{}x{}", t.threads, t.m, t.n, t.k),
               r.lds_buffers, r.assembly_stage1 ? 1 : 0, r.workgroups_per_cu,
               config::enum_name(r.combine), r.reading);
    result.exit_code = kExitOk;
  });

  auto* list = cfg->add_subcommand("list", "List the shipped machines, models, scenarios, sweeps and kernel profiles");
  list->callback([&result] {
    const Loader loader(config::default_roots());
    for (SpecKind k : {SpecKind::machine, SpecKind::model, SpecKind::scenario, SpecKind::sweep,
                       SpecKind::kernel_profile}) {
      fmt::print("{}:\n", config::kind_folder(k));
      for (const auto& n : loader.names(k)) fmt::print("  {}\n", n);
    }
    result.exit_code = kExitOk;
  });
}

}  // namespace tdmsim::cli
