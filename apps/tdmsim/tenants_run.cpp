#include "apps/tdmsim/tenants_run.h"

#include <algorithm>
#include <filesystem>

#include <fmt/core.h>

#include "apps/tdmsim/child_process.h"
#include "apps/tdmsim/config_commands.h"
#include "apps/tdmsim/layer_sim.h"
#include "apps/tdmsim/output_dir.h"
#include "apps/tdmsim/input_files.h"
#include "descriptors/plan/moe_plan.h"
#include "sim/core/json_text.h"
#include "sim/mem/address_space.h"
#include "sim/platform/host_memory.h"
#include "sim/platform/gpu.h"
#include "sim/platform/partitioned_gpu.h"
#include "sim/programs/moe_kernels.h"
#include "workloads/config/loader.h"
#include "workloads/config/writer.h"
#include "workloads/specs/partition.h"
#include "workloads/util/atomic_write.h"

namespace tdmsim::cli {
namespace {

using config::Json;

struct Tenant {
  const config::ResolvedScenario* sc = nullptr;
  std::uint32_t partition = 0;
  std::uint32_t pool = 0;
  std::uint64_t base = 0;  // where its buffers start (partition_memory_base)
  plan::MoePlan plan;
};

// One tenant alone on its partition's machine, in a child process.
PathRun run_alone(const Tenant& t, const MachineSpec& part, const std::string& path) {
  Json j = run_in_child(fmt::format("tenant {} ({} path) alone", t.sc->scenario.spec.name, path), [&] {
    sim::Gpu gpu(part);
    sim::AddressSpace as(t.base);
    return path_run_to_json(run_path(gpu, as, t.plan, part, path));
  });
  return path_run_from_json(j);
}

double share_of(double a, double b) { return b > 0 ? a / b : 0.0; }

// Every tenant at once on one partitioned GPU, in a child process:
// {"tenants": [{"total_us", "stages"}...], "memory": {...}, "stats": its object as text, "trace": text}.
Json run_together(const std::vector<Tenant>& tenants, const MachineSpec& whole, const MachineSpec& part,
                  const std::string& path, bool trace) {
  return run_in_child(fmt::format("the tenants together ({} path)", path), [&] {
    sim::SimOptions opts;
    opts.trace = trace;
    sim::PartitionedGpu gpu(whole, opts);
    std::vector<sim::programs::MoeKernels> kernels;
    kernels.reserve(tenants.size());
    std::vector<sim::TenantStream> streams;
    sim::Tick limit = 0;
    for (const auto& t : tenants) {
      sim::AddressSpace as(t.base);
      kernels.push_back(path == "tdm" ? sim::programs::tdm_moe(as, t.plan, part)
                                      : sim::programs::software_moe(as, t.plan, part));
      limit += sim::stall_limit(part, sim::programs::moe_floor(t.plan, part).seconds(), kernels.back().kernels);
    }
    for (std::size_t i = 0; i < tenants.size(); ++i) streams.push_back({tenants[i].partition, &kernels[i].kernels});
    const auto timings = gpu.run(streams, limit);
    Json out = {{"tenants", Json::array()}};
    for (std::size_t i = 0; i < tenants.size(); ++i) {
      const auto& ts = timings[i];
      Json stages = Json::array();
      for (std::size_t k = 0; k < ts.size(); ++k) {
        stages.push_back({{"stage", kernels[i].stage[k]}, {"kernel", ts[k].name}, {"workgroups", ts[k].workgroups},
                          {"time_us", sim::tick_seconds(ts[k].end - ts[k].launch) * 1e6},
                          {"clock_mhz", ts[k].clock_hz * 1e-6},
                          {"workgroups_per_cu", ts[k].workgroups_per_cu()},
                          {"occupancy_limiter", ts[k].occupancy_limiter}});
      }
      out["tenants"].push_back(
          {{"total_us", sim::tick_seconds(ts.back().end - ts.front().launch) * 1e6}, {"stages", stages}});
      if (auto* tr = gpu.trace()) {
        const std::uint32_t pid = tr->process(fmt::format("stages partition[{}] {}", tenants[i].partition,
                                                          tenants[i].sc->scenario.spec.name));
        tr->thread_name(pid, 0, path);
        for (std::size_t k = 0; k < ts.size(); ++k) {
          tr->slice(pid, 0, kernels[i].stage[k] + ": " + ts[k].name, ts[k].launch, ts[k].end);
        }
      }
    }
    // The figures below read the registry, as stats.json's object would give them.
    const sim::StatRegistry& stats = gpu.stats();
    sim::Tick end = 0;
    for (const auto& ts : timings) end = std::max(end, ts.back().end);
    const double span_s = sim::tick_seconds(end - timings.front().front().launch);
    const double mall_hits = stats.sum_keys("", "mall.hits"), mall_misses = stats.sum_keys("", "mall.misses");
    double hbm_bytes = 0;
    for (const char* suffix : {".read_bytes", ".write_bytes"}) {
      stats.for_each_key("gpu.hbm", suffix, [&](std::string_view key, double v) {
        if (key.find(".ch[") == std::string_view::npos) hbm_bytes += v;
      });
    }
    out["memory"] = {{"span_us", span_s * 1e6},
                     {"hbm_bytes", hbm_bytes},
                     {"hbm_tbps", share_of(hbm_bytes, span_s) / 1e12},
                     {"mall_hit_rate", part.memory.mall ? Json(share_of(mall_hits, mall_hits + mall_misses)) : Json()}};
    // The links between IODs (machines with memory.fabric.iods): each IOD
    // port's bytes and the share of the span it was busy.
    Json links = Json::array();
    stats.for_each_key("gpu.iod[", ".link_bytes", [&](std::string_view key, double bytes) {
      const std::string owner(key.substr(0, key.size() - std::string_view(".link_bytes").size()));
      const double busy_s = stats.sum_keys(owner + ".link_busy_time", "") * 1e-12;
      links.push_back({{"iod", owner.substr(4)}, {"bytes", bytes}, {"busy", share_of(busy_s, span_s)}});
    });
    if (!links.empty()) out["memory"]["iod_links"] = links;
    out["stats"] = stats.to_json_text();
    if (gpu.trace() != nullptr) out["trace"] = gpu.trace()->to_json();
    return out;
  });
}

}  // namespace

bool is_tenants_file(const std::string& file) {
  try {
    const config::Loader loader(config::default_roots());
    return loader.kind_of(file) == config::SpecKind::tenants;
  } catch (const std::exception&) {
    return false;
  }
}

int run_tenants(const TenantsRunOptions& o) {
  const config::Loader loader(config::default_roots());
  const config::ResolvedTenants r = loader.resolve_tenants(o.file);
  const MachineSpec& whole = r.machine.spec;
  const MachineSpec part = partition_machine(whole);
  const std::string path = o.path.empty() ? std::string(config::enum_name(r.tenants.spec.path)) : o.path;
  const std::vector<std::string> paths = paths_for(part, path);
  if (paths.empty()) {
    // The tenants file's own `path: tdm` at its line, as run names a scenario's.
    const config::Location at = config::nearest_location(r.tenants.set_at, "path", {r.tenants.file.string(), 1, 1});
    const std::string what = fmt::format("tdm: machine {} ({}) has no tdm: section (no TDM MoE unit); use path "
                                         "software or both", whole.name, r.machine.file.string());
    throw BadInput(o.path.empty() ? config::Diagnostic{at, "path", what}.to_string() : "--path " + what);
  }
  std::vector<Tenant> tenants;
  for (std::size_t i = 0; i < r.scenarios.size(); ++i) {
    const auto& sc = r.scenarios[i];
    check_layer_memory(sc, static_cast<std::uint32_t>(paths.size()), o.trace);
    Tenant t;
    t.sc = &sc;
    t.partition = tenant_partition(r.tenants.spec, i);
    t.pool = t.partition * memory_partitions(whole.partition->memory) / compute_partitions(whole.partition->compute);
    t.base = partition_memory_base(whole, t.partition);
    t.plan = plan::build_plan(sc);
    tenants.push_back(std::move(t));
  }
  // The together run holds the whole GPU and every tenant's layer at once.
  sim::MemoryEstimate together_memory_need = sim::machine_memory(whole);
  for (const auto& sc : r.scenarios) {
    sim::add_layer_memory(together_memory_need, sc.scenario.spec, sc.model.spec, part, 1, o.trace);
  }
  sim::check_memory(together_memory_need, sim::memory_limit(),
                    fmt::format("tenants {} on machine {}", r.tenants.file.string(), r.machine.file.string()));
  std::unique_ptr<StagedDir> dir;
  if (!o.output.empty()) {
    std::vector<fs::path> inputs = r.tenants.chain;
    for (const auto& f : machine_files(r.machine)) inputs.push_back(f);
    for (const auto& sc : r.scenarios) {
      for (auto& f : point_files(config::ResolvedPoint{sc, {}})) inputs.push_back(std::move(f));
    }
    dir = std::make_unique<StagedDir>(o.output, o.force, inputs);
  }

  const std::uint32_t parts = compute_partitions(whole.partition->compute);
  Json summary = {{"tenants_file", r.tenants.spec.name},
                  {"machine", whole.name},
                  {"partition", {{"compute", config::enum_name(whole.partition->compute)},
                                 {"memory", config::enum_name(whole.partition->memory)},
                                 {"partitions", parts},
                                 {"dies_per_partition", part.compute.dies}}},
                  {"paths", paths},
                  {"tenants", Json::array()}};
  for (const auto& t : tenants) {
    summary["tenants"].push_back({{"scenario", t.sc->scenario.spec.name},
                                  {"file", t.sc->scenario.file.string()},
                                  {"model", t.sc->model.spec.name},
                                  {"tokens", t.sc->scenario.spec.tokens},
                                  {"partition", t.partition},
                                  {"memory_pool", t.pool},
                                  {"layer", layer_summary(t.plan)},
                                  {"paths", Json::array()}});
  }
  std::vector<std::pair<std::string, std::string>> stats;  // per path: its stats object as text
  Json together_memory = Json::object();
  std::vector<std::pair<std::string, std::string>> traces;
  for (const auto& path_name : paths) {
    std::vector<PathRun> alone;
    for (const auto& t : tenants) alone.push_back(run_alone(t, part, path_name));
    Json together = run_together(tenants, whole, part, path_name, o.trace);
    for (std::size_t i = 0; i < tenants.size(); ++i) {
      const double a = alone[i].total_s * 1e6;
      const Json& tj = together["tenants"][i];
      const double b = tj["total_us"].get<double>();
      summary["tenants"][i]["paths"].push_back({{"path", path_name},
                                                {"alone_us", a},
                                                {"together_us", b},
                                                {"interference", b / a - 1.0},
                                                {"together_stages", tj["stages"]},
                                                {"alone", alone[i].metrics}});
    }
    together_memory[path_name] = together["memory"];
    stats.emplace_back(path_name, together["stats"].get<std::string>());
    if (together.contains("trace")) traces.emplace_back(path_name, together["trace"].get<std::string>());
  }
  summary["together"] = together_memory;

  if (!o.quiet) {
    fmt::print("tenants {} on {}: {} and {}, {} partitions of {} {}{}\n\n", r.tenants.spec.name, whole.name,
               config::enum_name(whole.partition->compute), config::enum_name(whole.partition->memory), parts,
               part.compute.dies, sim::die_kind(whole) == "xcd" ? "XCD" : "die", part.compute.dies == 1 ? "" : "s");
    fmt::print("{:<6} {:<4} {:<40} {:<9} {:>10} {:>12} {:>12}\n", "tenant", "part", "scenario", "path", "alone us",
               "together us", "interference");
    for (std::size_t i = 0; i < tenants.size(); ++i) {
      for (const auto& p : summary["tenants"][i]["paths"]) {
        fmt::print("{:<6} {:<4} {:<40} {:<9} {:>10.2f} {:>12.2f} {:>+11.1f}%\n", i, tenants[i].partition,
                   tenants[i].sc->scenario.spec.name, p["path"].get<std::string>(), p["alone_us"].get<double>(),
                   p["together_us"].get<double>(), 100.0 * p["interference"].get<double>());
      }
    }
    for (const auto& [p, mem] : together_memory.items()) {
      fmt::print("\ntogether, {} path: {:.2f} TB/s HBM over {:.2f} us{}\n", p, mem["hbm_tbps"].get<double>(),
                 mem["span_us"].get<double>(),
                 mem["mall_hit_rate"].is_null()
                     ? std::string()
                     : fmt::format(", MALL hit rate {:.0f}%", 100.0 * mem["mall_hit_rate"].get<double>()));
      if (mem.contains("iod_links")) {
        std::string busy;
        for (const auto& l : mem["iod_links"]) {
          busy += fmt::format("{}{} {:.0f}%", busy.empty() ? "" : ", ", l["iod"].get<std::string>(),
                              100.0 * l["busy"].get<double>());
        }
        fmt::print("  links between IODs busy: {}\n", busy);
      }
    }
  }
  if (dir) {
    util::write_file_atomic(dir->file("summary.json"), summary.dump(2) + "\n");
    util::write_file_atomic(dir->file("stats.json"), sim::json_object_text(stats, 1) + "\n");
    Json resolved = {{"tenants", config::to_json(r.tenants.spec)},
                     {"machine", config::to_json(whole)},
                     {"files", {{"tenants", r.tenants.file.string()}, {"machine", r.machine.file.string()}}},
                     {"scenarios", Json::array()},
                     {"run", {{"paths", paths}, {"trace", o.trace}}}};
    for (const auto& sc : r.scenarios) {
      resolved["scenarios"].push_back({{"scenario", config::to_json(sc.scenario.spec)},
                                       {"model", config::to_json(sc.model.spec)},
                                       {"files", {{"scenario", sc.scenario.file.string()},
                                                  {"model", sc.model.file.string()}}}});
    }
    util::write_file_atomic(dir->file("config.json"), resolved.dump(2) + "\n");
    if (!traces.empty()) util::write_file_atomic(dir->file("trace.json"), combined_trace(traces));
    dir->commit();
    if (!o.quiet) fmt::print("\nwrote {}\n", dir->target().string());
  }
  return kExitOk;
}

}  // namespace tdmsim::cli
