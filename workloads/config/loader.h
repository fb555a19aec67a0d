// Loads configuration files: YAML parsing, `base:` overlay chains (with cycle
// detection), name resolution of referenced machines/models/scenarios, and all
// validation. Every failure is a ConfigError listing file:line:col, key path
// and what was expected.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/config/reader.h"
#include "workloads/config/resolved.h"
#include "workloads/specs/kernel_profile.h"
#include "workloads/specs/sweep_spec.h"
#include "workloads/specs/tenants_spec.h"

namespace tdmsim::config {

namespace fs = std::filesystem;

// tenants: several scenarios on the partitions of one GPU (workloads/specs/
// tenants_spec.h); only by its `kind: tenants` key, kept among the scenarios.
enum class SpecKind { machine, model, scenario, sweep, kernel_profile, tenants };

std::string_view kind_name(SpecKind k);     // "machine", "kernel_profile"
std::string_view kind_folder(SpecKind k);   // "machines", "kernel-profiles"

// A sweep with its base scenario resolved and every axis value checked.
struct ResolvedSweep {
  Loaded<SweepSpec> sweep;
  ResolvedScenario base;
};

// A tenants file with its whole (partitioned) machine and each tenant's
// scenario resolved on that machine (each scenario's machine the partition's).
struct ResolvedTenants {
  Loaded<TenantsSpec> tenants;
  Loaded<MachineSpec> machine;  // the whole GPU, its partition: section not applied
  std::vector<ResolvedScenario> scenarios;
};

class Loader {
 public:
  // `roots`: workloads folders (holding machines/, models/, scenarios/, sweeps/)
  // searched, in order, for references by name.
  explicit Loader(std::vector<fs::path> roots) : roots_(std::move(roots)) {}

  // A machine with its kernel profile (the file its `kernel_profile:` names,
  // else the one named after its isa) read into `kernels` under the
  // machine's own `kernels:` keys; the profile's keys keep their locations
  // (as kernels.<key>), so an error in one is reported in the profile file.
  Loaded<MachineSpec> machine(const fs::path& file) const;
  Loaded<KernelProfileSpec> kernel_profile(const fs::path& file) const;
  Loaded<ModelSpec> model(const fs::path& file) const;
  Loaded<ScenarioSpec> scenario(const fs::path& file) const;
  Loaded<SweepSpec> sweep(const fs::path& file) const;
  Loaded<TenantsSpec> tenants(const fs::path& file) const;
  // Whether `file` loads as a `kind` file without an error.
  bool reads_as(SpecKind kind, const fs::path& file) const;

  ResolvedScenario resolve_scenario(const fs::path& file) const;
  // The same with the scenario's machine replaced by `machine_ref` (a name,
  // or a path relative to the working directory; a command-line override).
  ResolvedScenario resolve_scenario(const fs::path& file, const std::string& machine_ref) const;
  // The same, for a caller that replaces the scenario's kernel.config with a
  // table of its own (`tdmsim run --kernel-config`, which checks that file
  // itself; a sweep with a kernel.config axis): the scenario's table is not
  // required to exist.
  ResolvedScenario resolve_scenario(const fs::path& file, const std::string& machine_ref,
                                    bool kernel_config_replaced) const;
  ResolvedSweep resolve_sweep(const fs::path& file) const;
  // With the checks that need the machine and the scenarios: a partitioned
  // machine, at most one tenant per partition, each tenant one MoE layer, the
  // weights of the tenants of one memory pool within its capacity
  // (tenants_resolve.cpp).
  ResolvedTenants resolve_tenants(const fs::path& file) const;

  // What kind of spec a file holds: its `kind:` key, else its folder's name.
  SpecKind kind_of(const fs::path& file) const;

  // A reference by name ("mi300x") or by path ("../machines/mi300x.yaml",
  // relative to `from`'s folder) to an existing file.
  fs::path find(std::string_view ref, SpecKind kind, const fs::path& from,
                const Location& where, const std::string& key) const;

  // Names available for a kind (for listings and suggestions).
  std::vector<std::string> names(SpecKind kind) const;

 private:
  template <class S>
  Loaded<S> load(const fs::path& file, SpecKind kind) const;
  // Reads the profile a machine's chain (`layers`, file first) names into `out`;
  // returns its name (empty where the isa is missing or bad: reported later).
  template <class Layers>
  std::string attach_profile(Loaded<MachineSpec>& out, const Layers& layers) const;
  std::vector<fs::path> roots_;
};

// Applies one `key.path: value` override (a sweep axis value) to a spec,
// reporting problems against `where` and `key`.
template <class S>
void apply_override(S& spec, std::string_view subpath, const std::string& value,
                    const Location& where, const std::string& key, Diagnostics& diags);

// Default search roots: $TDMSIM_WORKLOADS if set, then the source tree's workloads/.
std::vector<fs::path> default_roots();

}  // namespace tdmsim::config
