// `tdmsim emulate`: the files it writes, exit codes, and never a half-written
// output folder.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "apps/tdmsim/emulate_command.h"
#include "apps/tdmsim/output_dir.h"
#include "descriptors/emulator/emulator.h"
#include "descriptors/emulator/npy.h"
#include "descriptors/plan/moe_plan.h"
#include "tests/emulator/scenario_files.h"
#include "workloads/config/loader.h"

namespace tdmsim::cli {
namespace {

namespace fs = std::filesystem;
using emu::test::TempDir;

EmulateOptions options(const fs::path& scenario, const fs::path& out) {
  EmulateOptions o;
  o.scenario = scenario.string();
  o.output = out.string();
  o.quiet = true;
  return o;
}

// Nothing but the expected entries in the folder (no staging leftovers).
std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("emulate writes inputs, routing, layout, outputs, summary and config", "[cli]") {
  const TempDir dir("cli");
  const auto scenario = emu::test::write_tiny_scenario(dir.path(), 13);
  const fs::path out = dir.path() / "run";
  auto o = options(scenario, out);
  o.intermediates = true;
  REQUIRE(run_emulate(o) == kExitOk);
  for (const char* f : {"x", "routing_ids", "routing_weights", "fused_experts", "fused_weights",
                        "sorted_rows", "sorted_weights", "block_expert", "y", "gathered",
                        "gate_up", "intermediate", "expert_out"}) {
    INFO(f);
    CHECK(fs::exists(out / (std::string(f) + ".npy")));
  }
  CHECK(entries(dir.path()) == 3);  // tiny.yaml, scenario.yaml, run

  const config::Loader loader(config::default_roots());
  const auto plan = plan::build_plan(loader.resolve_scenario(scenario));
  const auto want = emu::emulate(plan);
  const auto y = emu::read_npy(out / "y.npy");
  CHECK(y.shape == std::vector<std::uint64_t>{13, 64});
  CHECK(y.as_f32() == want.y);
  const auto rows = emu::read_npy(out / "sorted_rows.npy");
  CHECK(rows.descr == "<u4");
  CHECK(rows.shape == std::vector<std::uint64_t>{plan.layout.padded_rows});
  CHECK(rows.as_u32() == std::vector<std::uint32_t>(plan.layout.sorted_rows.begin(),
                                                   plan.layout.sorted_rows.begin() +
                                                       plan.layout.padded_rows));
  CHECK(emu::read_npy(out / "routing_ids.npy").as_u32() == plan.routing.ids);

  const auto summary = nlohmann::json::parse(std::ifstream(out / "summary.json"));
  CHECK(summary["shape"]["tokens"] == 13);
  CHECK(summary["shape"]["dtype"] == "bf16");
  CHECK(summary["seed"] == 5);
  CHECK(summary["kernel"]["block_m"] == plan.kernel.block_m);
  CHECK(summary["arrays"]["y"]["shape"] == nlohmann::json::array({13, 64}));
  CHECK(summary["arrays"]["y"]["fnv1a64"].get<std::string>().size() == 16);
  CHECK(summary["timings_s"]["emulate_total"].get<double>() > 0);
  CHECK(summary.dump().find("git") == std::string::npos);
  const auto resolved = nlohmann::json::parse(std::ifstream(out / "config.json"));
  CHECK(resolved["scenario"]["tokens"] == 13);
  CHECK(resolved["model"]["hidden_size"] == 64);
  CHECK(resolved["machine"]["name"] == "mi300x");
}

TEST_CASE("emulate refuses bad input with exit 2 and writes nothing", "[cli]") {
  const TempDir dir("cli-bad");
  const fs::path out = dir.path() / "run";
  SECTION("configuration error") {
    const auto scenario = emu::test::write_tiny_scenario(dir.path(), 4, "dtype_typo: 1\n");
    CHECK(run_emulate(options(scenario, out)) == kExitBadInput);
  }
  SECTION("too much memory") {
    const auto scenario = emu::test::write_tiny_scenario(dir.path(), 4);
    auto o = options(scenario, out);
    o.max_memory_gib = 1e-6;
    CHECK(run_emulate(o) == kExitBadInput);
  }
  SECTION("a real model at a size that would exhaust memory") {
    const fs::path big = dir.path() / "big.yaml";
    std::ofstream(big) << "kind: scenario\nname: big\nmachine: mi300x\nmodel: mixtral-8x7b\n"
                          "tokens: 200000\nrouting:\n  source: uniform\n";
    CHECK(run_emulate(options(big, out)) == kExitBadInput);
  }
  SECTION("existing output without --force") {
    const auto scenario = emu::test::write_tiny_scenario(dir.path(), 4);
    fs::create_directory(out);
    std::ofstream(out / "keep.txt") << "mine";
    CHECK(run_emulate(options(scenario, out)) == kExitBadInput);
    CHECK(fs::exists(out / "keep.txt"));
    auto o = options(scenario, out);
    o.force = true;
    // Not a folder tdmsim wrote: --force leaves it alone too.
    CHECK(run_emulate(o) == kExitBadInput);
    CHECK(fs::exists(out / "keep.txt"));
    // One it wrote (its marker file) is replaced.
    std::ofstream(out / tdmsim::cli::kOutputMarker) << "written by tdmsim";
    CHECK(run_emulate(o) == kExitOk);
    CHECK_FALSE(fs::exists(out / "keep.txt"));
    CHECK(fs::exists(out / "y.npy"));
    return;
  }
  CHECK_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir.path())) {
    CHECK(e.path().extension() == ".yaml");  // no staging folder left behind
  }
}

