#include "apps/tdmsim/ep_layer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/core.h>

#include "descriptors/plan/routing.h"
#include "sim/core/sim_error.h"
#include "sim/programs/moe_kernels.h"

namespace tdmsim::cli {
namespace {

using config::Json;


// Bytes of one token's row on the wire: the dispatch sends the layer input
// in the activation dtype (scales and the top-k ids are not counted), the
// combine returns each rank's weighted sum over its experts in bf16.
constexpr double kCombineBytesPerElement = 2.0;

Json collective_json(const net::CollectiveResult& r) {
  return {{"time_us", r.time_s * 1e6},           {"bandwidth_us", r.bandwidth_s * 1e6},
          {"latency_us", r.latency_s * 1e6},     {"overhead_us", r.overhead_s * 1e6},
          {"bottleneck", r.bottleneck},          {"bottleneck_bytes", r.bottleneck_bytes}};
}

Json spread(const std::vector<double>& v) {
  const double sum = std::accumulate(v.begin(), v.end(), 0.0);
  const double mean = v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  const double mx = v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
  return {{"max", mx}, {"mean", mean}, {"max_over_mean", mean > 0 ? mx / mean : 0.0}};
}

}  // namespace

EpSetup ep_setup(const config::ResolvedScenario& sc) {
  const ScenarioSpec& s = sc.scenario.spec;
  const ModelSpec& model = sc.model.spec;
  const MachineSpec& m = sc.machine.spec;
  EpSetup e;
  e.gpus = s.parallel.ep;
  if (e.gpus > 1) {
    // The scenario checks refused groups the interconnect cannot hold.
    const InterconnectSpec& ic = *m.interconnect;
    e.nodes = e.gpus <= ic.gpus_per_node ? 1 : e.gpus / ic.gpus_per_node;
  }
  plan::CapacityReport capacity;
  const plan::Routing routing = plan::route(sc, &capacity);
  const auto load = plan::expert_load(routing, model.experts);
  e.map = plan::place_experts(s.parallel.placement, model.experts, e.gpus, s.parallel.redundant_experts, load);
  const auto where = plan::pick_ranks(routing, e.map, s.tokens, model.top_k);
  e.dispatch_tokens = plan::dispatch_tokens(where, s.tokens, model.top_k, e.gpus);
  e.picks.assign(e.gpus, 0);
  for (const auto r : where) {
    if (r < e.gpus) ++e.picks[r];
  }
  for (std::uint32_t r = 0; r < e.gpus; ++r) {
    std::vector<std::uint32_t> tokens;
    e.plans.push_back(plan::rank_plan(sc, routing, capacity, e.map, r, &tokens));
    e.tokens.push_back(std::move(tokens));
    const plan::Range own = plan::own_tokens(s.tokens, e.gpus, r);
    e.own.push_back(own.end - own.begin);
  }
  const double in_row = model.hidden_size * sim::programs::element_bytes(s.dtype);
  const double out_row = model.hidden_size * kCombineBytesPerElement;
  e.dispatch = net::TrafficMatrix(e.gpus);
  e.combine = net::TrafficMatrix(e.gpus);
  for (std::uint32_t a = 0; a < e.gpus; ++a) {
    for (std::uint32_t b = 0; b < e.gpus; ++b) {
      const double n = static_cast<double>(e.dispatch_tokens[std::size_t(a) * e.gpus + b]);
      e.dispatch.at(a, b) = n * in_row;
      e.combine.at(b, a) = n * out_row;
    }
  }
  return e;
}

EpPathRun run_ep_path(const config::ResolvedScenario& sc, const EpSetup& setup, const std::string& path,
                      const sim::SimOptions& opts) {
  const MachineSpec& m = sc.machine.spec;
  const std::uint32_t n = setup.gpus;
  EpPathRun out;
  out.path = path;
  sim::SimOptions rank_opts = opts;
  rank_opts.trace = false;  // the layer's trace is one track per GPU, built below
  for (std::uint32_t r = 0; r < n; ++r) {
    EpRankRun rr;
    rr.run = run_path_fresh(setup.plans[r], m, path, rank_opts);
    const auto& t = rr.run.timings;
    sim::Tick routed = t.front().launch;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (rr.run.stages[i] == "routing") routed = t[i].end;
    }
    rr.before_s = sim::tick_seconds(routed - t.front().launch);
    rr.after_s = sim::tick_seconds(t.back().end - routed);
    out.ranks.push_back(std::move(rr));
  }
  if (n > 1) {
    const net::Placement where{n, setup.nodes};
    out.dispatch = net::all_to_all(*m.interconnect, where, setup.dispatch, net::Algorithm::direct);
    out.combine = net::all_to_all(*m.interconnect, where, setup.combine, net::Algorithm::direct);
  } else {
    out.dispatch.rank_time_s = out.combine.rank_time_s = {0.0};
    out.dispatch.sent_bytes = out.dispatch.received_bytes = {0.0};
    out.combine.sent_bytes = out.combine.received_bytes = {0.0};
  }
  double before = 0, after = 0, compute_max = -1;
  for (std::uint32_t r = 0; r < n; ++r) {
    before = std::max(before, out.ranks[r].before_s);
    after = std::max(after, out.ranks[r].after_s);
    if (out.ranks[r].run.total_s > compute_max) {
      compute_max = out.ranks[r].run.total_s;
      out.slowest = r;
    }
  }
  // One GPU: its own time, bit for bit (no collective, nothing to wait for).
  out.total_s = n == 1 ? out.ranks[0].run.total_s : before + out.dispatch.time_s + after + out.combine.time_s;

