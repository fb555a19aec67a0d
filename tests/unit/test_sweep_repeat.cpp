// Repeated draws and one-at-a-time sensitivity sweeps: Student-t quantiles and
// intervals (apps/tdmsim/sweep_stats.*), the mean of draws' results, mode oat
// expansion and its base point, relative axis values (xF), the repeat: limits,
// and the sensitivity ranking (apps/tdmsim/sweep_sensitivity.*).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "apps/tdmsim/sweep_sensitivity.h"
#include "apps/tdmsim/sweep_stats.h"
#include "workloads/config/sweep_points.h"
#include "sweep_test_util.h"
#include "test_paths.h"

using namespace tdmsim;
using namespace tdmsim::config;
using tdmsim::cli::mean_ci95;
using tdmsim::cli::student_t_975;
namespace fs = std::filesystem;

namespace {

using tdmsim::test::kWorkloads;

using tdmsim::test::first_config_error;
using tdmsim::test::SweepFile;

}  // namespace

TEST_CASE("Student t 0.975 quantiles match the published table", "[sweep][repeat]") {
  // Quantiles to 4 decimals (any statistics table, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
  const std::pair<std::uint64_t, double> table[] = {{1, 12.7062}, {2, 4.3027}, {3, 3.1824}, {4, 2.7764},
                                                    {9, 2.2622},  {19, 2.0930}, {30, 2.0423}, {100, 1.9840}};
  for (const auto& [df, t] : table) {
    INFO("df " << df);
    CHECK(student_t_975(df) == Approx(t).margin(1e-4));
  }
  CHECK(student_t_975(100000) == Approx(1.95996).margin(1e-4));  // the normal quantile
}

TEST_CASE("mean and 95% interval of draws", "[sweep][repeat]") {
  const auto one = mean_ci95({5.0});
  CHECK(one.mean == 5.0);
  CHECK(one.low == 5.0);
  CHECK(one.high == 5.0);
  const auto r = mean_ci95({1.0, 2.0, 3.0, 6.0});
  CHECK(r.mean == Approx(3.0));
  CHECK(r.sd == Approx(std::sqrt(14.0 / 3.0)));
  const double half = student_t_975(3) * std::sqrt(14.0 / 3.0) / 2.0;
  CHECK(r.low == Approx(3.0 - half));
  CHECK(r.high == Approx(3.0 + half));
  const auto flat = mean_ci95({2.0, 2.0, 2.0});
  CHECK(flat.sd == 0.0);
  CHECK(flat.low == flat.high);
}

TEST_CASE("the mean of draws averages numbers that differ and keeps the rest", "[sweep][repeat]") {
  const Json a = {{"total_us", 10.0}, {"block_m", 32}, {"bound", "memory"}, {"stages", {{{"time_us", 1.0}}}}};
  const Json b = {{"total_us", 14.0}, {"block_m", 32}, {"bound", "compute"}, {"stages", {{{"time_us", 3.0}}}}};
  const Json m = cli::mean_of({&a, &b});
  CHECK(m["total_us"].get<double>() == 12.0);
  CHECK(m["block_m"].is_number_integer());
  CHECK(m["block_m"].get<int>() == 32);
  CHECK(m["bound"] == "memory");  // a text that differs: draw 0's
  CHECK(m["stages"][0]["time_us"].get<double>() == 2.0);
}

TEST_CASE("merge_draws: seeds, per-path intervals, the paired speedup, every draw kept", "[sweep][repeat]") {
  std::vector<Json> draws;
  const double sw[] = {10, 12, 14}, tdm[] = {5, 5, 7};
  for (int r = 0; r < 3; ++r) {
    draws.push_back({{"point", 4}, {"seed", 7 + r}, {"layer", {{"padding_waste", 0.1 * r}}},
                     {"paths", {{{"path", "software"}, {"total_us", sw[r]}}, {{"path", "tdm"}, {"total_us", tdm[r]}}}}});
  }
  const Json m = cli::merge_draws(draws);
  CHECK(m["repeat"]["n"] == 3);
  CHECK(m["repeat"]["seeds"] == Json({7, 8, 9}));
  CHECK(m["paths"][0]["total_us"].get<double>() == Approx(12.0));
  CHECK(m["repeat"]["total_us"][1]["mean"].get<double>() == Approx(17.0 / 3));
  // The speedup is the mean of per-draw ratios (2, 2.4, 2), not a ratio of means.
  CHECK(m["repeat"]["tdm_speedup"]["mean"].get<double>() == Approx((2.0 + 2.4 + 2.0) / 3));
  CHECK(m["repeat"]["tdm_speedup"]["ci95_low"].get<double>() < m["repeat"]["tdm_speedup"]["mean"].get<double>());
  REQUIRE(m["draws"].size() == 3);
  CHECK(m["draws"][2]["paths"][1]["total_us"].get<double>() == 7.0);
  CHECK(m["draws"][1]["seed"] == 8);
}

