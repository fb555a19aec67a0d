#include "apps/tdmsim/serving_run.h"

#include <cstdio>
#include <map>
#include <unistd.h>
#include <utility>

#include <fmt/core.h>

#include "apps/tdmsim/config_commands.h"
#include "apps/tdmsim/layer_sim.h"
#include "apps/tdmsim/serving_queue.h"
#include "descriptors/plan/moe_plan.h"
#include "workloads/util/atomic_write.h"
#include "workloads/util/input_file.h"

namespace tdmsim::cli {
namespace {

using config::Json;
using serving::Batch;
using serving::Request;

// One path's stream: its batches, and the simulated layer times they used.
struct PathStream {
  std::string path;
  std::vector<Batch> batches;
  std::vector<double> layer_us;  // every layer of every batch, in order
  std::uint32_t simulations = 0;  // distinct layers simulated (the rest reused: draws_per_size)
};

Json spread_json(const serving::Spread& s) {
  return {{"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"mean", s.mean}, {"min", s.min}, {"max", s.max}};
}

std::vector<Request> stream_requests(const config::ResolvedScenario& sc) {
  const ServingSpec& sv = *sc.scenario.spec.serving;
  if (sv.arrival != ArrivalProcess::trace) return serving::generate_requests(sv, sc.scenario.spec.seed);
  const auto file = config::serving_trace_path(sc.scenario);
  std::string text;
  try {
    text = util::read_input_file(file, util::InputKind::arrival_trace);
  } catch (const util::InputFileError& e) {
    throw BadInput("serving.trace: arrival trace " + std::string(e.what()));
  }
  return serving::parse_arrival_trace(text, file.string(), sc.scenario.spec.tokens);
}

// The routing seed of layer `layer` of the batch whose first request is
// `first`: its own draw (seed + first x layers + layer), or with
// draws_per_size N one of N draws (seed + that mod N; the cache key adds the
// batch's tokens).
std::uint64_t routing_seed(const config::ResolvedScenario& sc, std::uint32_t first, std::uint32_t layer) {
  const ServingSpec& sv = *sc.scenario.spec.serving;
  const std::uint64_t draw = std::uint64_t(first) * sv.layers + layer;
  return sc.scenario.spec.seed + (sv.draws_per_size == 0 ? draw : draw % sv.draws_per_size);
}

PathStream run_stream(const config::ResolvedScenario& sc, const std::vector<Request>& requests,
                      const std::string& path, bool progress) {
  const ServingSpec& sv = *sc.scenario.spec.serving;
  PathStream out;
  out.path = path;
  std::map<std::pair<std::uint32_t, std::uint64_t>, double> cache;  // (tokens, routing seed) -> layer us
  const serving::BatchPolicy policy{sv.max_batch, sc.scenario.spec.tokens, sv.batch_timeout.us()};
  const auto service = [&](const Batch& b) {
    double total = 0;
    for (std::uint32_t l = 0; l < sv.layers; ++l) {
      const std::uint64_t seed = routing_seed(sc, b.first, l);
      const auto key = std::make_pair(b.tokens, seed);
      auto it = cache.find(key);
      if (it == cache.end()) {
        if (progress) {
          fmt::print(stderr, "\r{}: batch {} ({} tokens), layer {}/{}   ", path, b.index, b.tokens, l + 1, sv.layers);
        }
        config::ResolvedScenario layer = sc;
        layer.scenario.spec.tokens = b.tokens;
        layer.scenario.spec.seed = seed;
        layer.scenario.spec.serving.reset();
        const plan::MoePlan p = plan::build_plan(layer);
        const PathRun r = run_path_fresh(p, sc.machine.spec, path, sim::SimOptions{});
        it = cache.emplace(key, r.total_s * 1e6).first;
        ++out.simulations;
      }
      out.layer_us.push_back(it->second);
      total += it->second;
    }
    return total;
  };
  out.batches = serving::serve(requests, policy, service);
  return out;
}

Json path_summary(const PathStream& ps, const std::vector<Request>& requests) {
  std::vector<double> latency(requests.size()), wait(requests.size()), service, req_per_batch, tok_per_batch;
  double busy = 0;
  for (const auto& b : ps.batches) {
    for (std::uint32_t i = b.first; i < b.first + b.count; ++i) {
      latency[i] = b.end_us() - requests[i].arrival_us;
      wait[i] = b.start_us - requests[i].arrival_us;
    }
    service.push_back(b.service_us);
    req_per_batch.push_back(b.count);
    tok_per_batch.push_back(b.tokens);
    busy += b.service_us;
  }
  const double makespan = ps.batches.empty() ? 0 : ps.batches.back().end_us();
  return {{"path", ps.path},
          {"requests", requests.size()},
          {"batches", ps.batches.size()},
          {"latency_us", spread_json(serving::spread(latency))},
          {"wait_us", spread_json(serving::spread(wait))},
          {"batch_service_us", spread_json(serving::spread(service))},
          {"layer_us", spread_json(serving::spread(ps.layer_us))},
          {"batch_requests_mean", serving::spread(req_per_batch).mean},
          {"batch_tokens_mean", serving::spread(tok_per_batch).mean},
          {"makespan_us", makespan},
          {"throughput_requests_per_s", makespan > 0 ? 1e6 * static_cast<double>(requests.size()) / makespan : 0.0},
          {"gpu_busy_fraction", makespan > 0 ? busy / makespan : 0.0},
          {"layers_simulated", ps.simulations}};
}

std::string requests_csv(const std::vector<Request>& requests, const std::vector<PathStream>& streams) {
  std::string out = "request,arrival_us,tokens";
  for (const auto& s : streams) {
    out += fmt::format(",{0}_batch,{0}_start_us,{0}_wait_us,{0}_latency_us", s.path);
  }
  out += "\n";
  std::vector<std::vector<const Batch*>> of(streams.size(), std::vector<const Batch*>(requests.size()));
  for (std::size_t k = 0; k < streams.size(); ++k) {
    for (const auto& b : streams[k].batches) {
      for (std::uint32_t i = b.first; i < b.first + b.count; ++i) of[k][i] = &b;
    }
  }
  for (const auto& r : requests) {
    out += fmt::format("{},{:.6f},{}", r.id, r.arrival_us, r.tokens);
    for (std::size_t k = 0; k < streams.size(); ++k) {
      const Batch& b = *of[k][r.id];
      out += fmt::format(",{},{:.6f},{:.6f},{:.6f}", b.index, b.start_us, b.start_us - r.arrival_us,
                         b.end_us() - r.arrival_us);
    }
    out += "\n";
  }
  return out;
}

std::string batches_csv(const std::vector<PathStream>& streams) {
  std::string out = "path,batch,first_request,requests,tokens,start_us,service_us,end_us\n";
  for (const auto& s : streams) {
    for (const auto& b : s.batches) {
      out += fmt::format("{},{},{},{},{},{:.6f},{:.6f},{:.6f}\n", s.path, b.index, b.first, b.count, b.tokens,
                         b.start_us, b.service_us, b.end_us());
    }
  }
  return out;
}

// Perfetto/Chrome trace: one process per path, one track of batches.
std::string stream_trace(const std::vector<PathStream>& streams) {
  Json events = Json::array();
  for (std::size_t k = 0; k < streams.size(); ++k) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", k}, {"args", {{"name", streams[k].path}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", k}, {"tid", 0}, {"args", {{"name", "gpu"}}}});
    for (const auto& b : streams[k].batches) {
      events.push_back({{"name", fmt::format("batch {}", b.index)},
                        {"ph", "X"},
                        {"pid", k},
                        {"tid", 0},
                        {"ts", b.start_us},
                        {"dur", b.service_us},
                        {"args", {{"requests", b.count}, {"first_request", b.first}, {"tokens", b.tokens}}}});
    }
  }
  return Json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump() + "\n";
}

