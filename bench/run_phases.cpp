// Where `tdmsim run SCENARIO` spends its CPU time, phase by phase: the same
// library calls as the run command (apps/tdmsim/run_command.cpp), each timed
// with the process's CPU clock (every thread counted, so a phase that runs on
// several threads costs what it costs the machine) and the wall clock.
//   tdmsim_run_phases SCENARIO [software|tdm|both] [--trace]
// docs/performance.md points here for the per-phase split;
// `bench/measure_performance.py` and `bench/run-cpu-time.sh` time the real command.
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/tdmsim/layer_sim.h"
#include "descriptors/plan/moe_plan.h"
#include "descriptors/plan/routing.h"
#include "sim/core/json_text.h"
#include "sim/platform/gpu.h"
#include "sim/programs/moe_kernels.h"
#include "workloads/config/loader.h"
#include "workloads/config/writer.h"

namespace {

using namespace tdmsim;

double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Phase {
  std::string name;
  double cpu = 0, wall = 0;
};

class Timer {
 public:
  explicit Timer(std::vector<Phase>& out) : out_(out) {}
  // Closes the phase running since the last mark, naming it `name`.
  void mark(const std::string& name) {
    const double c = cpu_s(), w = wall_s();
    out_.push_back({name, c - cpu_, w - wall_});
    cpu_ = c;
    wall_ = w;
  }

 private:
  std::vector<Phase>& out_;
  double cpu_ = cpu_s(), wall_ = wall_s();
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tdmsim_run_phases SCENARIO [software|tdm|both] [--trace]\n");
    return 2;
  }
  const std::string scenario = argv[1];
  const std::string path = argc > 2 ? argv[2] : "software";
  const bool trace = argc > 3 && std::string(argv[3]) == "--trace";
  std::vector<Phase> phases;
  const double cpu0 = cpu_s();
  Timer t(phases);

  const config::Loader loader(config::default_roots());
  const config::ResolvedScenario sc = loader.resolve_scenario(scenario);
  const MachineSpec& m = sc.machine.spec;
  t.mark("load YAML (machine, model, scenario)");
  // The routing alone, then the whole plan (which routes again).
  const plan::Routing routing = plan::route(sc);
  t.mark("routing alone (repeated inside the plan below)");
  const plan::MoePlan p = plan::build_plan(sc);
  t.mark("plan (routing included)");
  sim::SimOptions opts;
  opts.trace = trace;
  sim::Gpu gpu(m, opts);
  t.mark("elaboration (sim::Gpu)");
  sim::AddressSpace as;
  config::Json summary = {{"layer", cli::layer_summary(p)}, {"paths", config::Json::array()}};
  std::vector<std::pair<std::string, std::string>> stats;
  for (const std::string& pa : cli::paths_for(m, path)) {
    // The kernels alone once, then run_path (which builds them again).
    const auto k = pa == "tdm" ? sim::programs::tdm_moe(as, p, m) : sim::programs::software_moe(as, p, m);
    t.mark(pa + ": kernels and tile programs (repeated inside run_path below)");
    cli::PathRun r = cli::run_path(gpu, as, p, m, pa);
    t.mark(pa + ": run_path (kernels, simulation, stats)");
    summary["paths"].push_back(r.metrics);
    stats.emplace_back(pa, std::move(r.stats_json));
  }
  const std::string s1 = summary.dump(2), s2 = sim::json_object_text(stats, 1);
  const std::string s3 = gpu.trace() != nullptr ? gpu.trace()->to_json() : std::string();
  t.mark("outputs to text (summary, stats, trace)");
  const double total = cpu_s() - cpu0;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("%-66s %9s %9s\n", "phase", "CPU s", "wall s");
  for (const auto& ph : phases) std::printf("%-66s %9.4f %9.4f\n", ph.name.c_str(), ph.cpu, ph.wall);
  std::printf("%-66s %9.4f\n", "total in main (CPU)", total);
  std::printf("process: user %.3f s, sys %.3f s, max RSS %ld KiB, output %zu bytes\n",
              static_cast<double>(ru.ru_utime.tv_sec) + static_cast<double>(ru.ru_utime.tv_usec) * 1e-6,
              static_cast<double>(ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_stime.tv_usec) * 1e-6, ru.ru_maxrss,
              s1.size() + s2.size() + s3.size());
  return 0;
}
