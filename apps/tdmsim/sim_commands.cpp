// `tdmsim microbench`: streaming bandwidth, pointer-chase latency and GEMM
// throughput on a simulated machine, the same kernels we time on real GPUs.
#include "apps/tdmsim/sim_commands.h"
#include "workloads/specs/partition.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include "apps/tdmsim/output_dir.h"
#include "apps/tdmsim/input_files.h"
#include "isa/matrix_table.h"
#include "sim/platform/gpu.h"
#include "sim/platform/host_memory.h"
#include "sim/programs/microbench.h"
#include "workloads/config/loader.h"
#include "workloads/config/writer.h"
#include "workloads/util/atomic_write.h"

namespace tdmsim::cli {
namespace {

namespace fs = std::filesystem;

struct MicrobenchOpts {
  std::string kind;
  std::string machine = "mi300x";
  std::string bytes = "1GiB";
  std::string footprint = "2GiB";
  std::uint32_t stride = 256;
  std::uint32_t hops = 20000;
  std::uint32_t m = 8192, n = 8192, k = 8192;
  std::string dtype = "bf16";
  std::string output;
  bool trace = false;
  bool quiet = false;
  bool force = false;
};

// A refused option, as every command's bad input reads ("tdmsim: error: --bytes: ...", exit 2).
[[noreturn]] void bad_option(const std::string& option, const std::string& why) {
  throw BadInput(option + ": " + why);
}

void run_microbench(const MicrobenchOpts& o, CommandResult& result) {
  const config::Loader loader(config::default_roots());
  const fs::path here = fs::current_path() / "_";
  const auto machine = loader.machine(
      loader.find(o.machine, config::SpecKind::machine, here, {"--machine", 0, 0}, "machine"));
  // A partitioned machine: the benchmark runs on one partition (docs/partitions.md).
  const MachineSpec m = partition_machine(machine.spec);
  // The buffers must fit in the machine's memory (their addresses in the
  // cache models' range), and the simulation in the host's.
  const std::uint64_t capacity = m.memory.hbm.capacity.bytes;
  const auto too_big = [&](const char* what, double bytes) {
    if (bytes > static_cast<double>(capacity)) {
      bad_option(what, fmt::format("{:.3g} bytes of buffers exceed machine {}'s memory.hbm.capacity ({})",
                                                   bytes, m.name, units::format(m.memory.hbm.capacity)));
    }
  };
  // The sizes, read once: a stream's buffer, a chase's footprint.
  const bool stream = o.kind == "copy" || o.kind == "read";
  const std::uint64_t buffer = stream ? size_option(o.bytes, "--bytes").bytes : 0;
  const std::uint64_t fp = o.kind == "chase" ? size_option(o.footprint, "--footprint").bytes : 0;
  sim::MemoryEstimate estimate = sim::machine_memory(m);
  if (stream) {
    too_big("--bytes", static_cast<double>(buffer) * (o.kind == "copy" ? 2 : 1));
    if (o.trace) sim::add_trace_memory(estimate, buffer / (64 * 1024) + 1);
  } else if (o.kind == "chase") {
    too_big("--footprint", static_cast<double>(fp));
    if (fp < o.stride) bad_option("--footprint", "must hold at least one --stride");
    sim::add_chase_memory(estimate, fp, o.stride, o.hops);
  } else {
    const double elem = o.dtype == "bf16" ? 2 : 1;
    too_big("--M/--N/--K", (double(o.m) * o.k + double(o.n) * o.k) * elem + double(o.m) * o.n * 2);
    if (o.trace) sim::add_trace_memory(estimate, (std::uint64_t{o.m} / 16 + 1) * (o.n / 16 + 1));
  }
  sim::check_memory(estimate, sim::memory_limit(), fmt::format("microbench {} on machine {}", o.kind,
                                                               machine.file.string()));
  // The output folder is checked (and staged) before the simulation, so a
  // bad --output fails at once rather than after minutes of work.
  std::unique_ptr<StagedDir> dir;
  if (!o.output.empty()) dir = std::make_unique<StagedDir>(o.output, o.force, machine_files(machine));
  sim::SimOptions opts;
  opts.trace = o.trace;
  sim::Gpu gpu(m, opts);
  sim::AddressSpace as;
  std::vector<isa::KernelLaunch> kernels;  // the last one is measured
  double work = 0;  // bytes or FLOPs, for the achieved rate
  double roofline_s = 0;  // its roofline, for the watchdog
  std::string metric;
  const double hbm_bw = static_cast<double>(m.memory.hbm.bandwidth.bytes_per_s);
  if (stream) {
    kernels.push_back(o.kind == "copy" ? sim::programs::stream_copy(as, buffer)
                                       : sim::programs::stream_read(as, buffer));
    work = static_cast<double>(buffer) * (o.kind == "copy" ? 2.0 : 1.0);
    roofline_s = work / hbm_bw;
    metric = "bandwidth";
  } else if (o.kind == "chase") {
    kernels = sim::programs::pointer_chase(as, fp, o.stride, o.hops);
    work = o.hops;
    // Each hop at most an L2 miss all the way to a closed HBM row behind a
    // refresh (warm-up and timed walk).
    const auto& mem = m.memory;
    const double hop = 1e-12 * static_cast<double>(mem.l2.hit_latency.ps + mem.fabric.latency.ps + mem.hbm.latency.ps +
                                                   mem.hbm.row_miss_penalty.ps + mem.hbm.refresh_time.ps +
                                                   mem.hbm.turnaround.ps + (mem.mall ? mem.mall->hit_latency.ps : 0));
    roofline_s = 2.0 * o.hops * hop;
    metric = "latency";
  } else {
    auto dt = config::enum_from_name<DType>(o.dtype);
    if (!dt) bad_option("--dtype", "expected bf16 or fp8_e4m3");
    kernels.push_back(sim::programs::gemm(as, {o.m, o.n, o.k, *dt}, m));
    work = 2.0 * o.m * o.n * o.k;
    const double elem = dtype_bits(*dt) / 8.0;
    roofline_s = std::max(work / isa::peak_matrix_flops(m, *dt),
                       ((double(o.m) * o.k + double(o.n) * o.k) * elem + double(o.m) * o.n * 2) / hbm_bw);
    metric = "throughput";
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto timings = gpu.run(kernels, sim::stall_limit(m, roofline_s, kernels));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& t = timings.back();
  // The figure a device benchmark reports: kernel time without launch overhead.
  const double secs = static_cast<double>(t.end - t.start) * 1e-12;
  double value = 0;
  std::string unit;
  if (metric == "bandwidth") {
    value = work / secs / 1e9;
    unit = "GB/s";
  } else if (metric == "latency") {
    value = secs * 1e9 / work;
    unit = "ns/hop";
  } else {
    value = work / secs / 1e12;
    unit = "TFLOP/s";
  }
  config::Json summary = config::Json::object();
  summary["machine"] = m.name;
  summary["kernel"] = o.kind;
  summary["workgroups"] = t.workgroups;
  summary["kernel_time_us"] = secs * 1e6;
  summary["clock_mhz"] = t.clock_hz * 1e-6;  // under the power limit (machine `power:`)
  // The machine's launch overhead before it (the gap between dependent
  // kernels): back-to-back device measurements (CUDA graphs) include it.
  summary["launch_overhead_us"] = static_cast<double>(t.start - t.launch) * 1e-6;
  summary[metric] = {{"value", value}, {"unit", unit}};
  // The physical bound the result must respect (checked by the test suite).
  if (metric == "bandwidth") {
    summary["bound"] = {{"kind", "max"}, {"value", static_cast<double>(m.memory.hbm.bandwidth.bytes_per_s) / 1e9},
                        {"what", "HBM datasheet peak, GB/s"}};
  } else if (metric == "throughput") {
    // The physical roofline: no faster than its FLOPs at the matrix peak, nor
    // than its compulsory bytes (A, B read once, C written once) at the HBM peak.
    const DType dt = *config::enum_from_name<DType>(o.dtype);
    const double peak = isa::peak_matrix_flops(m, dt);
    const double elem = dtype_bits(dt) / 8.0;
    const double bytes = (double(o.m) * o.k + double(o.n) * o.k) * elem + double(o.m) * o.n * 2;
    const double floor_s =
        std::max(work / peak, bytes / static_cast<double>(m.memory.hbm.bandwidth.bytes_per_s));
    summary["bound"] = {{"kind", "max"}, {"value", work / floor_s / 1e12},
                        {"what", "roofline: min(matrix peak, compulsory bytes at HBM peak), TFLOP/s"}};
  } else {
    summary["bound"] = {{"kind", "min"}, {"value", m.memory.l2.hit_latency.ns()},
                        {"what", "L2 hit latency, ns"}};
  }
  summary["simulation_wall_s"] = wall;
  if (!o.quiet) {
    fmt::print("{} on {}: {:.1f} {} (kernel {:.2f} us, {} workgroups, simulated in {:.2f} s)\n",
               o.kind, m.name, value, unit, secs * 1e6, t.workgroups, wall);
  }
  if (dir) {
    util::write_file_atomic(dir->file("summary.json"), summary.dump(2) + "\n");
    util::write_file_atomic(dir->file("stats.json"), gpu.stats().to_json_text() + "\n");
    config::Json resolved = config::Json::object();
    resolved["machine"] = config::to_json(m);
    resolved["machine_file"] = machine.file.string();
    resolved["microbench"] = {{"kind", o.kind}, {"bytes", o.bytes}, {"footprint", o.footprint},
                              {"stride", o.stride}, {"hops", o.hops}, {"m", o.m}, {"n", o.n},
                              {"k", o.k}, {"dtype", o.dtype}};
    util::write_file_atomic(dir->file("config.json"), resolved.dump(2) + "\n");
    if (gpu.trace() != nullptr) util::write_file_atomic(dir->file("trace.json"), gpu.trace()->to_json());
    dir->commit();
  }
  result.exit_code = kExitOk;
}

}  // namespace

void add_sim_commands(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<MicrobenchOpts>();
  auto* mb = app.add_subcommand(
      "microbench", "Run a calibration microbenchmark on a simulated machine: streaming "
                    "copy/read bandwidth, pointer-chase latency or GEMM throughput");
  mb->add_option("kind", o->kind, "copy, read, chase or gemm")
      ->required()
      ->check(CLI::IsMember({"copy", "read", "chase", "gemm"}));
  mb->add_option("-m,--machine", o->machine, "machine name (workloads/machines) or YAML file");
  mb->add_option("--bytes", o->bytes, "copy/read: buffer size (1GiB, or a plain number of bytes)");
  mb->add_option("--footprint", o->footprint, "chase: bytes covered by the random cycle (2GiB, or a plain number)");
  mb->add_option("--stride", o->stride, "chase: bytes between chased elements")->check(CLI::Range(4u, 1u << 20));
  mb->add_option("--hops", o->hops, "chase: dependent loads")->check(CLI::Range(1u, 10000000u));
  mb->add_option("--M", o->m, "gemm: rows of A and C")->check(CLI::Range(1u, 1u << 20));
  mb->add_option("--N", o->n, "gemm: columns of C")->check(CLI::Range(1u, 1u << 20));
  mb->add_option("--K", o->k, "gemm: reduction length")->check(CLI::Range(1u, 1u << 20));
  mb->add_option("--dtype", o->dtype, "gemm: bf16 or fp8_e4m3")->check(CLI::IsMember({"bf16", "fp8_e4m3"}));
  mb->add_option("-o,--output", o->output,
                 "write summary.json, stats.json, config.json (and trace.json) to this new folder");
  mb->add_flag("--force", o->force, "replace an existing output folder");
  mb->add_flag("--trace", o->trace, "record a Perfetto/Chrome trace (trace.json)");
  mb->add_flag("-q,--quiet", o->quiet, "print nothing on success");
  mb->callback([o, mb, &result] {
    // An option of another kind would be read by nothing: refused, as a
    // misspelt one is.
    const std::pair<const char*, std::vector<std::string>> only[] = {
        {"--bytes", {"copy", "read"}}, {"--footprint", {"chase"}}, {"--stride", {"chase"}}, {"--hops", {"chase"}},
        {"--M", {"gemm"}},           {"--N", {"gemm"}},         {"--K", {"gemm"}},       {"--dtype", {"gemm"}}};
    for (const auto& [opt, kinds] : only) {
      if (mb->count(opt) == 0 || std::find(kinds.begin(), kinds.end(), o->kind) != kinds.end()) continue;
      bad_option(opt, fmt::format("is for microbench {} only; {} does not use it",
                                                  fmt::join(kinds, " and "), o->kind));
    }
    if (o->trace && o->output.empty()) {
      bad_option("--trace", "needs --output: the trace is written there as trace.json");
    }
    run_microbench(*o, result);
  });
}

}  // namespace tdmsim::cli
