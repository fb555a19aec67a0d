// libFuzzer target for the YAML configuration loader (built and run by
// tests/fuzz/run_fuzz.sh yaml_config, registered as the CTest test
// fuzz.yaml_config). An input's first byte picks the kind (modulo 4: machine,
// model, scenario, sweep); the rest is written as a YAML file into that kind's
// folder of a private copy of the shipped workloads/ tree, so `base:`,
// `machine:` and `model:` references to shipped files resolve, and loaded
// through tdmsim::config::Loader the way `tdmsim config validate` does.
// Properties checked (a violation aborts or traps, which libFuzzer reports):
// no out-of-bounds access (ASan) or UB (UBSan); the only exception a bad file
// may raise is ConfigError, holding at least one diagnostic with a message;
// an accepted spec serializes (config::to_json).
#include <cstdint>
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
    for (const char* kind : {"machines", "models", "scenarios", "sweeps"}) {
      fs::create_directories(root / kind);
      const fs::path from = fs::path(TDMSIM_WORKLOADS_DIR) / kind;
      for (const auto& e : fs::directory_iterator(from)) {
        if (e.path().extension() == ".yaml") fs::copy_file(e.path(), root / kind / e.path().filename());
      }
    }
  }
  ~Tree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

const Tree& tree() {
  static const Tree t;
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static const char* const kFolders[] = {"machines", "models", "scenarios", "sweeps"};
  const int kind = data[0] % 4;
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
      default: (void)loader.resolve_sweep(file); break;
    }
  } catch (const config::ConfigError& e) {
    require(!e.diagnostics().empty());
    for (const auto& d : e.diagnostics()) require(!d.message.empty());
  }
  return 0;
}