void print_stream(const config::ResolvedScenario& sc, const std::vector<Request>& requests, const Json& summary) {
  const ServingSpec& sv = *sc.scenario.spec.serving;
  const auto& S = summary["serving"];
  fmt::print("{} on {}: a stream of {} requests of {} ({}), {:.0f} requests/s offered, {:.1f} tokens each on average\n",
             sc.scenario.spec.name, sc.machine.spec.name, requests.size(), sc.model.spec.name,
             config::enum_name(sv.arrival), S["offered_requests_per_s"].get<double>(),
             S["request_tokens_mean"].get<double>());
  fmt::print("batches: up to {} and {} tokens, timeout {:.2f} us; {} MoE layer{} per batch, {}\n\n",
             sv.max_batch == 0 ? std::string("any number of requests") : fmt::format("{} requests", sv.max_batch),
             sc.scenario.spec.tokens, sv.batch_timeout.us(), sv.layers, sv.layers == 1 ? "" : "s",
             sv.draws_per_size == 0 ? std::string("each with its own routing draw")
                                    : fmt::format("{} routing draws per batch size", sv.draws_per_size));
  fmt::print("{:<9} {:>7} {:>9} {:>9} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "path", "batches", "req/batch",
             "tok/batch", "busy", "lat p50", "lat p90", "lat p99", "lat mean", "wait p50", "layer p99");
  for (const auto& p : summary["paths"]) {
    const auto& L = p["latency_us"];
    fmt::print("{:<9} {:>7} {:>9.2f} {:>9.1f} {:>4.0f}% {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}\n",
               p["path"].get<std::string>(), p["batches"].get<std::size_t>(), p["batch_requests_mean"].get<double>(),
               p["batch_tokens_mean"].get<double>(), 100.0 * p["gpu_busy_fraction"].get<double>(),
               L["p50"].get<double>(), L["p90"].get<double>(), L["p99"].get<double>(), L["mean"].get<double>(),
               p["wait_us"]["p50"].get<double>(), p["layer_us"]["p99"].get<double>());
  }
  fmt::print("(times in us; latency = queue wait + the batch's service; {} layers simulated)\n",
             [&] {
               std::uint64_t n = 0;
               for (const auto& p : summary["paths"]) n += p["layers_simulated"].get<std::uint64_t>();
               return n;
             }());
  if (summary.contains("tdm_vs_software")) {
    const auto& t = summary["tdm_vs_software"];
    fmt::print("\nTDM over software: p50 latency {:.2f}x, p99 latency {:.2f}x lower\n", t["p50_latency_ratio"].get<double>(),
               t["p99_latency_ratio"].get<double>());
  }
}

}  // namespace

