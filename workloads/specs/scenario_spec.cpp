#include "workloads/specs/scenario_spec.h"

#include "workloads/config/reader.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/core.h>

namespace tdmsim {

// Our kernels are built for 16..256 in powers of two; AITER's for any
// multiple of 16 (its older tuners timed blocks of 16, 32, 48, ..., 160,
// with assembly stage-1 kernels of those M: aiter hsa/gfx942/fmoe_2stages/
// tune.py), which a kernel of source aiter may take.
bool valid_block_m(std::uint32_t m, KernelCode source) {
  if (source == KernelCode::aiter) return m >= 16 && m <= 256 && m % 16 == 0;
  return m == 16 || m == 32 || m == 64 || m == 128 || m == 256;
}

std::string valid_block_m_text(KernelCode source) {
  return source == KernelCode::aiter ? "a multiple of 16 in 16..256"
                                     : "16, 32, 64, 128 or 256 (a multiple of 16 up to 256 with kernel.source aiter, "
                                       "on a CDNA3 or CDNA4 machine)";
}

namespace {

void check_tile(const KernelTile& t, const std::string& key, std::uint32_t block_m, KernelCode source,
                config::Checker& c) {
  if (t.is_auto()) return;
  if (t.threads % 64 != 0 && t.threads % 32 != 0) {
    c.fail(key, "threads must be a multiple of 32, got " + std::to_string(t.threads));
  }
  if (!valid_block_m(t.m, source)) c.fail(key, "M must be " + valid_block_m_text(source) + ", got " + std::to_string(t.m));
  if (t.n % 16 != 0 || t.k % 16 != 0) c.fail(key, "N and K must be multiples of 16");
  if (t.n > KernelTile::kMaxDim || t.k > KernelTile::kMaxDim || t.threads > KernelTile::kMaxDim) {
    c.fail(key, fmt::format("threads, N and K must be at most {}, got {}x{}x{}x{}", KernelTile::kMaxDim, t.threads,
                            t.m, t.n, t.k));
  }
  if (block_m != 0 && t.m != block_m) {
    c.fail(key, "tile M (" + std::to_string(t.m) + ") differs from kernel.block_m (" +
                    std::to_string(block_m) + ")", {"kernel.block_m"});
  }
}

// serving: (docs/serving.md): each key the arrival process reads, and none it
// does not.
void check_serving(const ScenarioSpec& s, config::Checker& c) {
  const ServingSpec& v = *s.serving;
  const bool from_trace = v.arrival == ArrivalProcess::trace;
  if (from_trace) {
    if (v.trace.empty()) c.fail("serving.trace", "serving.arrival is trace but no trace file is given", {"serving.arrival"});
    for (const char* key : {"interarrival", "requests", "request_tokens", "request_tokens_max"}) {
      if (c.is_set(std::string("serving.") + key)) {
        c.fail(std::string("serving.") + key,
               "the arrival trace gives every request's arrival time and tokens; leave it out with arrival: trace",
               {"serving.arrival"});
      }
    }
  } else {
    if (!v.trace.empty()) {
      c.fail("serving.trace", "a trace file is read only with arrival: trace (here " +
                                  std::string(config::enum_name(v.arrival)) + ")", {"serving.arrival"});
    }
    if (v.interarrival.ps == 0) {
      c.fail("serving.interarrival", "arrival " + std::string(config::enum_name(v.arrival)) +
                                         " needs a time between arrivals above 0 (e.g. interarrival: 50us; requests all at "
                                         "once: arrival trace with equal times)",
             {"serving.arrival"});
    }
    if (v.requests == 0) {
      c.fail("serving.requests", "arrival " + std::string(config::enum_name(v.arrival)) +
                                     " needs a number of requests, at least 1 (e.g. requests: 64)", {"serving.arrival"});
    }
    if (v.request_tokens_max != 0 && v.request_tokens_max < v.request_tokens) {
      c.fail("serving.request_tokens_max", "is below request_tokens (" + std::to_string(v.request_tokens) + ")",
             {"serving.request_tokens"});
    }
    const std::uint32_t largest = std::max(v.request_tokens, v.request_tokens_max);
    if (largest > s.tokens) {
      c.fail(v.request_tokens_max > 0 ? "serving.request_tokens_max" : "serving.request_tokens",
             "a request of " + std::to_string(largest) + " tokens does not fit a batch of tokens " +
                 std::to_string(s.tokens) + " (the scenario's tokens, the most tokens in a batch)",
             {"tokens"});
    }
  }
  if (s.routing.source == RoutingSource::trace) {
    c.fail("routing.source", "a routing trace fixes one layer's tokens; a request stream's batches vary "
                             "(use a seeded source with serving:)", {"serving"});
  }
  if (s.parallel.ep > 1) {
    c.fail("parallel.ep", "a request stream runs on one GPU; serving: with parallel.ep > 1 is not modelled",
           {"serving"});
  }
}

}  // namespace

std::vector<InertKey> inert_keys(const ScenarioSpec& s) {
  const auto& r = s.routing;
  std::vector<InertKey> out;
  const std::pair<const char*, RoutingSource> source_keys[] = {
      {"routing.zipf_s", RoutingSource::zipf},
      {"routing.lognormal_sigma", RoutingSource::lognormal},
      {"routing.hot_experts", RoutingSource::hot},
      {"routing.hot_fraction", RoutingSource::hot},
      {"routing.trace", RoutingSource::trace}};
  for (const auto& [key, source] : source_keys) {
    if (r.source != source) {
      out.push_back({key, "routing.source",
                     fmt::format("applies to source: {} only, and the source is {}: it would change nothing",
                                 config::enum_name(source), config::enum_name(r.source)),
                     fmt::format("routing.source is {}", config::enum_name(source))});
    }
  }
  if (r.capacity_factor.none()) {
    out.push_back({"routing.overflow", "routing.capacity_factor",
                   "says what happens to picks past an expert's capacity, and capacity_factor is none (no "
                   "limit): it would change nothing",
                   "routing.capacity_factor is not none"});
  }
  return out;
}

void check(const ScenarioSpec& s, config::Checker& c) {
  c.one_line("name", s.name);
  c.one_line("description", s.description);
  if (s.serving) check_serving(s, c);
  const auto& r = s.routing;
  if (r.source == RoutingSource::trace && r.trace.empty()) {
    c.fail("routing.trace", "routing.source is trace but no trace file is given",
           {"routing.source"});
  }
  // A trace records each token's picks only, not its ranking of the other
  // experts, so it has no next-best expert to reroute to.
  if (r.overflow == CapacityOverflow::reroute && r.source == RoutingSource::trace) {
    c.fail("routing.overflow",
           "reroute needs each token's ranking of the experts, which a routing trace does not "
           "record; use overflow: drop with source: trace",
           {"routing.source"});
  }
  if (r.source == RoutingSource::hot && r.hot_experts.empty()) {
    c.fail("routing.hot_experts", "routing.source is hot but hot_experts is empty",
           {"routing.source"});
  }
  // At most one entry per expert (the schema's largest model): a longer list
  // is reported once, not entry by entry.
  if (r.hot_experts.size() > kMaxHotExperts) {
    c.fail("routing.hot_experts", fmt::format("lists {} experts; at most {} (one per expert)",
                                              r.hot_experts.size(), kMaxHotExperts));
    return;
  }
  std::set<std::uint32_t> seen;
  for (std::size_t i = 0; i < r.hot_experts.size(); ++i) {
    if (!seen.insert(r.hot_experts[i]).second) {
      c.fail("routing.hot_experts[" + std::to_string(i) + "]",
             "expert " + std::to_string(r.hot_experts[i]) + " is listed twice");
    }
  }
  if (const auto refusal = format_refusal(operand_formats(s))) {
    c.fail(refusal->key, refusal->message, {"dtype", "weight_dtype", "quant"});
  }
  const auto& k = s.kernel;
  if (k.block_m != 0 && !valid_block_m(k.block_m, k.source)) {
    c.fail("kernel.block_m", "must be 0 (heuristic) or " + valid_block_m_text(k.source) + ", got " +
                                 std::to_string(k.block_m));
  }
  check_tile(k.gate_up_tile, "kernel.gate_up_tile", k.block_m, k.source, c);
  check_tile(k.down_tile, "kernel.down_tile", k.block_m, k.source, c);
  // A tuned table's row fixes these; a second source for them would leave
  // one of the two silently unused.
  if (!k.config.empty()) {
    const auto fixed = [&](bool set, const char* key, const char* neutral = "0 / auto") {
      if (set) {
        c.fail(std::string("kernel.") + key,
               std::string("is chosen by the kernel.config table's row; leave it out (or ") + neutral +
                   ") when kernel.config (or --kernel-config) is given",
               {"kernel.config"});
      }
    };
    fixed(k.block_m != 0, "block_m");
    fixed(!k.gate_up_tile.is_auto(), "gate_up_tile");
    fixed(!k.down_tile.is_auto(), "down_tile");
    fixed(k.split_k != 0, "split_k");
    fixed(k.stages != 0, "stages");
    fixed(k.gate_up_lds_buffers != 0, "gate_up_lds_buffers");
    fixed(k.down_lds_buffers != 0, "down_lds_buffers");
    fixed(k.gate_up_workgroups_per_cu != 0, "gate_up_workgroups_per_cu");
    fixed(k.down_combine != DownCombine::machine, "down_combine", "machine");
  }
  // Keys that describe AITER's 2-stage kernels (set, and no kernel.config,
  // whose row says them: refused above): refused with our kernels and with
  // AITER's 1-stage kernel, each saying why; true where the key stands.
  const auto aiter_two_stage_key = [&](bool set, const char* key, const char* ours, const char* one_stage) {
    if (!set || !k.config.empty()) return false;
    if (k.source != KernelCode::aiter) {
      c.fail(key, ours, {"kernel.source"});
      return false;
    }
    if (k.stages == 1) {
      c.fail(key, one_stage, {"kernel.stages"});
      return false;
    }
    return true;
  };
  // FlyDSL's combine modes are AITER's down kernels' (our kernels combine as
  // the machine's kernels.combine says); a 1-stage layer has no down kernel.
  aiter_two_stage_key(k.down_combine != DownCombine::machine, "kernel.down_combine",
                      "describes AITER's down kernel: needs kernel.source aiter (our kernels combine as the "
                      "machine's kernels.combine says)",
                      "AITER's 1-stage kernel adds its partial rows atomically and has no down kernel: leave it out "
                      "(or machine)");
  // CK's pipelines are AITER's kernels' (our kernels' LDS is pipeline_stages),
  // and AITER's 1-stage kernel is an assembly kernel, not a CK one.
  for (const auto& [buffers, key] : {std::pair{k.gate_up_lds_buffers, "kernel.gate_up_lds_buffers"},
                                     std::pair{k.down_lds_buffers, "kernel.down_lds_buffers"}}) {
    aiter_two_stage_key(buffers != 0, key,
                        "describes AITER's CK kernels: needs kernel.source aiter (our kernels' LDS buffers are "
                        "kernel.pipeline_stages)",
                        "AITER's 1-stage kernel is an assembly kernel, with no CK pipeline: leave it out (or 0)");
  }
  // The occupancy an assembly stage-1 kernel's name gives: AITER's 2-stage
  // gate/up kernel (our kernels' come from their registers and LDS; AITER's
  // 1-stage kernel's from its kernel list, by the tile's width).
  if (aiter_two_stage_key(k.gate_up_workgroups_per_cu != 0, "kernel.gate_up_workgroups_per_cu",
                          "describes AITER's gate/up kernel: needs kernel.source aiter (our kernels hold as many "
                          "workgroups as their registers and LDS allow)",
                          "AITER's 1-stage kernel holds what its kernel list says for the tile's width: leave it "
                          "out (or 0)")) {
    if (k.gate_up_lds_buffers != 0) {
      // The count is an assembly kernel's, which has no CK pipeline; and the
      // LDS shared that many ways would make the buffers change nothing.
      c.fail("kernel.gate_up_workgroups_per_cu",
             "describes an assembly stage-1 kernel, which has no CK pipeline: give it or "
             "kernel.gate_up_lds_buffers, not both", {"kernel.gate_up_lds_buffers"});
    } else if (k.split_k > 1) {
      // AITER's fused_moe.py calls its assembly stage 1 without ksplit.
      c.fail("kernel.gate_up_workgroups_per_cu",
             "describes an assembly stage-1 kernel, which runs unsplit: give it or kernel.split_k above 1, "
             "not both", {"kernel.split_k"});
    }
  }
  if (k.stages == 1 && k.split_k > 1) {
    c.fail("kernel.split_k", "the 1-stage kernel does not split K: leave it out (or 1) with kernel.stages 1",
           {"kernel.stages"});
  }
  if (!k.gate_up_tile.is_auto() && !k.down_tile.is_auto() && k.gate_up_tile.m != k.down_tile.m) {
    c.fail("kernel.down_tile", "tile M must equal gate_up_tile's M (one sorted block layout)");
  }
}

OperandFormats operand_formats(const ScenarioSpec& s) {
  return {s.dtype, s.weight_dtype.dtype.value_or(s.dtype), s.quant};
}

std::uint64_t shared_slots(const ScenarioSpec& s, const ModelSpec& model) {
  // As the plan fuses them (descriptors/plan/moe_plan.cpp, docs/moe-plan.md
  // "Shared experts"): each shared expert is split into chunks of the routed
  // expert's intermediate size, the last one zero-padded.
  const std::uint64_t inter = model.intermediate_size / s.parallel.tp;
  const std::uint64_t shared_inter = model.shared_intermediate_size / s.parallel.tp;
  if (inter == 0 || shared_inter == 0) return 0;
  return std::uint64_t{model.shared_experts} * ((shared_inter + inter - 1) / inter);
}

std::uint64_t experts_per_gpu(const ScenarioSpec& s, const ModelSpec& model) {
  return (std::uint64_t{model.experts} + s.parallel.redundant_experts) / std::max(1u, s.parallel.ep) +
         shared_slots(s, model);
}

std::uint64_t expert_weight_bytes(const ScenarioSpec& s, const ModelSpec& model) {
  __extension__ typedef unsigned __int128 u128;  // GCC/Clang extension, for overflow-free scaling
  const u128 experts = experts_per_gpu(s, model);
  const u128 inter = model.intermediate_size / s.parallel.tp;
  const OperandFormats f = operand_formats(s);
  // Elements plus their scales, per 1024 elements (weight_scale_bits_per_1024).
  const u128 bits = u128(3) * model.hidden_size * inter * experts *
                    (u128(1024) * dtype_bits(f.weight) + weight_scale_bits_per_1024(f)) / 1024;
  const u128 bytes = bits / 8;
  return bytes > UINT64_MAX ? UINT64_MAX : static_cast<std::uint64_t>(bytes);
}

namespace {
// The expert-parallel group (docs/expert-parallel.md): a split every GPU can
// hold and the interconnect can carry, and placement keys that change the run.
void check_expert_parallel(const ScenarioSpec& s, const ModelSpec& model, const MachineSpec& machine,
                           config::Checker& c) {
  const auto str = [](std::uint64_t v) { return std::to_string(v); };
  const ParallelSpec& p = s.parallel;
  if (p.redundant_experts > 0 && (p.placement != ExpertPlacement::load_aware || p.ep == 1)) {
    c.fail("parallel.redundant_experts",
           "copies of hot experts need placement load_aware and ep > 1 (here placement " +
               std::string(config::enum_name(p.placement)) + ", ep " + str(p.ep) + ")",
           {"parallel.placement", "parallel.ep"});
  }
  if (p.chunks != 0 && p.overlap != EpOverlap::chunked) {
    c.fail("parallel.chunks", "micro-batches are for overlap chunked (here overlap " +
                                  std::string(config::enum_name(p.overlap)) + "): leave chunks out",
           {"parallel.overlap"});
  }
  if (p.combine != EpCombine::all_to_all && p.ep == 1) {
    c.fail("parallel.combine", "with ep 1 there are no other GPUs' outputs to gather: combine " +
                                   std::string(config::enum_name(p.combine)) + " changes nothing",
           {"parallel.ep"});
  }
  if (p.tp_reduce != TpReduce::all_reduce && (p.ep == 1 || p.tp == 1)) {
    c.fail("parallel.tp_reduce", std::string(config::enum_name(p.tp_reduce)) +
                                     ": the reduce of a rank's tensor-parallel GPUs needs ep > 1 and tp > 1 (here ep " +
                                     str(p.ep) + ", tp " + str(p.tp) + ")",
           {"parallel.ep", "parallel.tp"});
  }
  if (p.overlap == EpOverlap::chunked) {
    if (p.ep == 1) {
      c.fail("parallel.overlap", "with ep 1 there is no all-to-all to overlap: overlap chunked changes nothing",
             {"parallel.ep"});
    } else if (p.chunks == 1) {
      c.fail("parallel.chunks", "one micro-batch is overlap none (set chunks >= 2)", {"parallel.overlap"});
    } else if (s.tokens / p.ep < ep_chunks(p)) {
      c.fail("parallel.chunks", str(ep_chunks(p)) + " micro-batches need at least one token of every GPU each: " +
                                    str(s.tokens) + " tokens over ep " + str(p.ep) + " give a GPU only " +
                                    str(s.tokens / p.ep),
             {"tokens", "parallel.ep"});
    }
  }
  if (p.ep == 1) {
    if (p.placement != ExpertPlacement::contiguous) {
      c.fail("parallel.placement", "with ep 1 one GPU holds every expert: placement " +
                                       std::string(config::enum_name(p.placement)) +
                                       " changes nothing (set ep > 1, or leave placement contiguous)",
             {"parallel.ep"});
    }
    return;
  }
  if (p.redundant_experts % p.ep != 0) {
    c.fail("parallel.redundant_experts", "redundant_experts (" + str(p.redundant_experts) +
                                             ") do not split evenly over ep=" + str(p.ep) +
                                             " (every GPU has as many expert slots)");
  }
  if (std::uint64_t(p.redundant_experts) > std::uint64_t(model.experts) * (p.ep - 1)) {
    c.fail("parallel.redundant_experts", "more copies (" + str(p.redundant_experts) + ") than " + str(model.experts) +
                                             " experts x " + str(p.ep - 1) +
                                             " other GPUs can hold without a GPU holding one expert twice");
  }
  if (s.tokens < p.ep) {
    c.fail("tokens", "fewer tokens (" + str(s.tokens) + ") than GPUs (parallel.ep " + str(p.ep) +
                         "): every GPU of the expert-parallel group routes at least one token of its own",
           {"parallel.ep"});
  }
  if (!machine.interconnect) {
    c.fail("parallel.ep", "ep " + str(p.ep) + " needs the machine's GPU-to-GPU links, and machine " + machine.name +
                              " has no interconnect: section (docs/interconnect.md)");
    return;
  }
  const InterconnectSpec& ic = *machine.interconnect;
  // The group: ep GPUs, or ep ranks of tp GPUs each (the key and words name which).
  const std::uint64_t gpus = std::uint64_t(p.ep) * p.tp;
  const std::string key = p.tp > 1 ? "parallel.tp" : "parallel.ep";
  const std::string group = p.tp > 1 ? "ep x tp = " + str(gpus) + " GPUs" : "ep " + str(p.ep);
  const auto fail = [&](const std::string& message) {
    if (p.tp > 1) {
      c.fail(key, message, {"parallel.ep"});
    } else {
      c.fail(key, message);
    }
  };
  if (gpus > ic.gpus_per_node) {
    if (gpus % ic.gpus_per_node != 0) {
      fail(group + (p.tp > 1 ? "" : " GPUs") + " do not fill whole nodes of " + str(ic.gpus_per_node) +
           " (machine " + machine.name + " interconnect.gpus_per_node)");
    } else if (!ic.nic) {
      fail(group + " spans " + str(gpus / ic.gpus_per_node) + " nodes of " + str(ic.gpus_per_node) +
           " GPUs, and machine " + machine.name + " has no interconnect.nic: for traffic between nodes");
    } else if (ic.gpus_per_node % p.tp != 0) {
      fail("tp " + str(p.tp) + " does not divide a node's " + str(ic.gpus_per_node) +
           " GPUs: a rank's tensor-parallel GPUs would span two nodes");
    }
  }
}
}  // namespace

void check(const ScenarioSpec& s, const ModelSpec& model, const MachineSpec& machine,
           config::Checker& c) {
  const auto str = [](std::uint64_t v) { return std::to_string(v); };
  if (s.routing.hot_experts.size() > model.experts) {
    c.fail("routing.hot_experts", "lists " + str(s.routing.hot_experts.size()) +
                                      " experts; model " + model.name + " has only " +
                                      str(model.experts) + " (hot_experts <= experts)");
  }
  for (std::size_t i = 0; i < s.routing.hot_experts.size() && i <= model.experts; ++i) {
    const auto e = s.routing.hot_experts[i];
    if (e >= model.experts) {
      c.fail("routing.hot_experts[" + str(i) + "]",
             "expert " + str(e) + " does not exist: model " + model.name + " has experts 0.." +
                 str(model.experts - 1));
    }
  }
  if (model.experts % s.parallel.ep != 0) {
    c.fail("parallel.ep", "experts (" + str(model.experts) + ") do not split evenly over ep=" +
                              str(s.parallel.ep));
  }
  check_expert_parallel(s, model, machine, c);
  if (model.intermediate_size % s.parallel.tp != 0) {
    c.fail("parallel.tp", "intermediate_size (" + str(model.intermediate_size) +
                              ") does not split evenly over tp=" + str(s.parallel.tp));
  }
  // AITER's kernels exist for CDNA3 and CDNA4 only; elsewhere the key would
  // change nothing, so it is refused.
  if (s.kernel.source == KernelCode::aiter && machine.isa != IsaFamily::cdna3 && machine.isa != IsaFamily::cdna4) {
    c.fail("kernel.source",
           "aiter: AITER's kernels run on CDNA3 and CDNA4 machines only; machine " + machine.name + " is " +
               std::string(config::enum_name(machine.isa)) + " (use source tdmsim)",
           {"machine"});
  }
  // An assembly stage-1 kernel said to hold more workgroups a CU than the
  // CU's wave slots allow: the count would change nothing, so it is refused
  // here, at the key (a tuned row's name is checked when its kernels are
  // built: apps/tdmsim/layer_sim.cpp check_kernels_fit).
  if (const std::uint32_t n = s.kernel.gate_up_workgroups_per_cu; n != 0 && s.kernel.config.empty()) {
    // AITER's gate/up tiles, the default ones included, run 256 threads.
    const std::uint32_t threads = s.kernel.gate_up_tile.is_auto() ? 256 : s.kernel.gate_up_tile.threads;
    const std::uint32_t slots = machine.compute.occupancy(threads, 0, 0).workgroups;
    if (n > slots) {
      c.fail("kernel.gate_up_workgroups_per_cu",
             str(n) + " workgroups a CU, but a CU of machine " + machine.name + " holds at most " + str(slots) +
                 " of " + str(threads) + " threads (simds_per_cu x wave_slots_per_simd = " +
                 str(std::uint64_t{machine.compute.simds_per_cu} * machine.compute.wave_slots_per_simd) + " waves)",
             {"machine"});
    }
  }
  if (std::uint64_t(s.tokens) * model.top_k > (std::uint64_t(1) << 31)) {
    c.fail("tokens", "tokens x top_k exceeds 2^31 routed rows (32-bit sorted token ids)");
  }
  // Footprint: weights + input + gate/up intermediate (2I per routed row) + output.
  __extension__ typedef unsigned __int128 u128;  // GCC/Clang extension, for overflow-free scaling
  const u128 bytes_per_elem = std::max<u128>(1, dtype_bits(s.dtype) / 8);  // fp4: 1 (upper bound)
  const u128 rows = u128(s.tokens) * (model.top_k + shared_slots(s, model));
  const u128 acts = (u128(s.tokens) * model.hidden_size * 2 +
                     rows * 2 * (model.intermediate_size / s.parallel.tp)) * bytes_per_elem;
  const u128 need = acts + expert_weight_bytes(s, model);
  if (need > machine.memory.hbm.capacity.bytes) {
    c.fail("tokens",
           fmt::format("this layer needs about {:.1f} GB of device memory, but {} has {:.1f} GB (memory.hbm.capacity) "
                       "(reduce tokens or shard with parallel.tp / parallel.ep)",
                       static_cast<double>(need) / 1e9, machine.name,
                       static_cast<double>(machine.memory.hbm.capacity.bytes) / 1e9));
  }
}

}  // namespace tdmsim

