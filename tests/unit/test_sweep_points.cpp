// Sweep points: grid/zip/random/lhs expansion (counts, order, determinism,
// Latin-hypercube strata), whole-object axes (path, machine, model), TDM
// parameter axes, and point-level errors naming the key and line.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

#include "workloads/config/sweep_points.h"
#include "sweep_test_util.h"
#include "test_paths.h"

using namespace tdmsim;
using namespace tdmsim::config;
namespace fs = std::filesystem;

namespace {

using tdmsim::test::kWorkloads;

using tdmsim::test::first_config_error;
using tdmsim::test::SweepFile;

SweepSpec spec_with(SweepMode mode, std::vector<std::size_t> sizes, std::uint32_t samples = 100,
                    std::uint64_t seed = 1) {
  SweepSpec s;
  s.mode = mode;
  s.samples = samples;
  s.seed = seed;
  for (std::size_t a = 0; a < sizes.size(); ++a) {
    SweepAxis axis;
    axis.key = "scenario.axis" + std::to_string(a);
    for (std::size_t i = 0; i < sizes[a]; ++i) axis.values.push_back(std::to_string(i));
    axis.value_where.resize(sizes[a]);
    s.axes.items.push_back(axis);
  }
  return s;
}

}  // namespace

TEST_CASE("grid: the full product, first axis slowest, every combination once", "[sweep]") {
  const auto points = expand_points(spec_with(SweepMode::grid, {3, 4, 2}));
  REQUIRE(points.size() == 24);
  std::set<std::vector<std::uint32_t>> seen;
  for (std::size_t i = 0; i < points.size(); ++i) {
    CHECK(points[i].index == i);
    seen.insert(points[i].choice);
  }
  CHECK(seen.size() == 24);
  CHECK(points[1].choice == std::vector<std::uint32_t>{0, 0, 1});
  CHECK(points[2].choice == std::vector<std::uint32_t>{0, 1, 0});
  CHECK(points[23].choice == std::vector<std::uint32_t>{2, 3, 1});
}

TEST_CASE("zip: the i-th value of every axis together", "[sweep]") {
  const auto points = expand_points(spec_with(SweepMode::zip, {5, 5}));
  REQUIRE(points.size() == 5);
  for (std::uint32_t i = 0; i < 5; ++i) CHECK(points[i].choice == std::vector<std::uint32_t>{i, i});
}

TEST_CASE("random: samples points, in range, the same for the same seed", "[sweep]") {
  const auto a = expand_points(spec_with(SweepMode::random, {7, 3}, 250, 42));
  const auto b = expand_points(spec_with(SweepMode::random, {7, 3}, 250, 42));
  const auto c = expand_points(spec_with(SweepMode::random, {7, 3}, 250, 43));
  REQUIRE(a.size() == 250);
  CHECK(a == b);
  CHECK_FALSE(a == c);
  std::map<std::uint32_t, int> hist;
  for (const auto& p : a) {
    CHECK(p.choice[0] < 7);
    CHECK(p.choice[1] < 3);
    ++hist[p.choice[0]];
  }
  CHECK(hist.size() == 7);  // 250 draws over 7 values reach every value
}

TEST_CASE("lhs: every stratum once, so each value equally often", "[sweep]") {
  // 12 samples over axes of 4, 3 and 12 values: each value 3, 4 and 1 times.
  const auto a = expand_points(spec_with(SweepMode::lhs, {4, 3, 12}, 12, 7));
  const auto b = expand_points(spec_with(SweepMode::lhs, {4, 3, 12}, 12, 7));
  REQUIRE(a.size() == 12);
  CHECK(a == b);
  for (std::size_t axis = 0; axis < 3; ++axis) {
    std::map<std::uint32_t, int> hist;
    for (const auto& p : a) ++hist[p.choice[axis]];
    const int n = axis == 0 ? 4 : axis == 1 ? 3 : 12;
    CHECK(static_cast<int>(hist.size()) == n);
    for (const auto& [v, count] : hist) CHECK(count == 12 / n);
  }
  CHECK_FALSE(a == expand_points(spec_with(SweepMode::lhs, {4, 3, 12}, 12, 8)));
}

TEST_CASE("path, model and machine axes swap whole objects, tdm keys apply", "[sweep]") {
  const Loader loader({kWorkloads});
  SweepFile f("swap", "scenario: qwen3-30b-a3b-decode-mi500x-tdm\n"
                      "axes:\n"
                      "  model: [qwen3-30b-a3b, mixtral-8x7b]\n"
                      "  path: [software, tdm, both]\n"
                      "  machine.tdm.slot_length: [1us, 2us]\n");
  const auto sweep = loader.resolve_sweep(f.path);
  const auto points = expand_points(sweep.sweep.spec);
  REQUIRE(points.size() == 12);
  std::vector<ResolvedPoint> resolved;
  resolve_all_points(loader, sweep, points,
                     [&](const SweepPoint&, const ResolvedPoint& r) { resolved.push_back(r); });
  REQUIRE(resolved.size() == 12);
  CHECK(resolved[0].scenario.model.spec.name == "qwen3-30b-a3b");
  CHECK(resolved[6].scenario.model.spec.name == "mixtral-8x7b");
  CHECK(resolved[6].scenario.scenario.spec.model == "mixtral-8x7b");
  CHECK(resolved[0].paths == std::vector<std::string>{"software"});
  CHECK(resolved[2].paths == std::vector<std::string>{"tdm"});
  CHECK(resolved[4].paths == std::vector<std::string>{"software", "tdm"});
  CHECK(resolved[0].scenario.machine.spec.tdm->slot_length != resolved[1].scenario.machine.spec.tdm->slot_length);
  CHECK(canonical_inputs(resolved[0]) != canonical_inputs(resolved[1]));
}

