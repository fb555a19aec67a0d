// A whole GPU elaborated from a machine spec: dispatcher, dies (XCDs) of CUs
// with an L2 each, a fabric link per die, the MALL (where present) and HBM,
// joined by TLM-2.0 sockets. Names follow gpu.xcd[2].cu[17] (gpu.die[0] on
// single-die parts) and key every stat.
//
// SystemC allows one elaboration per process: build the Gpus of a process
// before the first run, and run any number of kernel sequences on them. Each
// keeps its own state and global time (SimClock), so several may even run at
// once in one SystemC simulation (submit, sc_core::sc_start, collect).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "isa/tile_program.h"
#include "sim/core/stats.h"
#include "sim/core/trace.h"
#include "sim/platform/dispatcher.h"
#include "workloads/specs/machine_spec.h"

namespace tdmsim::sim {

class ComputeUnit;
class L2Cache;
class Fabric;
class Mall;
class Hbm;

struct SimOptions {
  Tick quantum = 500 * kTicksPerNs;  // how far a CU may run ahead of global time
  bool trace = false;
  Dispatcher::Progress progress;     // optional: workgroups handed out, per kernel
};

// The SystemC module tree (gpu > xcd[i] > cu[j], l2, fabric; gpu > hbm, mall,
// dispatcher, host), built in constructors so SystemC's hierarchical names
// come out as gpu.xcd[2].cu[17].
struct GpuModule;

class Gpu {
 public:
  Gpu(const MachineSpec& machine, const SimOptions& options = {});
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  // Runs the kernels back to back (one stream) and returns their timings:
  // submit(kernels), sc_core::sc_start(), collect(). The watchdog:
  // with `time_limit` (simulated ticks; 0: none), a run still unfinished
  // that long after it starts is stopped and SimulationStalled thrown
  // (callers derive the limit from a roofline of the work, layer_sim.cpp).
  std::vector<KernelTiming> run(const std::vector<isa::KernelLaunch>& kernels, Tick time_limit = 0);
  // Queues `kernels` (kept by reference until collect()) for the next
  // sc_core::sc_start(); collect() then returns their timings. Throws
  // NotSimulatable, before anything runs, for a kernel whose workgroup
  // does not fit on one CU of this machine (threads, LDS, registers).
  // With a machine `power:` section submit() first runs the governor's probe
  // to its end (an sc_start of its own: submit such a Gpu before others).
  void submit(const std::vector<isa::KernelLaunch>& kernels, Tick time_limit = 0);
  std::vector<KernelTiming> collect();

  const MachineSpec& machine() const { return machine_; }
  StatRegistry& stats() { return stats_; }
  TraceWriter* trace() { return trace_.get(); }
  const Hbm& hbm() const;
  std::uint32_t total_cus() const { return machine_.compute.total_cus(); }

 private:
  MachineSpec machine_;
  SimOptions options_;
  StatRegistry stats_;
  std::unique_ptr<TraceWriter> trace_;
  std::unique_ptr<GpuModule> top_;
  // With a machine `power:` section: the clock governor's probe, a second
  // GPU that runs each kernel sequence at the peak clock first.
  std::unique_ptr<StatRegistry> probe_stats_;
  std::unique_ptr<GpuModule> probe_;
  Tick limit_ = 0;  // the current run's time limit (0: none)
};

// Why one workgroup of `p` cannot reside on a CU of `cu` ("" if it can):
// "needs 96 KiB of LDS, compute.lds_per_cu is 64 KiB".
std::string fit_problem(const ComputeSpec& cu, const isa::TileProgram& p);
// The machine key whose value fit_problem names ("compute.lds_per_cu", ...);
// empty where the program fits.
std::string fit_problem_key(const ComputeSpec& cu, const isa::TileProgram& p);

// How many times slower than HBM's peak the slowest stage of the memory path
// is (the fabric, the IOD links, the MALL, the L2's channels), at least 1:
// a roofline floor takes bytes at HBM's peak, and a machine given a slow
// fabric is that much slower without being stuck.
double memory_path_slowdown(const MachineSpec& m);

// How many times below its peak the power limit can hold the clock: peak over
// the clock it settles to at the most activity a kernel can have (1 without a
// power: section).
double clock_slowdown(const MachineSpec& m);

// The watchdog's time limit for running `kernels` on `m` when their roofline
// floor (compulsory bytes at peak bandwidth, FLOPs at peak rate) is
// `floor_s`: kStallFactor times the floor (times memory_path_slowdown and
// clock_slowdown) plus as much again of each kernel's fixed costs (launch,
// TDM fetch, decode and slot releases, the slot lengths its own descriptor
// asks for, workgroup dispatch, the latency of a load that misses every cache
// per main-loop iteration and round of workgroups), plus 1 ms. Far beyond any time the model predicts for
// a working machine (shipped runs take at most tens of times their floor),
// so only a stuck run, or parameters that make the machine absurdly slow,
// reach it.
inline constexpr double kStallFactor = 1000;
Tick stall_limit(const MachineSpec& m, double floor_s, const std::vector<isa::KernelLaunch>& kernels);

// "xcd" for multi-die AMD parts, "die" otherwise.
std::string die_kind(const MachineSpec& m);

}  // namespace tdmsim::sim