TEST_CASE("oat: the base, then each axis's values alone - relative values scale the base", "[sweep][oat]") {
  const Loader loader({kWorkloads});
  SweepFile f("oat", "scenario: qwen3-30b-a3b-decode-mi500x-tdm\n"
                     "mode: oat\n"
                     "axes:\n"
                     "  machine.compute.clock: [x0.8, x1.2]\n"
                     "  machine.tdm.queue_depth: [x1.2]\n"
                     "  machine.memory.hbm.bandwidth: [10TB/s, x0.5, 30TB/s]\n");
  const auto sweep = loader.resolve_sweep(f.path);
  const auto points = expand_points(sweep.sweep.spec);
  REQUIRE(points.size() == 7);
  REQUIRE(sweep_point_count(sweep.sweep.spec) == 7);
  CHECK(point_values(sweep.sweep.spec, points[0]).empty());
  CHECK(point_values(sweep.sweep.spec, points[3]) ==
        std::vector<std::pair<std::string, std::string>>{{"machine.tdm.queue_depth", "x1.2"}});
  std::vector<ResolvedPoint> r;
  resolve_all_points(loader, sweep, points, [&](const SweepPoint&, const ResolvedPoint& p) { r.push_back(p); });
  REQUIRE(r.size() == 7);
  const Json base = to_json(r[0].scenario.machine.spec);
  CHECK(base == to_json(sweep.base.machine.spec));  // point 0 is the base, untouched
  CHECK(to_json(r[1].scenario.machine.spec)["compute"]["clock"] == "1.92GHz");  // 2400MHz x0.8
  CHECK(to_json(r[2].scenario.machine.spec)["compute"]["clock"] == "2.88GHz");
  CHECK(to_json(r[2].scenario.machine.spec)["memory"] == base["memory"]);  // one parameter at a time
  CHECK(r[3].scenario.machine.spec.tdm->queue_depth == 5);  // 4 x1.2 = 4.8, rounded
  CHECK(to_json(r[5].scenario.machine.spec)["memory"]["hbm"]["bandwidth"] == "9.8TB/s");  // 19.6 x0.5
}

TEST_CASE("a relative value on a non-numeric parameter is refused at its line", "[sweep][oat]") {
  const Loader loader({kWorkloads});
  SweepFile f("oat_bad", "scenario: qwen3-30b-a3b-decode-mi500x-tdm\n"
                         "mode: oat\n"
                         "axes:\n"
                         "  machine.tdm.default_policy: [x2]\n");
  const auto d = first_config_error([&] { loader.resolve_sweep(f.path); });
  CHECK(d.where.line == 6);
  CHECK(d.key == "axes.machine.tdm.default_policy");
  CHECK_THAT(d.message, Catch::Contains("needs a numeric parameter"));
}

TEST_CASE("repeat: points times draws over the run limit is refused at repeat", "[sweep][repeat]") {
  const Loader loader({kWorkloads});
  SweepFile f("too_many_runs", "scenario: qwen3-30b-decode-h200\n"
                               "repeat: 1000\n"
                               "axes:\n"
                               "  scenario.tokens: range(1, 1001, +1)\n");
  const auto d = first_config_error([&] { loader.resolve_sweep(f.path); });
  CHECK(d.key == "repeat");
  CHECK(d.where.line == 4);
  CHECK_THAT(d.message, Catch::Contains("more than the limit of 1000000"));
}

TEST_CASE("sensitivity ranking: by swing of the speedup, largest first", "[sweep][oat]") {
  SweepSpec spec;
  spec.name = "t";
  spec.mode = SweepMode::oat;
  spec.repeat = 1;
  for (const auto& [key, vals] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"machine.a", {"x0.8", "x1.2"}}, {"machine.b", {"x0.8", "x1.2"}}}) {
    SweepAxis ax;
    ax.key = key;
    ax.values = vals;
    spec.axes.items.push_back(ax);
  }
  // speedups: base 2.0; a: 1.9, 2.1 (swing 0.2); b: 1.0, 2.5 (swing 1.5)
  const double sw[] = {20, 19, 21, 10, 25};
  std::vector<Json> rows;
  for (std::uint64_t p = 0; p < 5; ++p) {
    rows.push_back({{"point", p}, {"path", "software"}, {"metrics", {{"total_us", sw[p]}}}});
    rows.push_back({{"point", p}, {"path", "tdm"}, {"metrics", {{"total_us", 10.0}}}});
  }
  const Json rank = cli::sensitivity_ranking(spec, rows);
  REQUIRE(rank.is_object());
  CHECK(rank["base"]["speedup"].get<double>() == Approx(2.0));
  CHECK(rank["parameters"][0]["parameter"] == "machine.b");
  CHECK(rank["parameters"][0]["swing"].get<double>() == Approx(1.5));
  CHECK(rank["parameters"][1]["rank"] == 2);
  const std::string csv = cli::sensitivity_csv(rank);
  CHECK(csv.rfind("rank,parameter,base_speedup,low_value,low_speedup,high_value,high_speedup", 0) == 0);
  CHECK_THAT(csv, Catch::Contains("\n1,machine.b,2,x0.8,1,x1.2,2.5,"));
  rows.pop_back();  // a point without its TDM row: nothing to rank
  CHECK(cli::sensitivity_ranking(spec, rows).is_null());
}

