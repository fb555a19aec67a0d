// Every shipped YAML file loads, resolves what it references, and documents
// the source of each value (machines and models).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <unistd.h>

#include "workloads/config/loader.h"
#include "test_paths.h"

using namespace tdmsim;
using namespace tdmsim::config;
namespace fs = std::filesystem;

namespace {
using tdmsim::test::kWorkloads;

std::vector<fs::path> yaml_files(const std::string& folder) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kWorkloads / folder)) {
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("shipped machines, models, scenarios and sweeps all load", "[shipped]") {
  const Loader loader({kWorkloads});
  const auto machines = yaml_files("machines");
  const auto models = yaml_files("models");
  const auto scenarios = yaml_files("scenarios");
  const auto sweeps = yaml_files("sweeps");
  CHECK(machines.size() >= 6);
  CHECK(models.size() >= 12);
  CHECK(scenarios.size() >= 4);
  CHECK(sweeps.size() >= 1);
  for (const auto& f : machines) {
    INFO(f);
    CHECK(loader.kind_of(f) == SpecKind::machine);
    CHECK_NOTHROW(loader.machine(f));
  }
  for (const auto& f : models) {
    INFO(f);
    CHECK_NOTHROW(loader.model(f));
  }
  for (const auto& f : scenarios) {
    INFO(f);
    if (loader.kind_of(f) == SpecKind::tenants) {
      CHECK_NOTHROW(loader.resolve_tenants(f));
    } else {
      CHECK_NOTHROW(loader.resolve_scenario(f));
    }
  }
  for (const auto& f : sweeps) {
    INFO(f);
    CHECK_NOTHROW(loader.resolve_sweep(f));
  }
}

TEST_CASE("the named parts exist and the TDM part is an overlay with a tdm section",
          "[shipped]") {
  const Loader loader({kWorkloads});
  for (const char* part : {"mi300x", "mi325x", "mi355x", "mi455x", "h200", "mi500x-tdm"}) {
    INFO(part);
    REQUIRE(fs::exists(kWorkloads / "machines" / (std::string(part) + ".yaml")));
  }
  const auto tdm = loader.machine(kWorkloads / "machines/mi500x-tdm.yaml");
  CHECK(tdm.chain.size() >= 2);
  REQUIRE(tdm.spec.tdm.has_value());
  const auto h200 = loader.machine(kWorkloads / "machines/h200.yaml");
  CHECK_FALSE(h200.spec.memory.mall.has_value());
  CHECK(h200.spec.compute.total_cus() == 132u);
  CHECK(loader.machine(kWorkloads / "machines/mi300x.yaml").spec.compute.total_cus() == 304u);
  CHECK(loader.machine(kWorkloads / "machines/mi355x.yaml").spec.compute.total_cus() == 256u);
}

// Calls fn(file, line number, line, comment or "") for each `key: value`
// line of the folder's files (not a section header, not
// name/description/source/base/kind).
template <class Fn>
void each_value_line(const std::string& folder, Fn fn) {
  const std::regex value_line(R"(^\s*([A-Za-z_0-9]+):\s*([^#\s][^#]*?)\s*(#.*)?$)");
  for (const auto& f : yaml_files(folder)) {
    std::ifstream in(f);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      std::smatch m;
      if (!std::regex_match(line, m, value_line)) continue;
      const std::string key = m[1];
      if (key == "name" || key == "description" || key == "source" || key == "base" || key == "kind") {
        continue;
      }
      fn(f, n, line, m[3].matched ? m[3].str() : std::string());
    }
  }
}

TEST_CASE("every value in shipped machine and model files carries a source comment",
          "[shipped]") {
  for (const char* folder : {"machines", "models"}) {
    each_value_line(folder, [](const fs::path& f, int n, const std::string& line, const std::string& comment) {
      INFO(f.string() << ":" << n << ": " << line);
      CHECK_FALSE(comment.empty());
    });
  }
}