  Json ranks = Json::array();
  std::vector<double> compute, waits;
  for (std::uint32_t r = 0; r < n; ++r) {
    const EpRankRun& rr = out.ranks[r];
    const double own_comm = out.dispatch.rank_time_s[r] + out.combine.rank_time_s[r];
    const double wait = std::max(0.0, out.total_s - rr.run.total_s - own_comm);
    compute.push_back(rr.run.total_s * 1e6);
    waits.push_back(wait * 1e6);
    const auto& p = setup.plans[r];
    ranks.push_back({{"rank", r},
                     {"node", r / (n / setup.nodes)},
                     {"own_tokens", setup.own[r]},
                     {"tokens", p.shape.tokens},
                     {"received_tokens", p.shape.tokens - setup.own[r]},
                     {"picks", setup.picks[r]},
                     {"compute_us", rr.run.total_s * 1e6},
                     {"before_dispatch_us", rr.before_s * 1e6},
                     {"after_dispatch_us", rr.after_s * 1e6},
                     {"dispatch", {{"sent_bytes", out.dispatch.sent_bytes[r]},
                                   {"received_bytes", out.dispatch.received_bytes[r]},
                                   {"us", out.dispatch.rank_time_s[r] * 1e6}}},
                     {"combine", {{"sent_bytes", out.combine.sent_bytes[r]},
                                  {"received_bytes", out.combine.received_bytes[r]},
                                  {"us", out.combine.rank_time_s[r] * 1e6}}},
                     {"wait_us", wait * 1e6},
                     {"metrics", rr.run.metrics}});
  }
  // The path's entry: the slowest rank's single-GPU metrics (stages, floor,
  // utilisation: what a sweep row reads) with the layer's time, and "ep".
  out.metrics = out.ranks[out.slowest].run.metrics;
  out.metrics["total_us"] = out.total_s * 1e6;
  out.metrics["rank_total_us"] = out.ranks[out.slowest].run.total_s * 1e6;
  if (n > 1) out.metrics["over_floor"] = out.total_s / (out.metrics["floor"]["us"].get<double>() * 1e-6);
  const Json cs = spread(compute);
  out.metrics["ep"] = {{"gpus", n},
                       {"nodes", setup.nodes},
                       {"slowest_rank", out.slowest},
                       {"overlap", "none"},
                       {"before_dispatch_max_us", before * 1e6},
                       {"after_dispatch_max_us", after * 1e6},
                       {"compute_max_us", cs["max"]},
                       {"compute_mean_us", cs["mean"]},
                       {"compute_max_over_mean", cs["max_over_mean"]},
                       {"wait_max_us", *std::max_element(waits.begin(), waits.end())},
                       {"dispatch", collective_json(out.dispatch)},
                       {"combine", collective_json(out.combine)},
                       {"ranks", ranks}};
  if (opts.trace) {
    // One track per GPU on the layer's clock: its routing kernels, the wait
    // for the last rank, the dispatch, its sort and expert kernels, the wait,
    // the combine.
    Json ev = Json::array();
    const std::uint64_t pid = 1;
    ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", "expert parallel"}}}});
    const auto slice = [&](std::uint32_t tid, const std::string& name, double t0_s, double t1_s) {
      if (t1_s <= t0_s) return;
      ev.push_back({{"ph", "X"}, {"pid", pid}, {"tid", tid}, {"name", name}, {"ts", t0_s * 1e6},
                    {"dur", (t1_s - t0_s) * 1e6}});
    };
    const double d0 = before, d1 = before + out.dispatch.time_s, c0 = d1 + after;
    for (std::uint32_t r = 0; r < n; ++r) {
      const EpRankRun& rr = out.ranks[r];
      ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", r},
                    {"args", {{"name", fmt::format("gpu[{}]", r)}}}});
      const auto& t = rr.run.timings;
      const sim::Tick t0 = t.front().launch;
      for (std::size_t i = 0; i < t.size(); ++i) {
        const bool early = rr.run.stages[i] == "routing";
        const double shift = early ? 0.0 : d1 - rr.before_s;
        slice(r, rr.run.stages[i] + ": " + t[i].name, sim::tick_seconds(t[i].launch - t0) + shift,
              sim::tick_seconds(t[i].end - t0) + shift);
      }
      slice(r, "wait", rr.before_s, d0);
      slice(r, "dispatch", d0, d1);
      slice(r, "wait", d1 + rr.after_s, c0);
      slice(r, "combine", c0, out.total_s);
    }
    Json doc;
    doc["traceEvents"] = std::move(ev);
    doc["displayTimeUnit"] = "ns";
    out.trace = doc.dump() + "\n";
  }
  return out;
}

