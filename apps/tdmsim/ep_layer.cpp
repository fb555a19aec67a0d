#include "apps/tdmsim/ep_layer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/core.h>

#include "apps/tdmsim/ep_trace.h"
#include "apps/tdmsim/output_dir.h"
#include "descriptors/plan/routing.h"
#include "sim/core/sim_error.h"
#include "sim/core/sim_time.h"
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

namespace {

// The ranks' shares of the draw (of micro-batch `batch`, or all of it) and
// the traffic of its two collectives.
EpSetup share(const config::ResolvedScenario& sc, const plan::Routing& routing, const plan::CapacityReport& capacity,
              const plan::ExpertMap& map, const std::vector<std::uint32_t>& where,
              const std::vector<std::uint8_t>* batch) {
  const ScenarioSpec& s = sc.scenario.spec;
  const ModelSpec& model = sc.model.spec;
  EpSetup e;
  e.gpus = map.ranks;
  e.map = map;
  e.dispatch_tokens = plan::dispatch_tokens(where, s.tokens, model.top_k, e.gpus, batch);
  e.picks.assign(e.gpus, 0);
  for (std::size_t i = 0; i < where.size(); ++i) {
    if (where[i] < e.gpus && (batch == nullptr || (*batch)[i / model.top_k] != 0)) ++e.picks[where[i]];
  }
  for (std::uint32_t r = 0; r < e.gpus; ++r) {
    std::vector<std::uint32_t> tokens;
    e.plans.push_back(plan::rank_plan(sc, routing, capacity, map, r, &tokens, batch));
    e.tokens.push_back(std::move(tokens));
    const plan::Range own = plan::own_tokens(s.tokens, e.gpus, r);
    std::uint32_t owned = own.end - own.begin;
    if (batch != nullptr) {
      owned = static_cast<std::uint32_t>(std::count(batch->begin() + own.begin, batch->begin() + own.end, 1));
    }
    e.own.push_back(owned);
  }
  const double in_row = model.hidden_size * sim::programs::element_bytes(s.dtype);
  const double out_row = model.hidden_size * kCombineBytesPerElement;
  e.dispatch = net::TrafficMatrix(e.gpus);
  e.combine = net::TrafficMatrix(e.gpus);
  const bool gather = s.parallel.combine == EpCombine::all_gather;
  for (std::uint32_t a = 0; a < e.gpus; ++a) {
    for (std::uint32_t b = 0; b < e.gpus; ++b) {
      const double n = static_cast<double>(e.dispatch_tokens[std::size_t(a) * e.gpus + b]);
      e.dispatch.at(a, b) = n * in_row;
      // all_gather: a's output rows (every token it computed on) to every GPU.
      if (gather) e.combine.at(a, b) = e.plans[a].shape.tokens * out_row;
      else e.combine.at(b, a) = n * out_row;
    }
  }
  return e;
}

// The timeline of the ranks' runs `runs[chunk][rank]` with their collectives.
EpTimeline timeline_of(const std::vector<std::vector<EpRankRun>>& runs,
                       const std::vector<net::CollectiveResult>& dispatch,
                       const std::vector<net::CollectiveResult>& combine) {
  std::vector<std::vector<double>> before, after, compute;
  for (const auto& chunk : runs) {
    before.emplace_back();
    after.emplace_back();
    compute.emplace_back();
    for (const EpRankRun& rr : chunk) {
      before.back().push_back(rr.before_s);
      after.back().push_back(rr.after_s);
      compute.back().push_back(rr.run.total_s);
    }
  }
  return ep_timeline(before, after, compute, dispatch, combine);
}

}  // namespace

