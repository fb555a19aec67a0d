// libFuzzer target for the YAML configuration loader (built and run by
// tests/fuzz/run_fuzz.sh yaml_config, registered as the CTest test
// fuzz.yaml_config). An input's first byte picks the kind (modulo 6: machine,
// model, scenario, sweep, tenants, kernel profile); the rest is written as a
// YAML file into that kind's folder of a private copy of the shipped
// workloads/ tree (its kernel profiles and traces included), so `base:`,
// `machine:`, `model:`, `kernel_profile:` and trace references to shipped
// files resolve, and loaded through tdmsim::config::Loader the way
// `tdmsim config validate` and the commands do (a scenario, sweep or tenants
// file resolved with its machine and model).
// Properties checked (a violation aborts or traps, which libFuzzer reports):
// no out-of-bounds access (ASan) or UB (UBSan); the only exception a bad file
// may raise is ConfigError, holding at least one diagnostic with a message;
// an accepted spec serializes (config::to_json).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "workloads/config/diagnostics.h"
#include "workloads/config/loader.h"
#include "workloads/config/writer.h"

namespace fs = std::filesystem;
using namespace tdmsim;

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

// The private workloads tree, copied once per fuzzing process and removed at
// exit (a function-local static: libFuzzer gives the target no other place to
// keep state between inputs).
struct Tree {
  fs::path root;
  Tree() {
    root = fs::temp_directory_path() / ("tdmsim-fuzz-yaml-" + std::to_string(::getpid()));
    fs::remove_all(root);
    for (const char* kind : {"machines", "models", "scenarios", "sweeps", "kernel-profiles", "traces"}) {
      fs::create_directories(root / kind);
      fs::copy(fs::path(TDMSIM_WORKLOADS_DIR) / kind, root / kind, fs::copy_options::recursive);
    }
  }
  ~Tree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

bool report_loads() {
  static const bool on = std::getenv("TDMSIM_FUZZ_LOAD_REPORT") != nullptr;
  return on;
}

const Tree& tree() {
  static const Tree t;
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // Tenants files live among the scenarios (their `kind: tenants` key).
  static const char* const kFolders[] = {"machines", "models", "scenarios", "sweeps", "scenarios", "kernel-profiles"};
  const int kind = data[0] % 6;
  const fs::path file = tree().root / kFolders[kind] / "zz-fuzz-input.yaml";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  }
  const config::Loader loader({tree().root});
  try {
    switch (kind) {
      case 0: (void)config::to_json(loader.machine(file).spec); break;
      case 1: (void)config::to_json(loader.model(file).spec); break;
      case 2: {
        const auto r = loader.resolve_scenario(file);
        (void)config::to_json(r.scenario.spec);
        break;
      }
      case 3: (void)loader.resolve_sweep(file); break;
      case 4: (void)loader.resolve_tenants(file); break;
      default: (void)config::to_json(loader.kernel_profile(file).spec); break;
    }
    // run_fuzz.sh checks that every shipped file loads in this tree, so that
    // the seeds reach the checks behind loading (TDMSIM_FUZZ_LOAD_REPORT=1).
    if (report_loads()) std::fprintf(stderr, "fuzz-load: accepted\n");
  } catch (const config::ConfigError& e) {
    require(!e.diagnostics().empty());
    for (const auto& d : e.diagnostics()) require(!d.message.empty());
    if (report_loads()) std::fprintf(stderr, "fuzz-load: refused: %s\n", e.diagnostics().front().message.c_str());
  }
  return 0;
}
