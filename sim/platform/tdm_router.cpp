#include "sim/platform/tdm_router.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tdmsim::sim {

TdmRouter::TdmRouter(sc_core::sc_module_name name, const TdmSpec& spec, const Dispatcher& dispatcher,
                     StatRegistry& stats, TraceWriter* trace)
    : sc_module(name), mem("mem"), spec_(spec), dispatcher_(dispatcher), trace_(trace) {
  const std::string me = this->name();
  if (trace_ != nullptr) {
    trace_pid_ = trace_->process(me);
    trace_->thread_name(trace_pid_, 0, "routing");
  }
  stats.add(me, "launches", &launches_, "count", "routing stages run");
  stats.add(me, "items", &items_, "count", "scores and routed rows through the routing pipeline");
  stats.add(me, "read_bytes", &read_bytes_, "bytes", "router logits (or top-k ids) read");
  stats.add(me, "write_bytes", &write_bytes_, "bytes", "task table bytes written");
  stats.add(me, "busy_time", &busy_ps_, "ps", "time the routing stage was running");
}

Tick TdmRouter::pipeline_ps(std::uint64_t items, double clock_hz) const {
  const double cycles = std::ceil(static_cast<double>(items) / std::max(1u, spec_.routing_scores_per_clock));
  return static_cast<Tick>(std::llround(cycles * 1e12 / clock_hz)) + ticks(spec_.routing_latency);
}

KernelTiming TdmRouter::route(const isa::KernelLaunch& k) {
  if (!k.routing) throw std::logic_error("TDM routing stage: " + k.name + " is not a routing launch");
  const isa::HardwareRouting& r = *k.routing;
  const Tick t0 = sc_core::sc_time_stamp().value();
  Tick read = t0;
  for (const auto& range : r.reads) {
    MemAccess a{range.addr, range.row_bytes, range.rows, range.row_bytes, false, 0};
    read = std::max(read, port_.send(mem, a, t0, t0));
    read_bytes_ += a.bytes();
  }
  const Tick pipe = pipeline_ps(r.items, dispatcher_.clock_hz());
  const Tick latency = ticks(spec_.routing_latency);
  const Tick scored = std::max(t0 + pipe, read + latency);
  Tick end = scored;
  for (const auto& range : r.writes) {
    MemAccess a{range.addr, range.row_bytes, range.rows, range.row_bytes, true, 0};
    end = std::max(end, port_.send(mem, a, scored, t0));
    write_bytes_ += a.bytes();
  }
  wait(to_sc_time(end - t0));
  ++launches_;
  items_ += r.items;
  busy_ps_ += end - t0;
  if (trace_ != nullptr) trace_->slice(trace_pid_, 0, k.name, t0, end);
  KernelTiming t;
  t.name = k.name;
  t.launch = t0;
  t.start = t0;
  t.end = end;
  t.workgroups = 0;
  return t;
}

}  // namespace tdmsim::sim