TEST_CASE("a machine axis: both keeps each machine's paths, tdm on a machine without one is refused",
          "[sweep]") {
  const Loader loader({kWorkloads});
  SweepFile ok("machines", "scenario: qwen3-30b-decode-h200\naxes:\n"
                           "  machine: [h200, mi500x-tdm]\n  path: [both]\n");
  const auto sweep = loader.resolve_sweep(ok.path);
  std::vector<std::size_t> paths;
  resolve_all_points(loader, sweep, expand_points(sweep.sweep.spec),
                     [&](const SweepPoint&, const ResolvedPoint& r) { paths.push_back(r.paths.size()); });
  CHECK(paths == std::vector<std::size_t>{1, 2});

  SweepFile bad("machines_tdm", "scenario: qwen3-30b-decode-h200\naxes:\n"
                                "  machine: [h200, mi500x-tdm]\n  path: [tdm]\n");
  const auto sweep2 = loader.resolve_sweep(bad.path);
  const auto d = first_config_error([&] { resolve_all_points(loader, sweep2, expand_points(sweep2.sweep.spec), [](auto&, auto&) {}); });
  CHECK(d.key == "axes.path");
  CHECK(d.where.line == 6);
  CHECK_THAT(d.message, Catch::Contains("machine h200 has no tdm: section"));
}

TEST_CASE("a tdm axis on a machine without a TDM unit names the key and line", "[sweep]") {
  const Loader loader({kWorkloads});
  SweepFile f("tdm_on_h200", "scenario: qwen3-30b-decode-h200\naxes:\n"
                             "  scenario.tokens: [1, 2]\n  machine.tdm.slots: [4, 8]\n");
  const auto d = first_config_error([&] { loader.resolve_sweep(f.path); });
  CHECK(d.key == "axes.machine.tdm.slots");
  CHECK(d.where.line == 6);
  CHECK_THAT(d.message, Catch::Contains("has no tdm: section"));
}

TEST_CASE("a point invalid only as a combination is reported at its line", "[sweep]") {
  const Loader loader({kWorkloads});
  // Each value is fine on the base model (a small one); DeepSeek-V3 at 2M tokens
  // (about 227 GB) does not fit the H200's 141 GB.
  SweepFile f("combo", "scenario: qwen3-30b-decode-h200\naxes:\n"
                       "  model: [qwen3-30b-a3b, deepseek-v3]\n  scenario.tokens: [1, 2000000]\n");
  const auto sweep = loader.resolve_sweep(f.path);
  const auto d = first_config_error([&] { resolve_all_points(loader, sweep, expand_points(sweep.sweep.spec), [](auto&, auto&) {}); });
  CHECK(d.key == "axes.scenario.tokens");
  CHECK(d.where.line == 6);
  CHECK_THAT(d.message, Catch::Contains("point 3 (model=deepseek-v3, scenario.tokens=2000000)"));
}

TEST_CASE("every point of every shipped sweep resolves", "[sweep][shipped]") {
  const Loader loader({kWorkloads});
  for (const auto& e : fs::directory_iterator(kWorkloads / "sweeps")) {
    INFO(e.path());
    const auto sweep = loader.resolve_sweep(e.path());
    const auto points = expand_points(sweep.sweep.spec);
    std::size_t n = 0;
    CHECK_NOTHROW(resolve_all_points(loader, sweep, points, [&](auto&, auto&) { ++n; }));
    CHECK(n == points.size());
  }
}

TEST_CASE("point count: counted without expanding, saturating instead of overflowing", "[sweep]") {
  CHECK(sweep_point_count(spec_with(SweepMode::grid, {3, 4, 2})) == 24);
  CHECK(sweep_point_count(spec_with(SweepMode::grid, {1000, 100})) == kMaxSweepPoints);
  CHECK(sweep_point_count(spec_with(SweepMode::grid, {1000, 101})) == kMaxSweepPoints + 1);
  // 1000^7 = 10^21 overflows 64 bits; a wrapped product could look small.
  CHECK(sweep_point_count(spec_with(SweepMode::grid, {1000, 1000, 1000, 1000, 1000, 1000, 1000})) ==
        kMaxSweepPoints + 1);
  CHECK(sweep_point_count(spec_with(SweepMode::zip, {5, 5})) == 5);
  CHECK(sweep_point_count(spec_with(SweepMode::lhs, {3}, 77)) == 77);
  // A spec built in code past the limit is refused before anything is allocated.
  CHECK_THROWS_AS(expand_points(spec_with(SweepMode::grid, {1000, 1000, 1000, 1000, 1000, 1000, 1000})),
                  std::invalid_argument);
}
