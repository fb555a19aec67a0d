#include "apps/tdmsim/attribution.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <fmt/core.h>

namespace tdmsim::cli {
namespace {

using config::Json;

// Slot-ps times CUs can pass 2^64 for long kernels on large machines.
__extension__ using U128 = unsigned __int128;

enum Index : std::size_t { kLaunch, kRouting, kGather, kDispatch, kIdle, kMemory, kCompute };

// Stages whose time (after their launch) is all "routing and sort": the sort
// kernels (software path) and the routing stage (the router GEMM and top-k
// kernels on the software path; the unit's gate GEMM and routing stage on the
// TDM path).
bool routing_stage(const std::string& stage) { return stage == "sort" || stage == "routing"; }

// Splits `scaled` (a stage's time in units of 1/`denominator` ps) into whole
// ps that add up to exactly `total_ps`: each part rounded down, the ps left
// over given to the largest remainders (ties: the earlier cause).
std::array<std::int64_t, kCauses> whole_ps(const std::array<U128, kCauses>& scaled,
                                           U128 denominator, std::int64_t total_ps) {
  std::array<std::int64_t, kCauses> out{};
  std::array<U128, kCauses> rem{};
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < kCauses; ++i) {
    out[i] = static_cast<std::int64_t>(scaled[i] / denominator);
    rem[i] = scaled[i] % denominator;
    sum += out[i];
  }
  std::array<std::size_t, kCauses> order{};
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rem[a] > rem[b]; });
  for (std::size_t k = 0; sum < total_ps; ++k, ++sum) ++out[order[k % kCauses]];
  return out;
}

}  // namespace

const std::array<Cause, kCauses> kCauseList = {{
    {"launch", "host launches and kernel boundaries (TDM: descriptor fetch)"},
    {"routing_and_sort", "routing and sort (TDM: routing stage, descriptor decode)"},
    {"token_gather", "token gather"},
    {"dispatch_and_slot_waiting", "dispatch and slot waiting"},
    {"wave_quantisation_and_bubbles", "wave quantisation and bubbles"},
    {"memory_traffic", "memory traffic"},
    {"compute", "compute"},
}};

PathCauses path_causes(const PathRun& r, const MachineSpec& m) {
  PathCauses out;
  const auto cus = static_cast<U128>(m.compute.total_cus());
  const sim::Tick decode = m.tdm ? sim::ticks(m.tdm->decode_latency) : 0;
  sim::Tick prev_end = r.timings.empty() ? 0 : r.timings.front().launch;
  for (std::size_t i = 0; i < r.timings.size(); ++i) {
    const sim::KernelTiming& t = r.timings[i];
    // Run by the TDM unit from a descriptor (sim::programs::tdm_moe names them tdm_*).
    const bool hardware = t.name.rfind("tdm_", 0) == 0;
    // The stage's share of the total: from the later of its launch (on the
    // TDM path: when it could first have started) and the previous stage's
    // end, so that the stages tile the total without overlap.
    const sim::Tick begin = std::max(t.launch, prev_end);
    const sim::Tick start = std::max(t.start, begin), end = std::max(t.end, start);
    const sim::Tick work_end = std::clamp(t.work_end, start, end);
    prev_end = end;
    const auto window = static_cast<std::int64_t>(end - begin);
    // Before the first workgroup may start: a host launch, or the TDM unit's
    // wait for the descriptor, whose last decode_latency is its decoding.
    const sim::Tick before = start - begin;
    const sim::Tick decoding = hardware ? std::min(before, decode) : 0;
    // A host-launched kernel's launch.kernel_boundary ends its window: a fixed
    // per-kernel cost of the command processor, counted with its launch.
    const sim::Tick boundary = std::min(t.boundary, end - start);
    out.kernel_boundary_us += static_cast<double>(boundary) * 1e-6;
    std::array<U128, kCauses> scaled{};
    U128 denominator = 1;
    if (routing_stage(i < r.stages.size() ? r.stages[i] : std::string())) {
      scaled[kLaunch] = before + boundary;
      scaled[kRouting] = end - start - boundary;
    } else {
      const sim::SlotTime& s = t.slots;
      const U128 slots = t.slots_per_cu;
      denominator = slots * cus;
      // The write-back: from the last workgroup's end to the boundary.
      const sim::Tick flushed = std::max(end - boundary, work_end);
      if (denominator == 0) {  // no workgroup ran: all of it is the write-back
        denominator = 1;
        scaled[kMemory] = flushed - start;
      } else {
        const U128 work = static_cast<U128>(work_end - start) * cus;
        if (s.total() != static_cast<U128>(s.window_ps) * slots || work < s.window_ps) {
          throw std::logic_error(fmt::format(
              "internal error: the CUs' slot time of kernel {} ({} slot-ps) does not partition its "
              "window ({} ps x {} slots); please report this scenario",
              t.name, s.total(), s.window_ps, t.slots_per_cu));
        }
        using sim::SlotCause;
        scaled[kDispatch] = s[SlotCause::dispatch] + s[SlotCause::slot_wait];
        scaled[kCompute] = s[SlotCause::compute];
        scaled[kGather] = s[SlotCause::gather];
        // The CUs done before the kernel's last workgroup idle to its end.
        scaled[kIdle] = s[SlotCause::idle] + (work - s.window_ps) * slots;
        scaled[kMemory] = s[SlotCause::memory] + static_cast<U128>(flushed - work_end) * denominator;
        out.dispatch_us += static_cast<double>(s[SlotCause::dispatch]) / static_cast<double>(denominator) * 1e-6;
        out.slot_wait_us += static_cast<double>(s[SlotCause::slot_wait]) / static_cast<double>(denominator) * 1e-6;
        out.slot_idle_us += static_cast<double>(s[SlotCause::idle]) / static_cast<double>(denominator) * 1e-6;
        out.cu_tail_us += static_cast<double>(work - s.window_ps) / static_cast<double>(cus) * 1e-6;
      }
      out.write_back_us += static_cast<double>(flushed - work_end) * 1e-6;
      scaled[kLaunch] = static_cast<U128>(before - decoding + (end - flushed)) * denominator;
      scaled[kRouting] = static_cast<U128>(decoding) * denominator;
    }
    const auto parts = whole_ps(scaled, denominator, window);
    for (std::size_t c = 0; c < kCauses; ++c) out.ps[c] += parts[c];
    out.total_ps += window;
  }
  const std::int64_t sum = std::accumulate(out.ps.begin(), out.ps.end(), std::int64_t{0});
  const std::int64_t total =
      r.timings.empty() ? 0 : static_cast<std::int64_t>(r.timings.back().end - r.timings.front().launch);
  if (sum != out.total_ps || out.total_ps != total) {
    throw std::logic_error(fmt::format("internal error: the {} path's causes add up to {} ps, its total is {} ps",
                                       r.path, sum, total));
  }
  return out;
}