TEST_CASE("oat jitter: factor axes also run at x(1 - J) and x(1 + J), after their own values", "[sweep][oat]") {
  const Loader loader({kWorkloads});
  SweepFile f("oat_jitter", "scenario: qwen3-30b-a3b-decode-mi500x-tdm\n"
                            "mode: oat\n"
                            "jitter: 0.01\n"
                            "axes:\n"
                            "  machine.compute.clock: [x0.8, x1.2]\n"
                            "  machine.tdm.movers_per_cu: [1, 2]\n"
                            "  machine.memory.hbm.bandwidth: [x0.5]\n"
                            "  machine.tdm.queue_depth: [x0.5, x2]\n");
  const auto sweep = loader.resolve_sweep(f.path);
  const SweepSpec& spec = sweep.sweep.spec;
  // base + clock (2 + 2 jitter) + movers (2, absolute values: no jitter) + bandwidth (1 + 2)
  // + queue_depth (2; an integer parameter: its jitter values are dropped)
  const auto points = expand_points(spec);
  REQUIRE(points.size() == 12);
  CHECK(sweep_point_count(spec) == 12);
  CHECK(spec.axes.items[0].jitter_values == 2);
  CHECK(spec.axes.items[1].jitter_values == 0);
  CHECK(spec.axes.items[3].jitter_values == 0);
  CHECK(spec.axes.items[3].values.size() == 2);
  CHECK(point_values(spec, points[3]) ==
        std::vector<std::pair<std::string, std::string>>{{"machine.compute.clock", "x0.99"}});
  CHECK(point_values(spec, points[4]) ==
        std::vector<std::pair<std::string, std::string>>{{"machine.compute.clock", "x1.01"}});
  // The jitter points: clock's x0.99 / x1.01 (3, 4) and bandwidth's (8, 9); not the base, nor the file's values.
  std::vector<std::uint64_t> jittered;
  for (const auto& p : points) {
    if (jitter_point(spec, p)) jittered.push_back(p.index);
  }
  CHECK(jittered == std::vector<std::uint64_t>{3, 4, 8, 9});
  std::vector<ResolvedPoint> r;
  resolve_all_points(loader, sweep, points, [&](const SweepPoint&, const ResolvedPoint& p) { r.push_back(p); });
  REQUIRE(r.size() == 12);
  CHECK(to_json(r[3].scenario.machine.spec)["compute"]["clock"] == "2376MHz");  // 2400MHz x0.99
  // The file's values only in the spec's JSON (the sweep's definition): the jitter is its own key.
  const Json j = to_json(spec);
  CHECK(j["axes"]["machine.compute.clock"] == Json::array({"x0.8", "x1.2"}));
  CHECK(j["jitter"].get<double>() == Approx(0.01));
  // Loading twice adds nothing twice.
  SweepSpec again = spec;
  add_jitter_values(again);
  CHECK(again.axes.items[0].values.size() == 4);
}

TEST_CASE("oat jitter: refused without mode oat, or without a factor axis", "[sweep][oat]") {
  const Loader loader({kWorkloads});
  // A sweep of `scenario` with `head` (its mode and jitter) and one axis: its first error.
  const auto refusal = [&](const char* name, const char* scenario, const char* head, const char* axis) {
    SweepFile f(name, std::string("scenario: ") + scenario + "\n" + head + "axes:\n  " + axis + "\n");
    return first_config_error([&] { loader.resolve_sweep(f.path); });
  };
  const char* qwen = "qwen3-30b-a3b-decode-mi500x-tdm";
  const auto d = refusal("jitter_grid", qwen, "jitter: 0.01\n", "machine.compute.clock: [x0.8, x1.2]");
  CHECK(d.key == "jitter");
  CHECK_THAT(d.message, Catch::Contains("needs mode oat"));
  const auto e = refusal("jitter_none", qwen, "mode: oat\njitter: 0.01\n", "machine.tdm.movers_per_cu: [1, 2]");
  CHECK(e.key == "jitter");
  CHECK_THAT(e.message, Catch::Contains("has none"));
  CHECK(refusal("jitter_big", qwen, "mode: oat\njitter: 0.2\n", "machine.compute.clock: [x0.8]").key == "jitter");
  // Only integer parameters to move (their jitter values are dropped): refused at the key.
  const auto g = refusal("jitter_ints", qwen, "mode: oat\njitter: 0.01\n", "machine.tdm.slots: [x0.5, x2]");
  CHECK(g.key == "jitter");
  CHECK(g.where.line == 5);  // (SweepFile puts kind and name first)
  CHECK_THAT(g.message, Catch::Contains("moves no parameter"));
  // A base that runs one path has no TDM speedup to measure the noise of.
  CHECK_THAT(refusal("jitter_one_path", "qwen3-30b-decode-h200", "mode: oat\njitter: 0.01\n",
                     "machine.compute.clock: [x0.8]")
                 .message,
             Catch::Contains("must run path both"));
}