int run_serving(const config::ResolvedScenario& sc, const std::vector<std::string>& paths, const std::string& not_run,
                const ServingRunOptions& o, Json resolved, StagedDir* dir,
                std::chrono::steady_clock::time_point wall0) {
  const ServingSpec& sv = *sc.scenario.spec.serving;
  const std::vector<Request> requests = stream_requests(sc);
  const bool progress = !o.quiet && isatty(STDERR_FILENO);
  std::vector<PathStream> streams;
  for (const auto& path : paths) streams.push_back(run_stream(sc, requests, path, progress));
  if (progress) fmt::print(stderr, "\r{:80}\r", "");

  double tokens = 0;
  for (const auto& r : requests) tokens += r.tokens;
  const double span = requests.back().arrival_us - requests.front().arrival_us;
  Json summary = {{"scenario", sc.scenario.spec.name}, {"machine", sc.machine.spec.name},
                  {"model", sc.model.spec.name}, {"seed", sc.scenario.spec.seed}};
  summary["serving"] = {
      {"arrival", std::string(config::enum_name(sv.arrival))},
      {"requests", requests.size()},
      {"request_tokens_mean", tokens / static_cast<double>(requests.size())},
      {"last_arrival_us", requests.back().arrival_us},
      // Over the arrivals' span: (n - 1) gaps.
      {"offered_requests_per_s", span > 0 ? 1e6 * static_cast<double>(requests.size() - 1) / span : 0.0},
      {"max_batch", sv.max_batch},
      {"max_batch_tokens", sc.scenario.spec.tokens},
      {"batch_timeout_us", sv.batch_timeout.us()},
      {"layers", sv.layers},
      {"draws_per_size", sv.draws_per_size}};
  summary["paths"] = Json::array();
  for (const auto& s : streams) summary["paths"].push_back(path_summary(s, requests));
  if (!not_run.empty()) summary["paths_not_run"] = {{"tdm", not_run}};
  if (streams.size() == 2) {
    const auto& a = summary["paths"][0]["latency_us"];
    const auto& b = summary["paths"][1]["latency_us"];
    summary["tdm_vs_software"] = {{"p50_latency_ratio", a["p50"].get<double>() / b["p50"].get<double>()},
                                  {"p99_latency_ratio", a["p99"].get<double>() / b["p99"].get<double>()},
                                  {"mean_latency_ratio", a["mean"].get<double>() / b["mean"].get<double>()}};
  }
  summary["simulation_wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  if (!o.quiet) {
    print_stream(sc, requests, summary);
    if (!not_run.empty()) fmt::print("\nnote: {}\n", not_run);
  }
  if (dir != nullptr) {
    util::write_file_atomic(dir->file("summary.json"), summary.dump(2) + "\n");
    util::write_file_atomic(dir->file("requests.csv"), requests_csv(requests, streams));
    util::write_file_atomic(dir->file("batches.csv"), batches_csv(streams));
    if (sv.arrival == ArrivalProcess::trace) {
      resolved["files"]["serving_trace"] = config::serving_trace_path(sc.scenario).string();
    }
    util::write_file_atomic(dir->file("config.json"), resolved.dump(2) + "\n");
    if (o.trace) util::write_file_atomic(dir->file("trace.json"), stream_trace(streams));
    dir->commit();
    if (!o.quiet) fmt::print("\nwrote {}\n", dir->target().string());
  }
  return kExitOk;
}

}  // namespace tdmsim::cli