Json causes_json(const PathCauses& c) {
  Json j = Json::object();
  for (std::size_t i = 0; i < kCauses; ++i) j[std::string(kCauseList[i].key) + "_us"] = static_cast<double>(c.ps[i]) * 1e-6;
  j["detail"] = {{"dispatch_latency_us", c.dispatch_us},
                 {"slot_release_wait_us", c.slot_wait_us},
                 {"write_back_us", c.write_back_us},
                 {"kernel_boundary_us", c.kernel_boundary_us},
                 {"idle_slots_us", c.slot_idle_us},
                 {"idle_cus_us", c.cu_tail_us}};
  return j;
}

Json tdm_vs_software(const PathCauses& software, const PathCauses& tdm) {
  Json causes = Json::array();
  for (std::size_t i = 0; i < kCauses; ++i) {
    causes.push_back({{"cause", kCauseList[i].key},
                      {"label", kCauseList[i].label},
                      {"software_us", static_cast<double>(software.ps[i]) * 1e-6},
                      {"tdm_us", static_cast<double>(tdm.ps[i]) * 1e-6},
                      {"delta_us", static_cast<double>(tdm.ps[i] - software.ps[i]) * 1e-6},
                      {"delta_ps", tdm.ps[i] - software.ps[i]}});
  }
  return {{"software_us", static_cast<double>(software.total_ps) * 1e-6},
          {"tdm_us", static_cast<double>(tdm.total_ps) * 1e-6},
          {"delta_us", static_cast<double>(tdm.total_ps - software.total_ps) * 1e-6},
          {"delta_ps", tdm.total_ps - software.total_ps},
          {"causes", causes}};
}

void print_tdm_vs_software(const Json& j) {
  fmt::print("TDM - software: {:+.2f} us ({:.2f} -> {:.2f} us), by cause:\n", j["delta_us"].get<double>(),
             j["software_us"].get<double>(), j["tdm_us"].get<double>());
  // The label column as wide as the longest label, so every row lines up.
  std::size_t w = 5;
  for (const auto& c : j["causes"]) w = std::max(w, c["label"].get_ref<const std::string&>().size());
  fmt::print("  {:<{}} {:>10} {:>10} {:>10}\n", "cause", w, "software", "tdm", "delta us");
  for (const auto& c : j["causes"]) {
    fmt::print("  {:<{}} {:>10.2f} {:>10.2f} {:>+10.2f}\n", c["label"].get<std::string>(), w,
               c["software_us"].get<double>(), c["tdm_us"].get<double>(), c["delta_us"].get<double>());
  }
}

}  // namespace tdmsim::cli