TEST_CASE("every shipped kernel profile loads and every machine's profile is one of them",
          "[shipped][kernel_profile]") {
  const Loader loader({kWorkloads});
  const auto profiles = yaml_files("kernel-profiles");
  std::set<std::string> names;
  for (const auto& f : profiles) {
    INFO(f);
    CHECK(loader.kind_of(f) == SpecKind::kernel_profile);
    const auto p = loader.kernel_profile(f);
    CHECK(p.spec.name == f.stem().string());  // a machine names it by its file name
    names.insert(p.spec.name);
  }
  // One per machine family, and the default of each isa exists.
  for (IsaFamily isa : {IsaFamily::cdna3, IsaFamily::cdna4, IsaFamily::gfx1250, IsaFamily::hopper}) {
    CHECK(names.count(default_kernel_profile(isa)) == 1);
  }
  for (const auto& f : yaml_files("machines")) {
    INFO(f);
    const auto m = loader.machine(f);
    CHECK(names.count(m.spec.kernel_profile) == 1);
    // The profile's values arrive with the profile file's locations.
    const auto at = m.set_at.find("kernels.epilogue.activation_ops");
    REQUIRE(at != m.set_at.end());
    CHECK(at->second.file.find("kernel-profiles") != std::string::npos);
    // ... and the profile file is among the files the machine was read from
    // (a sweep hashes it and --force never removes a folder holding it).
    REQUIRE_FALSE(m.also_read.empty());  // the profile first, then its base: chain
    CHECK(m.also_read.front() == kWorkloads / "kernel-profiles" / (m.spec.kernel_profile + ".yaml"));
    // Our NVIDIA kernels come with their counted instructions.
    if (m.spec.kernels.matrix_instructions != MatrixInstructions::isa) {
      CHECK(m.spec.kernels.nvidia.has_value());
    }
  }
}

TEST_CASE("every value in a shipped kernel profile names its kind of source", "[shipped][kernel_profile]") {
  // docs/calibration.md "Kernel profiles": a value's comment starts with one
  // of these words.
  const std::regex sourced(R"(^#\s*(MEASURED|COUNTED|FITTED|ASSUMED|CODE)\b.*)");
  each_value_line("kernel-profiles", [&](const fs::path& f, int n, const std::string& line,
                                         const std::string& comment) {
    INFO(f.string() << ":" << n << ": " << line);
    CHECK(std::regex_match(comment, sourced));
  });
}

TEST_CASE("a file of another kind's folder: named as that kind only where it reads as one", "[shipped][kind]") {
  const Loader loader({kWorkloads});
  // A shipped machine file given where a scenario is read: one message, at its first line.
  try {
    (void)loader.scenario(kWorkloads / "machines" / "mi300x.yaml");
    FAIL("a machine file loaded as a scenario");
  } catch (const ConfigError& e) {
    REQUIRE(e.diagnostics().size() == 1);
    CHECK(e.diagnostics()[0].key == "kind");
    CHECK(e.diagnostics()[0].message.find("this is a machine file") != std::string::npos);
  }
  // A scenario with two typos kept in a work folder called models/: its own two errors.
  const fs::path dir = fs::temp_directory_path() / ("tdmsim-kind-" + std::to_string(::getpid())) / "models";
  fs::create_directories(dir);
  const fs::path f = dir / "mine.yaml";
  std::ofstream(f) << "name: mine\nmachine: mi300x\nmodel: mixtral-8x7b\ntokenz: 64\ndtypo: bf16\n";
  try {
    (void)loader.scenario(f);
    FAIL("a scenario with typos loaded");
  } catch (const ConfigError& e) {
    REQUIRE(e.diagnostics().size() == 2);
    CHECK(e.diagnostics()[0].key == "tokenz");
    CHECK(e.diagnostics()[1].key == "dtypo");
  }
  fs::remove_all(dir.parent_path());
}