EpSetup ep_setup(const config::ResolvedScenario& sc) {
  const ScenarioSpec& s = sc.scenario.spec;
  const ModelSpec& model = sc.model.spec;
  const MachineSpec& m = sc.machine.spec;
  if (m.partition) {
    // The dispatch and combine are collectives between whole GPUs, as `tdmsim
    // collective` has them; a partition's share of the links is not modelled.
    // (Here, where run, validate and the Python module's run() all pass.)
    throw BadInput(fmt::format("machine {} ({}) has a partition: section; an expert-parallel layer (parallel.ep > 1 "
                               "or --gpus) runs on whole GPUs (docs/partitions.md): use the whole machine, or "
                               "--one-gpu for one GPU's share", m.name, sc.machine.file.string()));
  }
  std::uint32_t nodes = 1;
  const std::uint32_t tp = s.parallel.ep > 1 ? s.parallel.tp : 1;
  if (s.parallel.ep > 1) {
    // The scenario checks refused groups the interconnect cannot hold.
    const InterconnectSpec& ic = *m.interconnect;
    const std::uint32_t gpus = s.parallel.ep * tp;
    nodes = gpus <= ic.gpus_per_node ? 1 : gpus / ic.gpus_per_node;
  }
  plan::CapacityReport capacity;
  const plan::Routing routing = plan::route(sc, &capacity);
  const auto load = plan::expert_load(routing, model.experts);
  const plan::ExpertMap map =
      plan::place_experts(s.parallel.placement, model.experts, s.parallel.ep, s.parallel.redundant_experts, load);
  const auto where = plan::pick_ranks(routing, map, s.tokens, model.top_k);
  EpSetup e = share(sc, routing, capacity, map, where, nullptr);
  e.nodes = nodes;
  e.tp = tp;
  const std::uint32_t chunks = ep_chunks(s.parallel);
  for (std::uint32_t c = 0; chunks > 1 && c < chunks; ++c) {
    const std::vector<std::uint8_t> batch = plan::chunk_tokens(s.tokens, e.gpus, chunks, c);
    e.chunks.push_back(share(sc, routing, capacity, map, where, &batch));
    e.chunks.back().nodes = nodes;
    e.chunks.back().tp = tp;
  }
  return e;
}

namespace {

// The collectives of one (micro-batch's) share, per rank.
struct EpCollectives {
  net::CollectiveResult dispatch, combine, tp_reduce;
};

// The EP ranks' traffic `m` on the GPUs of the group: member j of rank a
// sends member j of rank b `scale` of what rank a sends rank b.
net::TrafficMatrix on_gpus(const net::TrafficMatrix& m, std::uint32_t tp, double scale) {
  if (tp == 1) return m;
  const std::size_t n = m.gpus();
  net::TrafficMatrix g(n * tp);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      for (std::size_t j = 0; j < tp; ++j) g.at(a * tp + j, b * tp + j) = m.at(a, b) * scale;
    }
  }
  return g;
}

// A GPU-level result seen per rank: its member 0's bytes and times.
net::CollectiveResult per_rank(net::CollectiveResult r, std::uint32_t tp) {
  if (tp == 1) return r;
  const auto pick = [tp](std::vector<double>& v) {
    std::vector<double> out;
    for (std::size_t g = 0; g < v.size(); g += tp) out.push_back(v[g]);
    v = std::move(out);
  };
  pick(r.sent_bytes);
  pick(r.received_bytes);
  pick(r.rank_time_s);
  return r;
}

EpCollectives collectives(const config::ResolvedScenario& sc, const EpSetup& setup) {
  const MachineSpec& m = sc.machine.spec;
  const std::uint32_t n = setup.gpus, tp = setup.tp;
  EpCollectives c;
  if (n == 1) {
    for (net::CollectiveResult* r : {&c.dispatch, &c.combine}) {
      r->rank_time_s = r->sent_bytes = r->received_bytes = {0.0};
    }
    return c;
  }
  const net::Placement where{n * tp, setup.nodes};
  const auto a2a = [&](const net::TrafficMatrix& t) {
    return net::all_to_all(*m.interconnect, where, t, net::Algorithm::direct);
  };
  if (tp == 1) {
    c.dispatch = a2a(setup.dispatch);
    c.combine = a2a(setup.combine);
    return c;
  }
  // Tensor parallel inside experts: every member of a rank computes on all of
  // the rank's tokens with intermediate_size / tp of each expert, so the
  // dispatch reaches each member (member j to member j); the members then sum
  // their partial outputs (bf16 rows of every token the rank computed on):
  // a reduce-scatter (each member sends 1/tp of its rows to each other), and
  // for all_reduce an all-gather of the summed slices after it. The combine
  // then carries whole rows (all_reduce) or each member's 1/tp slice
  // (reduce_scatter), member j to member j.
  const bool scatter = sc.scenario.spec.parallel.tp_reduce == TpReduce::reduce_scatter;
  const double row = sc.model.spec.hidden_size * kCombineBytesPerElement;
  net::TrafficMatrix reduce(n * tp);
  for (std::uint32_t r = 0; r < n; ++r) {
    const double slice = setup.plans[r].shape.tokens * row / tp;
    for (std::uint32_t j = 0; j < tp; ++j) {
      for (std::uint32_t k = 0; k < tp; ++k) reduce.at(r * tp + j, r * tp + k) = slice;
    }
  }
  std::vector<net::CollectiveResult> steps = {a2a(reduce)};
  if (!scatter) steps.push_back(a2a(reduce));
  c.tp_reduce = per_rank(sum_collectives(steps), tp);
  c.dispatch = per_rank(a2a(on_gpus(setup.dispatch, tp, 1.0)), tp);
  const net::CollectiveResult combine = per_rank(a2a(on_gpus(setup.combine, tp, scatter ? 1.0 / tp : 1.0)), tp);
  // The reduce runs first: one phase on the timeline, the combine's bytes.
  c.combine = sum_collectives({c.tp_reduce, combine});
  c.combine.sent_bytes = combine.sent_bytes;
  c.combine.received_bytes = combine.received_bytes;
  return c;
}

}  // namespace

