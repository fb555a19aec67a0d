// Loader::resolve_tenants: a tenants file (workloads/specs/tenants_spec.h)
// with its partitioned machine and every tenant's scenario, and the checks
// that need them all (docs/partitions.md "Tenants").
#include <filesystem>
#include <string>

#include <fmt/core.h>

#include "workloads/config/loader.h"
#include "workloads/specs/partition.h"
#include "workloads/specs/scenario_spec.h"

namespace tdmsim::config {

ResolvedTenants Loader::resolve_tenants(const fs::path& file) const {
  ResolvedTenants r;
  r.tenants = tenants(file);
  const TenantsSpec& t = r.tenants.spec;
  const std::string shown = display_path(file);
  const auto at = [&](const std::string& key) { return nearest_location(r.tenants.set_at, key, {shown, 1, 1}); };
  const fs::path machine_file = find(t.machine, SpecKind::machine, file, at("machine"), "machine");
  r.machine = machine(machine_file);
  const MachineSpec& m = r.machine.spec;
  Diagnostics diags;
  if (!m.partition) {
    diags.add(at("machine"), "machine",
              fmt::format("machine {} ({}) has no partition: section; tenants share the partitions of one GPU "
                          "(e.g. partition: {{compute: dpx}}; docs/partitions.md)", m.name, display_path(machine_file)));
    diags.throw_if_any();
  }
  const std::uint32_t parts = compute_partitions(m.partition->compute);
  const std::string mode(enum_name(m.partition->compute));
  if (t.scenarios.size() > parts) {
    diags.add(at("scenarios"), "scenarios",
              fmt::format("{} tenants, but machine {} in {} has {} compute partition{} (one tenant each)",
                          t.scenarios.size(), m.name, mode, parts, parts == 1 ? "" : "s"));
  }
  for (std::size_t i = 0; i < t.partitions.size(); ++i) {
    if (t.partitions[i] >= parts) {
      diags.add(at("partitions"), "partitions",
                fmt::format("partition {} of tenant {}: machine {} in {} has partitions 0..{}", t.partitions[i], i,
                            m.name, mode, parts - 1));
    }
  }
  diags.throw_if_any();
  const std::uint64_t share = partition_memory_share(m);
  for (std::size_t i = 0; i < t.scenarios.size(); ++i) {
    const fs::path f = find(t.scenarios[i], SpecKind::scenario, file, at("scenarios"), "scenarios");
    // As a sweep's scenario: a file that does not say its kind is taken as a scenario.
    SpecKind kind = SpecKind::scenario;
    try {
      kind = kind_of(f);
    } catch (const ConfigError&) {
    }
    if (kind != SpecKind::scenario) {
      diags.add(at("scenarios"), "scenarios",
                fmt::format("tenant {} ({}) is not a scenario file", i, display_path(f)));
      continue;
    }
    // Each tenant's machine is the partition's (its own machine: key is replaced).
    ResolvedScenario sc = resolve_scenario(f, fs::absolute(machine_file).string());
    const ScenarioSpec& s = sc.scenario.spec;
    if (s.serving) {
      diags.add(at("scenarios"), "scenarios",
                fmt::format("tenant {} ({}) has a serving: section; a tenant is one MoE layer (request streams "
                            "of tenants are not modelled)", i, display_path(f)));
    }
    if (s.parallel.ep > 1) {
      diags.add(at("scenarios"), "scenarios",
                fmt::format("tenant {} ({}) has parallel.ep {}; a tenant is one MoE layer on one partition",
                            i, display_path(f), s.parallel.ep));
    }
    const std::uint64_t weights = expert_weight_bytes(s, sc.model.spec);
    if (weights > share) {
      diags.add(at("scenarios"), "scenarios",
                fmt::format("tenant {} ({}): its expert weights ({:.1f} GB) do not fit its partition's share of "
                            "memory ({:.1f} GB: memory.hbm.capacity of its {} pool over the partitions above it)",
                            i, display_path(f), static_cast<double>(weights) / 1e9, static_cast<double>(share) / 1e9,
                            m.partition->memory == MemoryPartition::nps4 ? "nps4" : "nps1"));
    }
    r.scenarios.push_back(std::move(sc));
  }
  diags.throw_if_any();
  return r;
}

}  // namespace tdmsim::config