namespace tdmsim::config {

units::Parsed<CapacityFactor> ValueTraits<CapacityFactor>::parse(std::string_view t) {
  units::Parsed<CapacityFactor> out;
  if (t == "none") return out;
  const units::Parsed<double> v = parse_real(t);
  if (!v) {
    out.error = "expected a capacity factor > 0 (e.g. 1.25) or none: " + v.error;
  } else if (!(v.value > 0.0)) {
    // 0 would mean "no room at all" rather than "no limit": refused, so the
    // two can never be confused.
    out.error = "capacity factor must be greater than 0 (or none for no limit), got '" +
                std::string(t) + "'";
  } else {
    out.value.factor = v.value;
  }
  return out;
}

std::string ValueTraits<CapacityFactor>::text(const CapacityFactor& v) {
  return v.none() ? "none" : format_real(v.factor);
}

units::Parsed<KernelTile> ValueTraits<KernelTile>::parse(std::string_view t) {
  units::Parsed<KernelTile> out;
  if (t == "auto") return out;
  std::uint32_t v[4] = {};
  const char* p = t.data();
  const char* end = t.data() + t.size();
  for (int i = 0; i < 4; ++i) {
    auto [next, ec] = std::from_chars(p, end, v[i]);
    const bool last = i == 3;
    if (ec != std::errc{} || v[i] == 0 || (last ? next != end : (next == end || *next != 'x'))) {
      out.error = "expected a tile 'THREADSxMxNxK' such as '256x32x64x128' or 'auto', got '" +
                  std::string(t) + "'";
      return out;
    }
    p = last ? next : next + 1;
  }
  out.value = {v[0], v[1], v[2], v[3]};
  return out;
}

std::string ValueTraits<KernelTile>::text(const KernelTile& v) {
  if (v.is_auto()) return "auto";
  return std::to_string(v.threads) + "x" + std::to_string(v.m) + "x" + std::to_string(v.n) +
         "x" + std::to_string(v.k);
}

}  // namespace tdmsim::config