EpRankRun ep_rank_run(PathRun run) {
  EpRankRun rr;
  rr.run = std::move(run);
  const auto& t = rr.run.timings;
  sim::Tick routed = t.front().launch;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (rr.run.stages[i] == "routing") routed = t[i].end;
  }
  rr.before_s = sim::tick_seconds(routed - t.front().launch);
  rr.after_s = sim::tick_seconds(t.back().end - routed);
  return rr;
}

std::uint32_t ep_jobs(const EpSetup& setup) {
  return setup.gpus * static_cast<std::uint32_t>(1 + setup.chunks.size());
}

PathRun run_ep_job(const config::ResolvedScenario& sc, const EpSetup& setup, std::uint32_t job,
                   const std::string& path) {
  const std::uint32_t n = setup.gpus;
  if (job >= ep_jobs(setup)) {
    throw std::logic_error(fmt::format("job {} of an expert-parallel layer with {} jobs", job, ep_jobs(setup)));
  }
  const auto& plan = job < n ? setup.plans.at(job) : setup.chunks.at(job / n - 1).plans.at(job % n);
  // No trace of its own: the layer's trace is one track per GPU, built from
  // the GPUs' kernel timings (assemble_ep_path).
  return run_path_fresh(plan, sc.machine.spec, path, sim::SimOptions{});
}

EpPathRun assemble_ep_jobs(const config::ResolvedScenario& sc, const EpSetup& setup, const std::string& path,
                           std::vector<PathRun> job_runs, const sim::SimOptions& opts) {
  const std::uint32_t n = setup.gpus;
  if (job_runs.size() != ep_jobs(setup)) {
    throw std::logic_error(fmt::format("the {} path of an expert-parallel layer with {} jobs got {} runs", path,
                                       ep_jobs(setup), job_runs.size()));
  }
  std::vector<EpRankRun> gpu_runs;
  std::vector<std::vector<EpRankRun>> chunk_runs(setup.chunks.size());
  for (std::uint32_t j = 0; j < job_runs.size(); ++j) {
    EpRankRun rr = ep_rank_run(std::move(job_runs[j]));
    if (j < n) {
      gpu_runs.push_back(std::move(rr));
    } else {
      chunk_runs[j / n - 1].push_back(std::move(rr));
    }
  }
  return assemble_ep_path(sc, setup, path, std::move(gpu_runs), opts, std::move(chunk_runs));
}

EpPathRun run_ep_path(const config::ResolvedScenario& sc, const EpSetup& setup, const std::string& path,
                      const sim::SimOptions& opts) {
  std::vector<PathRun> runs;
  for (std::uint32_t j = 0; j < ep_jobs(setup); ++j) runs.push_back(run_ep_job(sc, setup, j, path));
  return assemble_ep_jobs(sc, setup, path, std::move(runs), opts);
}

