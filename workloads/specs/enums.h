// Enumerations used by configuration files. Each one's YAML spellings are
// declared once here, beside the enum, and feed parsing, output and the reference.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

#include "workloads/config/schema.h"

namespace tdmsim {

enum class Vendor { amd, nvidia };
// Instruction-set family: selects the matrix-instruction table in isa/.
enum class IsaFamily { cdna3, cdna4, gfx1250, hopper };
enum class HbmGeneration { hbm3, hbm3e, hbm4 };
// Element types. Appended only (descriptor wire codes and YAML names follow
// this list): fp8_e4m3 is OCP E4M3FN (MI355X, Hopper), fp8_e4m3_fnuz the
// gfx942 (MI300X) variant (bias 8, no -0, 0x80 NaN, max 240); mxfp4 is the
// fp4 E2M1 element (always with OCP MX E8M0 scales per 32, hence the name);
// int4 a signed 4-bit integer [-8, 7]. docs/emulator.md has the numerics.
enum class DType { fp32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8, mxfp4, fp8_e4m3_fnuz, int4 };
// How router logits become scores.
enum class Scoring { softmax, sigmoid };
// Expert MLP activation: SwiGLU (SiLU gate), GeGLU (GELU gate), gpt-oss's clamped SwiGLU.
enum class Activation { silu, gelu, swiglu_oai };
// Scales of the quantised GEMM operands (docs/yaml-reference.md "Formats"):
// per_token is per row of activations and per output channel of weights;
// block_128 is 1x128 on activations and 128x128 on weights; per_1x32 one OCP
// MX E8M0 scale per 32 elements along K (MXFP8/MXFP4); group_32 / group_128
// one fp32 scale per 32 / 128 weights along K of an output channel (INT4).
enum class Quant { none, per_tensor, per_token, block_128, per_1x32, group_32, group_128 };
enum class RoutingSource { uniform, zipf, lognormal, hot, router, trace };
// Whether a layer's router (gate GEMM, scoring, top-k) is timed before the
// sort, or its output is already in memory when the layer starts (as in
// fused-MoE kernel benchmarks, which time from the top-k ids on).
enum class RouterStage { timed, given };
// What happens to a token-expert pick above its expert's capacity
// (routing.capacity_factor): dropped, or moved to the token's next-best
// expert that still has room (docs/moe-plan.md "Expert capacity").
enum class CapacityOverflow { drop, reroute };
enum class ExecPath { software, tdm, both };
// Where an expert-parallel layer's experts live (docs/expert-parallel.md):
// expert e on rank e / (E/N) (contiguous), on rank e mod N (round_robin), or
// replicated and packed by the draw's load (load_aware, EPLB-style).
enum class ExpertPlacement { contiguous, round_robin, load_aware };
// MI300-class partition modes (docs/partitions.md): the XCDs split into 1, 2, 4
// or 8 logical GPUs; HBM as one interleaved pool or four NUMA quarters.
enum class ComputePartition { spx, dpx, qpx, cpx };
enum class MemoryPartition { nps1, nps4 };
// How the requests of a request stream (serving:) arrive: docs/serving.md.
enum class ArrivalProcess { poisson, fixed, trace };
// Whether an expert-parallel layer overlaps its all-to-alls with expert
// compute: none (the collectives are barriers), or chunked (the batch split
// into micro-batches whose dispatch, experts and combine are pipelined, as
// two-batch overlap does; docs/expert-parallel.md "Overlap").
enum class EpOverlap { none, chunked };
// How an expert-parallel layer's outputs come back: all_to_all (each GPU's
// partial sums to the tokens' owners) or all_gather (every GPU's output rows
// to every GPU, seed 000's multi-GPU scheme; docs/expert-parallel.md).
enum class EpCombine { all_to_all, all_gather };
// How the tensor-parallel GPUs of one expert-parallel rank (parallel.tp > 1)
// sum their partial expert outputs: all_reduce (each ends with every row) or
// reduce_scatter (each ends with 1/tp of every row; docs/expert-parallel.md).
enum class TpReduce { all_reduce, reduce_scatter };
// dynamic: the unit picks each next job at run time from the completions so far
// (sim/platform/tdm_slot_runtime.h); appended last (descriptor wire code 4).
enum class TdmPolicy { load_balance, capacity_first, low_latency, custom, dynamic };
// What a time slot of the TDM unit means at run time (docs/moe-timing.md "Slot models"):
// one machine wave opening after the previous slot's length; an in-flight budget
// refilled as CUs free up; or wave-synchronous with a slot closing as soon as its
// jobs have all finished.
enum class TdmSlotModel { wave_synchronous, continuous, skip_drained };
// Which dword0 bit of a TDM group0 is gather-enable: sources disagree (hardware.md 1.3).
enum class GatherBitLayout { mlir, triton };
// oat: one parameter at a time around the base (a sensitivity study).
enum class SweepMode { grid, zip, random, lhs, oat };
// Matrix instructions the software kernels use: the ISA's fastest, or (Hopper)
// the warp-level mma.sync that our HIP kernels compile to on NVIDIA, or wgmma
// for the tiles our sm_90a kernels run with it and mma.sync for the others.
enum class MatrixInstructions { isa, mma_sync, wgmma };
// How 8-bit operands reach the matrix pipe: as they are, or converted to f16
// in registers first (our NVIDIA kernels, docs/gpu-kernels.md).
enum class Fp8Operands { native, f16 };
// How the down stage combines a token's top-k rows into its output row:
// atomic adds in bf16 or in fp32 (after a clearing kernel), or `reduce`: plain
// bf16 stores of every (token, slot) row, then a kernel summing each token's
// rows and one copying the sum into the output (AITER's FlyDSL stage 2 in its
// "reduce" mode).
enum class CombineType { bf16, fp32, reduce };
// How AITER's down kernel combines, where a tuned table's kernel name (or the
// scenario) says: FlyDSL's stage-2 kernels come in two modes,
// flydsl_moe2_..._atomic and ..._reduce (aiter/ops/flydsl moe kernels,
// get_flydsl_stage2_kernels); `machine` leaves it to kernels.combine.
enum class DownCombine { machine, atomic, reduce };
// How the dispatcher places a kernel's workgroups: in index order on whichever
// CU slot frees first (`index`), or AMD's multi-XCD parts' way: workgroup i to
// die i mod dies, each die's CUs taking its workgroups in order, one CU after
// another, spread evenly at the start (every CU one before any takes two:
// `die_round_robin`); or, as kernels that
// remap their workgroup index for L2 locality run, each die a contiguous run
// of the grid (`die_chunked`), its CUs taking it the same way. `vendor` (the
// default) is the part's own dispatch: die_round_robin on an AMD part (every
// multi-XCD Instinct part hands workgroups out so), index on the others
// (effective_workgroup_order, machine_spec.h).
enum class WorkgroupOrder { vendor, index, die_round_robin, die_chunked };
// How the L2's atomic units share their rate among the workgroups whose
// atomic adds (a MoE combine, split-K partials) reach them together: in
// arrival order, a workgroup's adds all served before the next one's
// (`fifo`), or round robin among all of them, so that the workgroups of a
// grid that reach their epilogue together finish it together (`workgroups`:
// each takes at least its bytes at the units' rate over the workgroups
// resident at once).
enum class AtomicSharing { fifo, workgroups };
// Where the fp8 intermediate is quantised: in the gate/up epilogue, or by a
// separate kernel between the stages.
enum class Fp8Intermediate { epilogue, kernel };
// Which rule chooses what a scenario's kernel: section leaves open: the
// project's own (docs/moe-plan.md "Kernel heuristic") or AITER's defaults
// (descriptors/plan/aiter_heuristic.h).
enum class KernelHeuristic { tdmsim, aiter };
// Whose kernels a layer runs (scenario key kernel.source): the project's own
// (kernels/moe, whose AMD main loops are charged the instruction mix of their
// code objects, sim/programs/cdna_loop_mix.h) or AITER's CK / assembly
// kernels (whose code is not ours: no mix of ours is charged).
enum class KernelCode { tdmsim, aiter };

// Bits per element of a dtype.
constexpr std::uint32_t dtype_bits(DType t) {
  switch (t) {
    case DType::fp32: return 32;
    case DType::bf16:
    case DType::fp16: return 16;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
    case DType::fp8_e4m3_fnuz:
    case DType::int8: return 8;
    case DType::mxfp4:
    case DType::int4: return 4;
  }
  return 0;
}

}  // namespace tdmsim