TEST_CASE("an unusable output path is exit 2 and leaves no output", "[cli]") {
  const TempDir dir("cli-badpath");
  const auto scenario = emu::test::write_tiny_scenario(dir.path(), 4);
  std::ofstream(dir.path() / "file") << "not a folder";
  CHECK(run_emulate(options(scenario, dir.path() / "file" / "run")) == kExitBadInput);
  CHECK(entries(dir.path()) == 3);
}

TEST_CASE("a runtime failure is exit 1 and leaves no output", "[cli]") {
  const TempDir dir("cli-fail");
  const auto scenario = emu::test::write_tiny_scenario(dir.path(), 4);
  // The writer's test hook: a write past 200 bytes of a file fails as if the
  // disk were full, after the first small files are complete.
  ::setenv("TDMSIM_TEST_FAIL_WRITE_AFTER", "200", 1);
  const int rc = run_emulate(options(scenario, dir.path() / "run"));
  ::unsetenv("TDMSIM_TEST_FAIL_WRITE_AFTER");
  CHECK(rc == kExitFailure);
  CHECK(entries(dir.path()) == 2);  // the scenario files only: no folder, no staging
}

TEST_CASE(".npy files round-trip and carry numpy's header layout", "[cli][npy]") {
  const TempDir dir("npy");
  const std::vector<float> v = {1.5f, -2.0f, 0.0f, 3.25f, 7.0f, -0.5f};
  emu::write_npy(dir.path() / "a.npy", v, {2, 3});
  const auto a = emu::read_npy(dir.path() / "a.npy");
  CHECK(a.descr == "<f4");
  CHECK(a.shape == std::vector<std::uint64_t>{2, 3});
  CHECK(a.as_f32() == v);
  CHECK(fs::file_size(dir.path() / "a.npy") == 128 + 24);  // header padded to 64-byte units
  const std::string h = emu::npy_header("<u4", {7});
  CHECK(h.size() % 64 == 0);
  CHECK(h.substr(10, 48) == "{'descr': '<u4', 'fortran_order': False, 'shape'");
  CHECK(h.find("(7,)") != std::string::npos);
  CHECK(h.back() == '\n');
  CHECK_THROWS(emu::write_npy(dir.path() / "b.npy", v, {4}));
  std::ofstream(dir.path() / "c.npy") << "garbage";
  CHECK_THROWS_WITH(emu::read_npy(dir.path() / "c.npy"), Catch::Contains("bad magic"));
}

}  // namespace tdmsim::cli