EpPathRun assemble_ep_path(const config::ResolvedScenario& sc, const EpSetup& setup, const std::string& path,
                           std::vector<EpRankRun> gpu_runs, const sim::SimOptions& opts,
                           std::vector<std::vector<EpRankRun>> chunk_runs) {
  const std::uint32_t n = setup.gpus;
  if (gpu_runs.size() != n || chunk_runs.size() != setup.chunks.size()) {
    throw std::logic_error(fmt::format("the {} path of an expert-parallel layer on {} GPUs in {} micro-batches got "
                                       "{} GPUs' runs and {} micro-batches'",
                                       path, n, setup.chunks.size(), gpu_runs.size(), chunk_runs.size()));
  }
  EpPathRun out;
  out.path = path;
  out.ranks = std::move(gpu_runs);
  out.chunk_ranks = std::move(chunk_runs);
  // The whole share's collectives and timeline (overlap none: the layer's).
  out.tp = setup.tp;
  std::vector<net::CollectiveResult> dispatch(1), combine(1), reduce(1);
  const auto collect = [&](const EpSetup& share, std::size_t c) {
    EpCollectives k = collectives(sc, share);
    dispatch[c] = std::move(k.dispatch);
    combine[c] = std::move(k.combine);
    reduce[c] = std::move(k.tp_reduce);
  };
  collect(setup, 0);
  const EpTimeline whole = timeline_of({out.ranks}, dispatch, combine);
  const bool chunked = !setup.chunks.empty();
  if (chunked) {
    // overlap chunked: every rank's run of every micro-batch, pipelined.
    dispatch.assign(setup.chunks.size(), {});
    combine.assign(setup.chunks.size(), {});
    reduce.assign(setup.chunks.size(), {});
    for (std::size_t c = 0; c < setup.chunks.size(); ++c) collect(setup.chunks[c], c);
    out.timeline = timeline_of(out.chunk_ranks, dispatch, combine);
  } else {
    out.timeline = whole;
  }
  const EpTimeline& tl = out.timeline;
  out.dispatch = sum_collectives(dispatch);
  out.combine = sum_collectives(combine);
  if (setup.tp > 1) out.tp_reduce = sum_collectives(reduce);
  // Per rank: its time before and after its dispatches, over all micro-batches.
  std::vector<double> before_r(n, 0.0), after_r(n, 0.0);
  for (std::size_t c = 0; c < tl.routing.size(); ++c) {
    for (std::uint32_t r = 0; r < n; ++r) {
      before_r[r] += chunked ? out.chunk_ranks[c][r].before_s : out.ranks[r].before_s;
      after_r[r] += chunked ? out.chunk_ranks[c][r].after_s : out.ranks[r].after_s;
    }
  }
  double before = 0, after = 0, compute_max = -1;
  for (std::uint32_t r = 0; r < n; ++r) {
    before = std::max(before, before_r[r]);
    after = std::max(after, after_r[r]);
    if (tl.compute_s[r] > compute_max) {
      compute_max = tl.compute_s[r];
      out.slowest = r;
    }
  }
  // One GPU: its own time, bit for bit (no collective, nothing to wait for).
  out.total_s = n == 1 ? out.ranks[0].run.total_s : tl.total_s;

  Json ranks = Json::array();
  std::vector<double> compute, waits;
  for (std::uint32_t r = 0; r < n; ++r) {
    const EpRankRun& rr = out.ranks[r];
    const double wait = n == 1 ? std::max(0.0, out.total_s - rr.run.total_s) : tl.wait_s[r];
    compute.push_back(tl.compute_s[r] * 1e6);
    waits.push_back(wait * 1e6);
    const auto& p = setup.plans[r];
    Json rank = {{"rank", r},
                 {"node", r * setup.tp / (n * setup.tp / setup.nodes)},
                 {"own_tokens", setup.own[r]},
                 {"tokens", p.shape.tokens},
                 {"received_tokens", p.shape.tokens - setup.own[r]},
                 {"picks", setup.picks[r]},
                 {"compute_us", tl.compute_s[r] * 1e6},
                 {"before_dispatch_us", before_r[r] * 1e6},
                 {"after_dispatch_us", after_r[r] * 1e6},
                 {"dispatch", {{"sent_bytes", out.dispatch.sent_bytes[r]},
                               {"received_bytes", out.dispatch.received_bytes[r]},
                               {"us", tl.dispatch_s[r] * 1e6}}},
                 {"combine", {{"sent_bytes", out.combine.sent_bytes[r]},
                              {"received_bytes", out.combine.received_bytes[r]},
                              {"us", tl.combine_s[r] * 1e6}}},
                 {"wait_us", wait * 1e6},
                 {"metrics", rr.run.metrics}};
    if (setup.tp > 1) {
      rank["tp_reduce"] = {{"sent_bytes", out.tp_reduce.sent_bytes[r]},
                           {"received_bytes", out.tp_reduce.received_bytes[r]},
                           {"us", out.tp_reduce.rank_time_s[r] * 1e6}};
    }
    if (chunked) {
      // Its own share of the collectives that its compute hid, and each
      // micro-batch's compute (its metrics are the whole share's, unchunked).
      rank["dispatch"]["hidden_us"] = tl.dispatch_hidden_s[r] * 1e6;
      rank["combine"]["hidden_us"] = tl.combine_hidden_s[r] * 1e6;
      std::vector<double> per_chunk;
      for (const auto& c : out.chunk_ranks) per_chunk.push_back(c[r].run.total_s * 1e6);
      rank["chunk_compute_us"] = per_chunk;
    }
    ranks.push_back(std::move(rank));
  }
  // The path's entry: the slowest rank's single-GPU metrics (stages, floor,
  // utilisation: what a sweep row reads) with the layer's time, and "ep".
  out.metrics = out.ranks[out.slowest].run.metrics;
  out.metrics["total_us"] = out.total_s * 1e6;
  out.metrics["rank_total_us"] = out.ranks[out.slowest].run.total_s * 1e6;
  if (n > 1) out.metrics["over_floor"] = out.total_s / (out.metrics["floor"]["us"].get<double>() * 1e-6);
  const Json cs = spread(compute);
  out.metrics["ep"] = {{"gpus", n * setup.tp},
                       {"nodes", setup.nodes},
                       {"slowest_rank", out.slowest},
                       {"overlap", std::string(config::enum_name(sc.scenario.spec.parallel.overlap))},
                       {"before_dispatch_max_us", before * 1e6},
                       {"after_dispatch_max_us", after * 1e6},
                       {"compute_max_us", cs["max"]},
                       {"compute_mean_us", cs["mean"]},
                       {"compute_max_over_mean", cs["max_over_mean"]},
                       {"wait_max_us", *std::max_element(waits.begin(), waits.end())},
                       {"dispatch", collective_json(out.dispatch)},
                       {"combine", collective_json(out.combine)},
                       {"ranks", ranks}};
  if (setup.tp > 1) {
    out.metrics["ep"]["tp"] = setup.tp;
    out.metrics["ep"]["tp_reduce"] = collective_json(out.tp_reduce);
    out.metrics["ep"]["tp_reduce"]["op"] = std::string(config::enum_name(sc.scenario.spec.parallel.tp_reduce));
  }
  if (chunked) out.metrics["ep"]["chunked"] = ep_chunked_json(tl, whole, dispatch, combine);
  if (opts.trace) out.trace = ep_trace(out, chunked);
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
  Json out = {{"tokens", s.tokens},
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
  // Keys beyond the defaults' (whose summaries stay as they were).
  if (s.parallel.combine != EpCombine::all_to_all) {
    out["ep"]["combine"] = std::string(config::enum_name(s.parallel.combine));
  }
  if (!setup.chunks.empty()) out["ep"]["chunks"] = setup.chunks.size();
  if (setup.tp > 1) out["ep"]["tp"] = setup.tp;
  return out;
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
  if (ep.contains("chunked")) {
    const Json& ch = ep["chunked"];
    fmt::print("          layer {:.2f} us: {} micro-batches overlapped (one after another {:.2f} us; without "
               "overlap {:.2f} us)\n",
               r.total_s * 1e6, ch["chunks"].get<std::size_t>(), ch["serial_us"].get<double>(),
               ch["no_overlap_us"].get<double>());
  } else {
    fmt::print("          layer {:.2f} us = routing {:.2f} + dispatch {:.2f} + experts {:.2f} + combine {:.2f} "
               "(slowest rank's each; no overlap)\n",
               r.total_s * 1e6, ep["before_dispatch_max_us"].get<double>(), ep["dispatch"]["time_us"].get<double>(),
               ep["after_dispatch_max_us"].get<double>(), ep["combine"]["time_us"].get<double>());
  }
  fmt::print("          dispatch bottleneck {}, combine bottleneck {}; rank compute max/mean {:.2f}\n",
             r.dispatch.bottleneck.empty() ? "none" : r.dispatch.bottleneck,
             r.combine.bottleneck.empty() ? "none" : r.combine.bottleneck,
             ep["compute_max_over_mean"].get<double>());
  (void)setup;
}

}  // namespace tdmsim::cli
