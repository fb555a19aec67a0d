#include "apps/tdmsim/gpu_case_command.h"

#include <iostream>
#include <memory>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "apps/tdmsim/output_dir.h"
#include "apps/tdmsim/input_files.h"
#include "apps/tdmsim/serving_queue.h"
#include "descriptors/plan/moe_plan.h"
#include "kernels/host/case_from_plan.h"
#include "workloads/config/loader.h"
#include "workloads/util/atomic_write.h"

namespace tdmsim::cli {
namespace {

struct GpuCaseOptions {
  std::string scenario;
  std::string output;
  std::string machine;
  bool force = false;
  bool quiet = false;
};

int run_gpu_case(const GpuCaseOptions& o) {
  try {
    const config::Loader loader(config::default_roots());
    const auto sc = o.machine.empty() ? loader.resolve_scenario(o.scenario)
                                      : loader.resolve_scenario(o.scenario, o.machine);
    serving::refuse_serving(sc, "tdmsim gpu-case");
    // A case is for cross-validating the simulator's timing of a layer against
    // the runner's: a scenario of AITER's kernels (kernel.source aiter) times
    // kernels the runner does not have, and names its tiles as AITER does
    // (gate/up N per half), so its case would compare different kernels.
    if (sc.scenario.spec.kernel.source == KernelCode::aiter) {
      throw BadInput(o.scenario + ": kernel.source aiter: the GPU case runs the project's HIP kernels, not "
                     "AITER's; set kernel.source: tdmsim to run the layer on ours (a gate/up tile's N then counts "
                     "gate and up together)");
    }
    const plan::MoePlan p = plan::build_plan(sc);
    gpu::MoeCase c;
    try {
      c = gpu::make_case(sc, p);
    } catch (const gpu::CaseRefused& e) {
      // At the key that set it (the scenario's, or its model's), as the
      // loader names keys; the file alone where no line set it (a default).
      const auto& loaded_at = e.in_model ? sc.model.set_at : sc.scenario.set_at;
      const fs::path& file = e.in_model ? sc.model.file : sc.scenario.file;
      const config::Location at = config::nearest_location(loaded_at, e.key, {file.string(), 0, 0});
      throw BadInput(at.line > 0 ? config::Diagnostic{at, e.key, e.what()}.to_string()
                                 : fmt::format("{}: {}: {}", o.scenario, e.key, e.what()));
    } catch (const std::invalid_argument& e) {
      throw BadInput(o.scenario + ": " + e.what());
    }
    StagedDir dir(o.output, o.force, point_files(config::ResolvedPoint{sc, {}}));
    gpu::write_case(dir.file("").string(), c, [](const std::string& path, std::string_view bytes) {
      util::write_file_atomic(path, bytes);
    });
    dir.commit();
    if (!o.quiet) {
      std::cout << fmt::format("wrote {}: {} tokens, {} blocks of {}, {}-stage, tiles {}x{}x{}x{} / "
                               "{}x{}x{}x{}, split_k {}\n",
                               dir.target().string(), c.tokens, c.blocks, c.block_m, c.stages,
                               c.gate_up_tile.threads, c.gate_up_tile.m, c.gate_up_tile.n,
                               c.gate_up_tile.k, c.down_tile.threads, c.down_tile.m,
                               c.down_tile.n, c.down_tile.k, c.split_k);
    }
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

}  // namespace

void add_gpu_case_command(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<GpuCaseOptions>();
  auto* cmd = app.add_subcommand(
      "gpu-case", "Write a scenario's GPU case (plan, routing, layout) for the GPU runner tdmsim-gpu");
  cmd->add_option("scenario", o->scenario, "Scenario YAML file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", o->output, "Output folder (created; must not exist)")->required();
  cmd->add_option("--machine", o->machine, "Machine replacing the scenario's (name or path)");
  cmd->add_flag("--force", o->force, "Replace an existing output folder");
  cmd->add_flag("-q,--quiet", o->quiet, "Print errors only");
  cmd->callback([o, &result] { result.exit_code = run_gpu_case(*o); });
}

}  // namespace tdmsim::cli
