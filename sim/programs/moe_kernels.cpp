#include "sim/programs/moe_kernels.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "descriptors/format/moe_builder.h"
#include "descriptors/plan/aiter_kernels.h"
#include "isa/matrix_table.h"
#include "workloads/specs/quant_formats.h"

#include "sim/programs/moe_program_common.h"
#include "sim/programs/moe_router.h"

namespace tdmsim::sim::programs {

using namespace moe_detail;

namespace {

std::vector<std::uint64_t> row_offsets(const MoePlan& plan, std::uint32_t block, std::uint64_t row_bytes,
                                       bool per_slot = false) {
  std::vector<std::uint64_t> v;
  const std::uint32_t bm = plan.layout.block_m;
  const std::uint32_t per_row = per_slot ? 1 : plan.shape.slots();  // a row id is token * slots + slot
  for (std::uint32_t r = block * bm; r < (block + 1) * bm && r < plan.layout.padded_rows; ++r) {
    const std::uint32_t row = plan.layout.sorted_rows[r];
    if (row == plan.layout.sentinel) continue;  // padding sits only at an expert's tail
    v.push_back(std::uint64_t{row / per_row} * row_bytes);
  }
  return v;
}

}  // namespace

double element_bytes(DType t) { return dtype_bits(t) / 8.0; }

// In-register weight dequantisation of the mixed pairs: the kernel
// profile's dequant costs (estimates, docs/calibration.md "Mixed-precision
// dequantisation"), none where the matrix instruction takes the pair.
double dequant_ops_per_weight(const MachineSpec& m, DType activation, DType weight) {
  if (weight == activation) return 0.0;
  if (weight == DType::mxfp4) {
    // CDNA4's f8f6f4 MFMA takes fp8 A and fp4 B as they are (a8w4: no
    // conversion; ROCm blog "Matrix Core Programming on CDNA3 and CDNA4").
    const bool scaled_mfma = m.isa == IsaFamily::cdna4 || m.isa == IsaFamily::gfx1250;
    if (scaled_mfma && activation == DType::fp8_e4m3) return 0.0;
    return m.kernels.dequant.fp4_ops;
  }
  if (weight == DType::int4) return m.kernels.dequant.int4_ops;
  return 0.0;
}

MoeFloor moe_floor(const MoePlan& plan, const MachineSpec& machine) {
  const auto& s = plan.shape;
  const double eb = element_bytes(s.dtype);
  // Weights in their own dtype plus their scales (weight_scale_bits_per_1024).
  const double wb = element_bytes(s.weight_dtype) +
                    static_cast<double>(weight_scale_bits_per_1024({s.dtype, s.weight_dtype, s.quant})) / 8.0 / 1024.0;
  MoeFloor f;
  std::uint64_t rows = 0;
  for (std::uint32_t e = 0; e < s.experts_fused(); ++e) {
    const std::uint32_t r = plan.layout.expert_rows[e];
    rows += r;
    if (r > 0) f.weight_bytes += 3.0 * s.inter * s.hidden * wb;
  }
  f.activation_bytes = double(s.tokens) * s.hidden * (eb + 2.0);  // x read once, out written once
  f.flops = 6.0 * double(rows) * s.inter * s.hidden;
  f.memory_s = (f.weight_bytes + f.activation_bytes) /
               static_cast<double>(machine.memory.hbm.bandwidth.bytes_per_s);
  f.compute_s = f.flops / isa::peak_matrix_flops(machine, isa::matrix_dtype(machine, s.dtype));
  return f;
}

namespace {

// How the layer's down stage combines: the machine's kernels.combine, unless
// AITER's down kernel says otherwise (a FlyDSL stage-2 kernel's mode from a
// tuned row's name, or kernel.down_combine; plan::AiterKernelTraits): its
// atomic adds are bf16, as CK's. A 1-stage layer has no down kernel: the
// machine's (the plan's kernel: line says the key is not used).
CombineType layer_combine(const MoePlan& plan, const MachineSpec& machine) {
  if (plan.kernel.stages != 2) return machine.kernels.combine;
  switch (plan.kernel.aiter_traits.down_combine) {
    case DownCombine::atomic: return CombineType::bf16;
    case DownCombine::reduce: return CombineType::reduce;
    case DownCombine::machine: break;
  }
  return machine.kernels.combine;
}

// Both paths: the same tile programs; the TDM path gathers token rows with
// the tensor data movers and hands its stages to the TDM MoE unit as
// descriptors (written to memory, fetched by the unit) instead of grids.
MoeKernels build(AddressSpace& as, const MoePlan& plan, const MachineSpec& machine, bool tdm) {
  auto l = std::make_shared<Layer>();
  l->tdm = tdm;
  const auto& s = plan.shape;
  l->shape = s;
  l->kernel = plan.kernel;
  l->mma = isa::kernel_matrix_dtype(machine, s.dtype);
  l->mma_wgmma = isa::matrix_dtype(machine, s.dtype);
  l->mma_sync = machine.kernels.matrix_instructions != MatrixInstructions::isa;
  l->epilogue = machine.kernels.epilogue;
  l->sort = machine.kernels.sort;
  // Our NVIDIA kernels (and our quantisation kernel between the stages) are
  // charged their counted instructions.
  if (machine.kernels.nvidia) {
    l->nv = *machine.kernels.nvidia;
  } else if (l->mma_sync || machine.kernels.fp8_intermediate == Fp8Intermediate::kernel) {
    throw std::invalid_argument("machine " + machine.name + " runs our NVIDIA kernels (kernels.matrix_instructions " +
                                "or fp8_intermediate: kernel) but its kernel profile has no nvidia: section of their "
                                "instruction counts");
  }
  l->amd_target = plan::our_cdna_target(machine, plan.kernel.code);
  if (l->amd_target) {  // the tiles the programs run: gate/up's (and the fused kernel's), down's
    using plan::LoopKernel;
    for (const LoopKernel kind : {LoopKernel::gate_up, LoopKernel::down, LoopKernel::fused}) {
      const KernelTile& tile = kind == LoopKernel::down ? plan.kernel.down_tile : plan.kernel.gate_up_tile;
      l->amd_loops[static_cast<std::size_t>(kind)] = amd_loop_lookup(*l, kind, tile);
    }
  }
  l->wgmma_gate_up = plan::wgmma_tile(machine, plan.kernel.gate_up_tile, s.dtype);
  l->wgmma_down = plan.kernel.stages == 2 && plan::wgmma_tile(machine, plan.kernel.down_tile, s.dtype);
  l->ws_gate_up = plan.kernel.stages == 2 && plan::ws_tile(machine, plan.kernel.gate_up_tile, s.dtype);
  l->ws_down = plan.kernel.stages == 2 && plan::ws_tile(machine, plan.kernel.down_tile, s.dtype);
  if (machine.kernels.fp8_operands == Fp8Operands::f16 && machine.kernels.fp8_conversions_per_clock > 0) {
    l->lane_ops_per_conversion = machine.compute.vector_lanes() / machine.kernels.fp8_conversions_per_clock;
  }
  const bool quant_kernel = plan.kernel.stages == 2 && dtype_bits(s.dtype) <= 8 &&
                            machine.kernels.fp8_intermediate == Fp8Intermediate::kernel;
  l->inter_dtype = quant_kernel ? DType::bf16 : s.dtype;
  l->dequant_ops = dequant_ops_per_weight(machine, s.dtype, s.weight_dtype);
  const CombineType combine = layer_combine(plan, machine);
  l->out_elem = combine == CombineType::fp32 ? 4 : 2;
  l->sort_overhead_ps = machine.kernels.sort_overhead.ps;
  l->sort_one_overhead_ps = machine.kernels.sort_one_overhead.ps;
  l->clear_overhead_ps = machine.kernels.clear_overhead.ps;
  l->vgpr_file_bytes = machine.compute.vgpr_file_per_cu.bytes;
  l->lds_file_bytes = machine.compute.lds_per_cu.bytes;
  l->aiter_one_stage_per_cu = plan::aiter_one_stage_workgroups_per_cu(machine.isa, s, plan.kernel.gate_up_tile);
  l->iteration_overhead_ps = machine.kernels.iteration_overhead.ps;
  l->fp8_tile_wait_ps = machine.kernels.wgmma_fp8_tile_wait.ps;
  l->block_m = plan.layout.block_m;
  l->padded_rows = plan.layout.padded_rows;
  l->blocks = static_cast<std::uint32_t>(plan.layout.block_expert.size());
  l->x_row = bytes_of(s.hidden, s.dtype);
  l->out_row = std::uint64_t{s.hidden} * l->out_elem;
  l->stage1 = plan.stage1;
  l->stage2 = plan.stage2;
  l->block_expert = plan.layout.block_expert;
  for (std::uint32_t b = 0; b < l->blocks; ++b) {
    l->x_rows.push_back(row_offsets(plan, b, l->x_row));
    l->out_rows.push_back(row_offsets(plan, b, l->out_row));
  }
  l->slots = s.slots();
  l->reduce_combine = plan.kernel.stages == 2 && combine == CombineType::reduce;
  l->combine_bytes_per_wg = machine.kernels.clear.bytes_per_workgroup.bytes;
  if (l->reduce_combine) {
    for (std::uint32_t b = 0; b < l->blocks; ++b) l->topk_rows.push_back(row_offsets(plan, b, l->out_row, true));
  }
  const std::uint64_t rows = std::uint64_t{s.tokens} * s.slots();
  MoeBuffers& b = l->buf;
  b.x = as.allocate(std::uint64_t{s.tokens} * l->x_row);
  b.topk_ids = as.allocate(rows * 4);
  b.sorted_ids = as.allocate(std::uint64_t{plan.layout.capacity} * 4);
  b.sorted_weights = as.allocate(std::uint64_t{plan.layout.capacity} * 4);
  b.block_experts = as.allocate(std::uint64_t{l->blocks + 1} * 4);
  const std::uint64_t experts = s.experts_fused();
  b.w13 = as.allocate(experts * 2 * s.inter * bytes_of(s.hidden, s.weight_dtype));
  b.w2 = as.allocate(experts * s.hidden * bytes_of(s.inter, s.weight_dtype));
  b.scales = as.allocate(1 << 20);
  if (plan.kernel.stages == 2) {
    b.inter = as.allocate(std::uint64_t{l->padded_rows} * bytes_of(s.inter, l->inter_dtype));
    if (quant_kernel) b.inter_q = as.allocate(std::uint64_t{l->padded_rows} * bytes_of(s.inter, s.dtype));
    if (plan.kernel.split_k > 1) {
      b.partials = as.allocate(std::uint64_t{partial_planes(*l)} * l->padded_rows * 2 * s.inter * 4);
    }
  }
  b.out = as.allocate(std::uint64_t{s.tokens} * l->out_row);
  if (l->reduce_combine) {
    b.topk_out = as.allocate(rows * l->out_row);
    b.topk_sum = as.allocate(std::uint64_t{s.tokens} * l->out_row);
  }
  // The router's buffers (moe_router.h) when the scenario times it: placed
  // after the layer's, so a layer whose router output is given keeps the
  // addresses, hence the cache behaviour, it has with no router.
  RouterBuffers rb;
  rb.topk_ids = b.topk_ids;
  if (s.router_timed) {
    const std::uint64_t e = s.experts_total;
    rb.hidden = dtype_bits(s.dtype) == 16 ? b.x : as.allocate(std::uint64_t{s.tokens} * s.hidden * 2);
    rb.gate_weight = as.allocate(e * s.hidden * 2);
    rb.logits = as.allocate(std::uint64_t{s.tokens} * e * 4);
    if (s.correction_bias) rb.correction_bias = as.allocate(e * 4);
    rb.topk_weights = as.allocate(std::max<std::uint64_t>(1, rows) * 4);
    l->topk_weights = rb.topk_weights;  // our sort reads the weights the top-k kernel wrote
  }

  MoeKernels k;
  k.buffers = b;
  // The router first: the software path launches its two kernels; on the TDM
  // path the unit dispatches the gate GEMM and its routing stage scores,
  // ranks and sorts (so the TDM path runs no sort kernel below).
  if (s.router_timed) {
    k.kernels.push_back(router_gemm(s, rb, machine));
    k.stage.push_back("routing");
    if (!tdm) {
      k.kernels.push_back(router_topk(s, rb, machine.kernels.router));
      k.stage.push_back("routing");
    }
  }
  if (tdm) {
    k.kernels.push_back(unit_routing(s, rb, {b.sorted_ids, b.sorted_weights, b.block_experts, l->padded_rows, l->blocks}));
    k.stage.push_back("routing");
  }
  if (combine == CombineType::fp32) {
    const std::uint32_t zero_wgs =
        std::max(1u, ceil_div(std::uint64_t{s.tokens} * l->out_row, machine.kernels.clear.bytes_per_workgroup.bytes));
    k.kernels.push_back(launch("moe_zero_out", zero_wgs, [l, zero_wgs](std::uint32_t wg) {
      return zero_program(*l, wg, zero_wgs);
    }));
    k.stage.push_back("zero_out");
  }
  // The sort kernels, on the software path (the TDM unit's routing stage
  // wrote the task table).
  if (!tdm) add_sort_kernels(l, as, plan, machine, k);
  // A layer with no routed row (an expert-parallel GPU whose experts got no
  // pick: it still routes and sorts its own tokens) runs no expert kernel, as
  // the GPU runner launches none for zero blocks (kernels/moe/fused_moe.hip);
  // a grid of no workgroups has no program to build.
  if (l->blocks == 0) return k;
  // The expert GEMMs' matrix work, for the clock governor
  // (sim/platform/power.h: the kernel's matrix-pipe occupancy is this over
  // its modelled time). The work counts the routed rows only: a block's
  // padding rows are multiplied too, but zero rows toggle little of the
  // pipe, and counting them put the H200's decode layers (blocks of 64-128
  // rows holding a few tokens) well below the peak clock where they are
  // measured at it (docs/simulator.md "Clocks under load").
  double real_rows = 0;
  for (const auto& rows_of_block : l->x_rows) real_rows += static_cast<double>(rows_of_block.size());
  const double gate_up_flops = 2.0 * real_rows * 2.0 * s.inter * s.hidden;
  const double down_flops = 2.0 * real_rows * s.hidden * s.inter;
  const DType multiplied = l->mma;  // what the matrix cores multiply (fp8 may widen)
  const auto matrix_work = [multiplied](isa::KernelLaunch kl, double flops) {
    kl.matrix_flops = flops;
    kl.matrix_dtype = multiplied;
    return kl;
  };
  if (plan.kernel.stages == 1) {
    k.kernels.push_back(matrix_work(
        launch_into("moe_fused", static_cast<std::uint32_t>(l->stage1.size()),
                    [l](std::uint32_t wg, isa::TileProgram& p) { fused_program(*l, l->stage1[wg], p); }),
        gate_up_flops + down_flops));
    k.stage.push_back("fused");
    return k;
  }
  k.kernels.push_back(matrix_work(
      launch_into("moe_gate_up", static_cast<std::uint32_t>(l->stage1.size()),
                  [l](std::uint32_t wg, isa::TileProgram& p) { gate_up_program(*l, l->stage1[wg], p); }),
      gate_up_flops));
  k.stage.push_back("gate_up");
  if (plan.kernel.split_k > 1) {
    std::vector<std::uint32_t> valid(l->blocks);
    for (std::uint32_t blk = 0; blk < l->blocks; ++blk) {
      valid[blk] = static_cast<std::uint32_t>(l->x_rows[blk].size());
    }
    k.kernels.push_back(launch("moe_splitk_reduce", l->blocks, [l, valid](std::uint32_t wg) {
      return reduce_program(*l, wg, valid[wg]);
    }));
    k.stage.push_back("reduce");
  }
  if (quant_kernel) {
    std::vector<bool> real(l->padded_rows);
    for (std::uint32_t r = 0; r < l->padded_rows; ++r) real[r] = plan.layout.sorted_rows[r] != plan.layout.sentinel;
    k.kernels.push_back(launch("moe_quant_inter", l->padded_rows, [l, real](std::uint32_t wg) {
      return quant_program(*l, wg, real[wg]);
    }));
    k.stage.push_back("quant_inter");
  }
  k.kernels.push_back(matrix_work(
      launch_into("moe_down", static_cast<std::uint32_t>(l->stage2.size()),
                  [l](std::uint32_t wg, isa::TileProgram& p) { down_program(*l, l->stage2[wg], p); }),
      down_flops));
  k.stage.push_back("down");
  if (l->reduce_combine) {
    // AITER's FlyDSL stage 2 in its reduce mode (aiter/ops/flydsl moe kernels:
    // `target.view(tokens, topk, H).sum(dim=1)`, then `out.copy_`): two
    // streaming kernels, each a grid of the clearing kernel's bytes of output
    // per workgroup.
    const std::uint64_t out_bytes = std::uint64_t{s.tokens} * l->out_row;
    const auto wgs = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, ceil_div(out_bytes, l->combine_bytes_per_wg)));
    k.kernels.push_back(launch("moe_topk_sum", wgs, [l, wgs](std::uint32_t wg) { return topk_sum_program(*l, wg, wgs); }));
    k.stage.push_back("combine");
    k.kernels.push_back(launch("moe_out_copy", wgs, [l, wgs](std::uint32_t wg) { return out_copy_program(*l, wg, wgs); }));
    k.stage.push_back("combine");
  }
  return k;
}