Json ep_layer_summary(const config::ResolvedScenario& sc, const EpSetup& setup) {
  const ScenarioSpec& s = sc.scenario.spec;
  const std::uint32_t n = setup.gpus;
  Json ranks = Json::array();
  std::vector<double> picks;
  for (std::uint32_t r = 0; r < n; ++r) {
    std::vector<std::uint32_t> experts(setup.map.slot_expert.begin() + std::ptrdiff_t(r) * setup.map.slots,
                                       setup.map.slot_expert.begin() + std::ptrdiff_t(r + 1) * setup.map.slots);
    picks.push_back(static_cast<double>(setup.picks[r]));
    ranks.push_back({{"rank", r},
                     {"own_tokens", setup.own[r]},
                     {"tokens", setup.plans[r].shape.tokens},
                     {"picks", setup.picks[r]},
                     {"experts", experts},
                     {"layer", layer_summary(setup.plans[r])}});
  }
  Json matrix = Json::array();
  for (std::uint32_t a = 0; a < n; ++a) {
    matrix.push_back(std::vector<std::uint64_t>(setup.dispatch_tokens.begin() + std::ptrdiff_t(a) * n,
                                                setup.dispatch_tokens.begin() + std::ptrdiff_t(a + 1) * n));
  }
  const Json ps = spread(picks);
  // The whole draw's per-expert load (every routed expert, all ranks).
  const auto& p0 = setup.plans.front();
  std::vector<std::uint64_t> load(sc.model.spec.experts, 0);
  for (std::uint32_t r = 0; r < n; ++r) {
    const auto& pr = setup.plans[r];
    for (std::uint32_t local = 0; local < setup.map.slots; ++local) {
      load[setup.map.slot_expert[r * setup.map.slots + local]] += pr.layout.expert_rows[local];
    }
  }
  std::vector<double> lv(load.begin(), load.end());
  const Json ls = spread(lv);
  double sq = 0;
  for (double v : lv) sq += (v - ls["mean"].get<double>()) * (v - ls["mean"].get<double>());
  const double mean = ls["mean"].get<double>();
  const double cv = mean > 0 ? std::sqrt(sq / static_cast<double>(lv.size())) / mean : 0.0;
  std::uint32_t idle = 0;
  for (auto v : load) idle += v == 0 ? 1 : 0;
  return {{"tokens", s.tokens},
          {"load_spread", {{"max_over_mean", ls["max_over_mean"]}, {"cv", cv},
                           {"experts_without_tokens", idle}, {"experts", load.size()}}},
          {"capacity", capacity_summary(p0.capacity)},
          {"ep", {{"gpus", n},
                  {"nodes", setup.nodes},
                  {"placement", std::string(config::enum_name(s.parallel.placement))},
                  {"redundant_experts", s.parallel.redundant_experts},
                  {"slots_per_gpu", setup.map.slots},
                  {"rank_picks_max_over_mean", ps["max_over_mean"]},
                  {"dispatch_tokens", matrix},
                  {"ranks", ranks}}}};
}

void print_ep_path(const EpPathRun& r, const EpSetup& setup) {
  const Json& ep = r.metrics["ep"];
  fmt::print("{:<9} {:>4} {:>7} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}\n", r.path, "gpu", "tokens", "picks",
             "compute us", "send MB", "recv MB", "comm us", "wait us");
  for (const auto& k : ep["ranks"]) {
    const double sent = k["dispatch"]["sent_bytes"].get<double>() + k["combine"]["sent_bytes"].get<double>();
    const double recv = k["dispatch"]["received_bytes"].get<double>() + k["combine"]["received_bytes"].get<double>();
    fmt::print("{:<9} {:>4} {:>7} {:>7} {:>10.2f} {:>10.3f} {:>10.3f} {:>10.2f} {:>10.2f}{}\n", "",
               k["rank"].get<std::uint32_t>(), k["tokens"].get<std::uint32_t>(), k["picks"].get<std::uint64_t>(),
               k["compute_us"].get<double>(), sent / 1e6, recv / 1e6,
               k["dispatch"]["us"].get<double>() + k["combine"]["us"].get<double>(), k["wait_us"].get<double>(),
               k["rank"].get<std::uint32_t>() == r.slowest ? "  slowest" : "");
  }
  fmt::print("          layer {:.2f} us = routing {:.2f} + dispatch {:.2f} + experts {:.2f} + combine {:.2f} "
             "(slowest rank's each; no overlap)\n",
             r.total_s * 1e6, ep["before_dispatch_max_us"].get<double>(), ep["dispatch"]["time_us"].get<double>(),
             ep["after_dispatch_max_us"].get<double>(), ep["combine"]["time_us"].get<double>());
  fmt::print("          dispatch bottleneck {}, combine bottleneck {}; rank compute max/mean {:.2f}\n",
             r.dispatch.bottleneck.empty() ? "none" : r.dispatch.bottleneck,
             r.combine.bottleneck.empty() ? "none" : r.combine.bottleneck,
             ep["compute_max_over_mean"].get<double>());
  (void)setup;
}

}  // namespace tdmsim::cli