TEST_CASE("sensitivity ranking with jitter: the noise floor, and which parameters reach beyond it",
          "[sweep][oat]") {
  SweepSpec spec;
  spec.name = "t";
  spec.mode = SweepMode::oat;
  spec.repeat = 1;
  spec.jitter = 0.01;
  for (const auto& key : {"machine.a", "machine.b"}) {
    SweepAxis ax;
    ax.key = key;
    ax.values = {"x0.8", "x1.2"};
    spec.axes.items.push_back(ax);
  }
  add_jitter_values(spec);
  // base 2.0; a: 1.9, 2.05 (reach 0.1), jitter 1.97, 2.02; b: 1.0, 2.5, jitter 2.0, 2.03.
  // Noise floor: 0.03 (a's x0.99, 2.0 - 1.97; b's x1.01, 2.03 - 2.0).
  const double sw[] = {20, 19, 20.5, 19.7, 20.2, 10, 25, 20, 20.3};
  std::vector<Json> rows;
  for (std::uint64_t p = 0; p < 9; ++p) {
    rows.push_back({{"point", p}, {"path", "software"}, {"metrics", {{"total_us", sw[p]}}}});
    rows.push_back({{"point", p}, {"path", "tdm"}, {"metrics", {{"total_us", 10.0}}}});
  }
  const Json rank = cli::sensitivity_ranking(spec, rows);
  REQUIRE(rank.is_object());
  CHECK(rank["noise_floor"].get<double>() == Approx(0.03));
  CHECK(rank["jitter_points"].size() == 4);
  CHECK(rank["parameters"][0]["parameter"] == "machine.b");
  CHECK(rank["parameters"][0]["values"].size() == 2);  // the jitter is not among its values
  CHECK(rank["parameters"][0]["swing"].get<double>() == Approx(1.5));
  CHECK(rank["parameters"][0]["beyond_noise"] == true);
  CHECK(rank["parameters"][1]["swing"].get<double>() == Approx(0.15));
  CHECK(rank["parameters"][1]["beyond_noise"] == true);  // reach 0.1 > 0.03
  {
    // a at 1.98 and 2.02: swing 0.04 above the floor, reach 0.02 below it: not beyond.
    std::vector<Json> near = rows;
    near[2]["metrics"]["total_us"] = 19.8;
    near[4]["metrics"]["total_us"] = 20.2;
    const Json r2 = cli::sensitivity_ranking(spec, near);
    const Json& a = r2["parameters"][1];
    CHECK(a["parameter"] == "machine.a");
    CHECK(a["swing"].get<double>() == Approx(0.04));
    CHECK(a["beyond_noise"] == false);
  }
  const std::string csv = cli::sensitivity_csv(rank);
  CHECK_THAT(csv, Catch::Contains("swing,swing_fraction,noise_floor,beyond_noise\n"));
  CHECK_THAT(csv, Catch::Contains(",0.03") && Catch::Contains(",yes\n"));
  // Without jitter the two columns are empty.
  SweepSpec plain = spec;
  plain.jitter = 0;
  for (auto& a : plain.axes.items) {
    a.values.resize(a.own_values());
    a.jitter_values = 0;
  }
  std::vector<Json> five(rows.begin(), rows.begin() + 2);
  for (std::uint64_t p : {1u, 2u, 5u, 6u}) {
    five.push_back(rows[2 * p]);
    five.back()["point"] = five.size() / 2;
    five.push_back(rows[2 * p + 1]);
    five.back()["point"] = five.size() / 2 - 1;
  }
  const Json plain_rank = cli::sensitivity_ranking(plain, five);
  REQUIRE(plain_rank.is_object());
  CHECK(plain_rank["noise_floor"].is_null());
  CHECK_THAT(cli::sensitivity_csv(plain_rank), Catch::Contains(",,\n"));
}