// The kernel's grid as the unit sees it: per workgroup its token block and N tile.
std::shared_ptr<isa::HardwareDispatch> dispatch_of(const std::vector<TileJob>& jobs) {
  auto hw = std::make_shared<isa::HardwareDispatch>();
  for (const auto& j : jobs) {
    hw->block.push_back(j.block);
    hw->n_tile.push_back(j.n_tile);
  }
  return hw;
}

}  // namespace

bool sort_one_kernel(std::uint64_t rows, std::uint32_t experts_fused) {
  return plan::rules::sort_one_kernel(rows, experts_fused);
}

MoeKernels software_moe(AddressSpace& as, const MoePlan& plan, const MachineSpec& machine) {
  return build(as, plan, machine, false);
}

MoeKernels tdm_moe(AddressSpace& as, const MoePlan& plan, const MachineSpec& machine,
                   const DescriptorBytes* given) {
  if (!machine.tdm) throw std::invalid_argument("machine " + machine.name + " has no TDM MoE unit");
  MoeKernels k = build(as, plan, machine, true);
  // The descriptors software writes for the layer (docs/descriptor-format.md).
  DescriptorBytes stream;
  if (given != nullptr) {
    stream = *given;
  } else {
    const auto slot_ns =
        static_cast<std::uint32_t>(std::max<std::uint64_t>(1, machine.tdm->slot_length.ps / 1000));
    for (const auto& d : format::make_moe_descriptors(plan, machine.tdm->default_policy,
                                                      format::packed_address_map(plan, k.buffers.x),
                                                      {slot_ns, format::SlotUnit::ns})) {
      stream.push_back(format::encode(d));
    }
  }
  std::size_t d = 0;
  for (std::size_t i = 0; i < k.kernels.size(); ++i) {
    // Software still clears the output, quantises between the stages and sums the top-k rows.
    if (k.stage[i] == "zero_out" || k.stage[i] == "quant_inter" || k.stage[i] == "combine") continue;
    if (k.kernels[i].routing) {  // the unit's routing stage (sim/platform/tdm_router.h)
      k.kernels[i].name = "tdm_routing";
      continue;
    }
    std::shared_ptr<isa::HardwareDispatch> hw;
    if (k.stage[i] == "reduce" || k.stage[i] == "routing") {
      // The router's gate GEMM, which the unit dispatches to the CUs itself,
      // and 
      // the split-K reduction, which runs as part of the gate/up
      // descriptor: no fetch, in grid order.
      hw = std::make_shared<isa::HardwareDispatch>();
      hw->block.resize(k.kernels[i].workgroups);
      std::iota(hw->block.begin(), hw->block.end(), 0u);
      hw->n_tile.assign(k.kernels[i].workgroups, 0);
    } else {
      hw = dispatch_of(k.stage[i] == "down" ? plan.stage2 : plan.stage1);
      if (d >= stream.size()) {
        throw std::invalid_argument("the descriptor stream has " + std::to_string(stream.size()) +
                                    " descriptors; the layer runs more");
      }
      hw->descriptor = stream[d++];
      hw->descriptor_addr = as.allocate(hw->descriptor.size());
    }
    k.kernels[i].hardware = hw;
    k.kernels[i].name = "tdm_" + k.kernels[i].name.substr(4);  // moe_gate_up -> tdm_gate_up
  }
  if (d != stream.size()) {
    throw std::invalid_argument("the descriptor stream has " + std::to_string(stream.size()) +
                                " descriptors; the layer runs " + std::to_string(d));
  }
  return k;
}

DescriptorBytes descriptor_bytes(const MoeKernels& k) {
  DescriptorBytes out;
  for (const auto& kernel : k.kernels) {
    if (kernel.hardware && !kernel.hardware->descriptor.empty()) out.push_back(kernel.hardware->descriptor);
  }
  return out;
}

}  // namespace tdmsim::sim::programs
