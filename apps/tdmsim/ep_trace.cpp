// trace.json and the overlap summary of an expert-parallel layer (ep_trace.h).
#include "apps/tdmsim/ep_trace.h"

#include <algorithm>

#include <fmt/core.h>

#include "sim/core/sim_time.h"

namespace tdmsim::cli {

using config::Json;

std::string ep_trace(const EpPathRun& out, bool chunked) {
  const EpTimeline& tl = out.timeline;
  const auto n = static_cast<std::uint32_t>(out.ranks.size());
  Json ev = Json::array();
  const std::uint64_t pid = 1;
  ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", "expert parallel"}}}});
  const auto slice = [&](std::uint32_t tid, const std::string& name, double t0_s, double t1_s) {
    if (t1_s <= t0_s) return;
    ev.push_back({{"ph", "X"}, {"pid", pid}, {"tid", tid}, {"name", name}, {"ts", t0_s * 1e6},
                  {"dur", (t1_s - t0_s) * 1e6}});
  };
  const auto track = [&](std::uint32_t tid, const std::string& name) {
    ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
  };
  const std::size_t chunks = tl.routing.size();
  for (std::uint32_t r = 0; r < n; ++r) {
    track(r, fmt::format("gpu[{}]", r));
    if (chunked) track(n + r, fmt::format("gpu[{}] comm", r));
    for (std::size_t c = 0; c < chunks; ++c) {
      const EpRankRun& rr = chunked ? out.chunk_ranks[c][r] : out.ranks[r];
      const std::string tag = chunked ? fmt::format("[{}] ", c) : "";
      const auto& t = rr.run.timings;
      const sim::Tick t0 = t.front().launch;
      for (std::size_t i = 0; i < t.size(); ++i) {
        const bool early = rr.run.stages[i] == "routing";
        const double shift = early ? tl.routing[c][r].start_s : tl.experts[c][r].start_s - rr.before_s;
        slice(r, tag + rr.run.stages[i] + ": " + t[i].name, sim::tick_seconds(t[i].launch - t0) + shift,
              sim::tick_seconds(t[i].end - t0) + shift);
      }
      const EpSpan &d = tl.dispatch[c], &k = tl.combine[c];
      if (chunked) {
        slice(n + r, tag + "dispatch", d.start_s, d.end_s);
        slice(n + r, tag + "combine", k.start_s, k.end_s);
      } else {
        slice(r, "wait", tl.routing[c][r].end_s, d.start_s);
        slice(r, "dispatch", d.start_s, d.end_s);
        slice(r, "wait", tl.experts[c][r].end_s, k.start_s);
        slice(r, "combine", k.start_s, out.total_s);
      }
    }
  }
  Json doc;
  doc["traceEvents"] = std::move(ev);
  doc["displayTimeUnit"] = "ns";
  return doc.dump() + "\n";
}

Json ep_chunked_json(const EpTimeline& t, const EpTimeline& whole, const std::vector<net::CollectiveResult>& dispatch,
                     const std::vector<net::CollectiveResult>& combine) {
  const auto span = [](const EpSpan& s, const net::CollectiveResult& r) {
    return Json{{"start_us", s.start_s * 1e6}, {"end_us", s.end_s * 1e6}, {"time_us", r.time_s * 1e6},
                {"bottleneck", r.bottleneck}};
  };
  const auto longest = [](const std::vector<EpSpan>& v) {
    double m = 0;
    for (const EpSpan& s : v) m = std::max(m, s.end_s - s.start_s);
    return m;
  };
  Json batches = Json::array();
  for (std::size_t c = 0; c < t.routing.size(); ++c) {
    batches.push_back({{"routing_max_us", longest(t.routing[c]) * 1e6},
                       {"experts_max_us", longest(t.experts[c]) * 1e6},
                       {"dispatch", span(t.dispatch[c], dispatch[c])},
                       {"combine", span(t.combine[c], combine[c])}});
  }
  return {{"chunks", t.routing.size()},
          {"no_overlap_us", whole.total_s * 1e6},
          {"serial_us", t.serial_s * 1e6},
          {"micro_batches", batches}};
}

}  // namespace tdmsim::cli