namespace tdmsim::config {

#define TDMSIM_ENUM_NAMES(E, N, ...)                                               \
  template <>                                                                      \
  struct EnumTraits<E> {                                                           \
    static constexpr std::array<std::pair<E, std::string_view>, N> names{{__VA_ARGS__}}; \
  }

TDMSIM_ENUM_NAMES(Vendor, 2, {Vendor::amd, "amd"}, {Vendor::nvidia, "nvidia"});
TDMSIM_ENUM_NAMES(IsaFamily, 4, {IsaFamily::cdna3, "cdna3"}, {IsaFamily::cdna4, "cdna4"},
                  {IsaFamily::gfx1250, "gfx1250"}, {IsaFamily::hopper, "hopper"});
TDMSIM_ENUM_NAMES(HbmGeneration, 3, {HbmGeneration::hbm3, "hbm3"},
                  {HbmGeneration::hbm3e, "hbm3e"}, {HbmGeneration::hbm4, "hbm4"});
TDMSIM_ENUM_NAMES(DType, 9, {DType::fp32, "fp32"}, {DType::bf16, "bf16"}, {DType::fp16, "fp16"},
                  {DType::fp8_e4m3, "fp8_e4m3"}, {DType::fp8_e5m2, "fp8_e5m2"},
                  {DType::int8, "int8"}, {DType::mxfp4, "mxfp4"},
                  {DType::fp8_e4m3_fnuz, "fp8_e4m3_fnuz"}, {DType::int4, "int4"});
TDMSIM_ENUM_NAMES(Scoring, 2, {Scoring::softmax, "softmax"}, {Scoring::sigmoid, "sigmoid"});
TDMSIM_ENUM_NAMES(Activation, 3, {Activation::silu, "silu"}, {Activation::gelu, "gelu"},
                  {Activation::swiglu_oai, "swiglu_oai"});
TDMSIM_ENUM_NAMES(Quant, 7, {Quant::none, "none"}, {Quant::per_tensor, "per_tensor"},
                  {Quant::per_token, "per_token"}, {Quant::block_128, "block_128"},
                  {Quant::per_1x32, "per_1x32"}, {Quant::group_32, "group_32"},
                  {Quant::group_128, "group_128"});
TDMSIM_ENUM_NAMES(RoutingSource, 6, {RoutingSource::uniform, "uniform"},
                  {RoutingSource::zipf, "zipf"}, {RoutingSource::lognormal, "lognormal"},
                  {RoutingSource::hot, "hot"}, {RoutingSource::router, "router"},
                  {RoutingSource::trace, "trace"});
TDMSIM_ENUM_NAMES(RouterStage, 2, {RouterStage::timed, "timed"}, {RouterStage::given, "given"});
TDMSIM_ENUM_NAMES(CapacityOverflow, 2, {CapacityOverflow::drop, "drop"},
                  {CapacityOverflow::reroute, "reroute"});
TDMSIM_ENUM_NAMES(ExecPath, 3, {ExecPath::software, "software"}, {ExecPath::tdm, "tdm"},
                  {ExecPath::both, "both"});
TDMSIM_ENUM_NAMES(ExpertPlacement, 3, {ExpertPlacement::contiguous, "contiguous"},
                  {ExpertPlacement::round_robin, "round_robin"}, {ExpertPlacement::load_aware, "load_aware"});
TDMSIM_ENUM_NAMES(ComputePartition, 4, {ComputePartition::spx, "spx"}, {ComputePartition::dpx, "dpx"},
                  {ComputePartition::qpx, "qpx"}, {ComputePartition::cpx, "cpx"});
TDMSIM_ENUM_NAMES(MemoryPartition, 2, {MemoryPartition::nps1, "nps1"}, {MemoryPartition::nps4, "nps4"});
TDMSIM_ENUM_NAMES(ArrivalProcess, 3, {ArrivalProcess::poisson, "poisson"}, {ArrivalProcess::fixed, "fixed"},
                  {ArrivalProcess::trace, "trace"});
TDMSIM_ENUM_NAMES(EpCombine, 2, {EpCombine::all_to_all, "all_to_all"}, {EpCombine::all_gather, "all_gather"});
TDMSIM_ENUM_NAMES(TpReduce, 2, {TpReduce::all_reduce, "all_reduce"}, {TpReduce::reduce_scatter, "reduce_scatter"});
TDMSIM_ENUM_NAMES(EpOverlap, 2, {EpOverlap::none, "none"}, {EpOverlap::chunked, "chunked"});
TDMSIM_ENUM_NAMES(TdmPolicy, 5, {TdmPolicy::load_balance, "load_balance"},
                  {TdmPolicy::capacity_first, "capacity_first"},
                  {TdmPolicy::low_latency, "low_latency"}, {TdmPolicy::custom, "custom"},
                  {TdmPolicy::dynamic, "dynamic"});
TDMSIM_ENUM_NAMES(TdmSlotModel, 3, {TdmSlotModel::wave_synchronous, "wave_synchronous"},
                  {TdmSlotModel::continuous, "continuous"},
                  {TdmSlotModel::skip_drained, "skip_drained"});
TDMSIM_ENUM_NAMES(GatherBitLayout, 2, {GatherBitLayout::mlir, "mlir"},
                  {GatherBitLayout::triton, "triton"});
TDMSIM_ENUM_NAMES(MatrixInstructions, 3, {MatrixInstructions::isa, "isa"},
                  {MatrixInstructions::mma_sync, "mma_sync"}, {MatrixInstructions::wgmma, "wgmma"});
TDMSIM_ENUM_NAMES(Fp8Operands, 2, {Fp8Operands::native, "native"}, {Fp8Operands::f16, "f16"});
TDMSIM_ENUM_NAMES(CombineType, 3, {CombineType::bf16, "bf16"}, {CombineType::fp32, "fp32"},
                  {CombineType::reduce, "reduce"});
TDMSIM_ENUM_NAMES(DownCombine, 3, {DownCombine::machine, "machine"}, {DownCombine::atomic, "atomic"},
                  {DownCombine::reduce, "reduce"});
TDMSIM_ENUM_NAMES(WorkgroupOrder, 4, {WorkgroupOrder::vendor, "vendor"},
                  {WorkgroupOrder::index, "index"},
                  {WorkgroupOrder::die_round_robin, "die_round_robin"},
                  {WorkgroupOrder::die_chunked, "die_chunked"});
TDMSIM_ENUM_NAMES(AtomicSharing, 2, {AtomicSharing::fifo, "fifo"},
                  {AtomicSharing::workgroups, "workgroups"});
TDMSIM_ENUM_NAMES(Fp8Intermediate, 2, {Fp8Intermediate::epilogue, "epilogue"},
                  {Fp8Intermediate::kernel, "kernel"});
TDMSIM_ENUM_NAMES(SweepMode, 5, {SweepMode::grid, "grid"}, {SweepMode::zip, "zip"},
                  {SweepMode::random, "random"}, {SweepMode::lhs, "lhs"}, {SweepMode::oat, "oat"});

TDMSIM_ENUM_NAMES(KernelHeuristic, 2, {KernelHeuristic::tdmsim, "tdmsim"},
                  {KernelHeuristic::aiter, "aiter"});
TDMSIM_ENUM_NAMES(KernelCode, 2, {KernelCode::tdmsim, "tdmsim"}, {KernelCode::aiter, "aiter"});

#undef TDMSIM_ENUM_NAMES

}  // namespace tdmsim::config
