// kernel_request: a tuned table's row or AITER's default, as scenario values.
#include "descriptors/plan/kernel_request.h"

#include <algorithm>

#include <fmt/core.h>

namespace tdmsim::plan {

KernelConfigQuery kernel_config_query(const LayerShape& shape, const MachineSpec& machine) {
  KernelConfigQuery q;
  q.cu_num = machine.compute.total_cus();
  q.tokens = shape.tokens;
  q.model_dim = shape.hidden;
  q.inter_dim = shape.inter;
  // AITER's expert is w1.shape[0], the experts of the weight tensor: the
  // local routed experts plus the shared ones fused in (DeepSeek-V3: 256 + 1
  // = 257), and its topk the picks per token with the shared one (8 + 1 = 9).
  q.expert = shape.experts_fused();
  q.topk = shape.slots();
  q.act_type = std::string(aiter_activation(shape.activation));
  q.dtype = std::string(aiter_out_dtype(shape.dtype));
  q.format = {shape.dtype, shape.quant, shape.weight_dtype};
  q.doweight_stage1 = shape.weight_on_input;
  return q;
}

AiterLayer aiter_layer(const LayerShape& shape, const MachineSpec& machine) {
  AiterLayer l;
  l.token = aiter_padded_m(shape.tokens);
  l.model_dim = shape.hidden;
  l.inter_dim = shape.inter;
  l.expert = shape.experts_fused();
  l.topk = shape.slots();
  l.cu_num = machine.compute.total_cus();
  l.isa = machine.isa;
  l.format = {shape.dtype, shape.quant, shape.weight_dtype};
  l.activation = shape.activation;
  l.doweight_stage1 = shape.weight_on_input;
  return l;
}

KernelRequest kernel_request(const KernelSpec& spec, const KernelConfigTable* table, const LayerShape& shape,
                             const MachineSpec& machine) {
  KernelRequest r;
  r.spec = spec;
  // The scenario's CK pipelines and assembly occupancy (kernel.*_lds_buffers,
  // kernel.gate_up_workgroups_per_cu; a table's row names its own, and the
  // scenario may not give both).
  r.aiter_traits = {spec.gate_up_lds_buffers, spec.down_lds_buffers, spec.gate_up_workgroups_per_cu,
                    spec.down_combine};
  r.source.heuristic = std::string(config::enum_name(spec.heuristic));
  bool matched = false;
  if (table != nullptr) {
    const KernelConfigLookup hit = lookup_kernel_config(*table, kernel_config_query(shape, machine));
    r.source.config_file = table->file;
    r.source.padded_token = hit.padded_token;
    r.source.bypassed = hit.bypassed;
    r.source.detail = hit.detail;
    if (hit.row != nullptr) {
      const KernelConfigRow& row = *hit.row;
      require_block_m_for(*table, row, spec.source);
      matched = true;
      r.source.config_line = row.line;
      r.source.chosen_by = "kernel.config row";
      r.spec.block_m = row.block_m;
      r.spec.split_k = std::max(1u, row.ksplit);  // AITER's 0: no split
      r.spec.stages = row.run_1stage ? 1 : 2;
      // A 1-stage row of AITER's kernels runs its assembly 1-stage kernel
      // (AITER's fused_moe_1stage takes no CK tile): the stage-1 name is read
      // as that kernel's name, whose subGU_m x subGU_n is the tile the tuner
      // timed (read_aiter_one_stage_kernel); with no such name the plan picks
      // AITER's heuristic kernel (aiter_one_stage_tile). The stage-2 column
      // names nothing AITER runs then.
      std::string one_stage_note, split_note;
      if (row.run_1stage && spec.source == KernelCode::aiter) {
        const AiterTileReading one = aiter_one_stage_kernel_tile(*table, row);
        r.spec.gate_up_tile = r.spec.down_tile = one.tile;
        if (!one.tile.is_auto()) {
          one_stage_note = fmt::format("; {}: AITER's 1-stage kernel {}x{}", table->tile1_name, one.tile.m, one.tile.n);
        } else if (!row.tile1.empty()) {
          // (what tdmsim runs in its place, and why: the reading says)
          one_stage_note = fmt::format("; {} '{}': {}", table->tile1_name,
                                       row.tile1.size() > 48 ? row.tile1.substr(0, 45) + "..." : row.tile1, one.reading);
        } else if (!row.tile2.empty()) {
          one_stage_note = fmt::format("; {} not used: AITER runs its heuristic 1-stage kernel", table->tile2_name);
        }
      } else {
        const AiterTileReading gate_up = read_row_tile(*table, row, false);
        const AiterTileReading down = read_row_tile(*table, row, true);
        r.spec.gate_up_tile = gate_up.tile;
        r.spec.down_tile = down.tile;
        r.aiter_traits = {gate_up.lds_buffers, down.lds_buffers, gate_up.workgroups_per_cu, down.combine};
        // Our kernels combine as the machine says (choose_kernel keeps the
        // traits for AITER's kernels only): a FlyDSL mode is noted as not used.
        if (spec.source != KernelCode::aiter && r.aiter_traits.down_combine != DownCombine::machine) {
          split_note += fmt::format("; {}'s FlyDSL mode not used: the project's kernels combine as the machine's "
                                    "kernels.combine says",
                                    table->tile2_name);
        }
        // AITER's assembly stage 1 runs unsplit (aiter_asm_stage1_name);
        // with AITER's kernels only stage 1 splits, so the row runs none.
        if (!row.run_1stage && aiter_asm_stage1_name(row.tile1) && r.spec.split_k > 1) {
          split_note += fmt::format("; ksplit {} not used: AITER's assembly stage 1 runs unsplit", row.ksplit);
          r.spec.split_k = 1;
        }
      }
      r.fixed_by = fmt::format("{}:{}", table->file, row.line);
      // Why a tile column gives the default tile: empty, or a kernel of no CK tile.
      const auto default_note = [](const std::string& column, const std::string& name, const KernelTile& t) {
        if (!t.is_auto()) return std::string();
        if (name.empty()) return fmt::format("; {} empty: default tile", column);
        return fmt::format("; {} '{}': no tile tdmsim reads (an assembly kernel's name, say): default tile", column,
                           name.size() > 48 ? name.substr(0, 45) + "..." : name);
      };
      r.prefix = fmt::format("kernel.config {}:{} (token {} padded to {}{}{}{}); ", table->file, row.line,
                             shape.tokens, hit.padded_token,
                             one_stage_note.empty() ? default_note("tile1", row.tile1, r.spec.gate_up_tile) : "",
                             one_stage_note.empty() ? default_note("tile2", row.tile2, r.spec.down_tile) : "",
                             one_stage_note + split_note);
    } else {
      r.prefix = fmt::format("kernel.config {}: {}; ", table->file,
                             hit.bypassed             ? std::string("table bypassed as AITER does")
                             : hit.no_kernel_line != 0 ? fmt::format("line {} has block_m 0 (AITER's tuner found "
                                                                     "no kernel): not used",
                                                                     hit.no_kernel_line)
                                                       : std::string("no row matched"));
    }
  }
  if (matched) return r;
  const bool fixed = spec.block_m != 0 || !spec.gate_up_tile.is_auto() || !spec.down_tile.is_auto() ||
                     spec.split_k != 0 || spec.stages != 0;
  if (spec.heuristic == KernelHeuristic::aiter) {
    // (A scenario's stage count: AITER's block_m and ksplit for that count.)
    const AiterChoice a = aiter_default(aiter_layer(shape, machine), spec.stages);
    // The scenario's own values stay; AITER's rule fills the rest.
    if (spec.block_m == 0 && spec.gate_up_tile.is_auto() && spec.down_tile.is_auto()) r.spec.block_m = a.block_m;
    if (spec.split_k == 0) r.spec.split_k = std::max(1u, a.ksplit);
    if (spec.stages == 0) r.spec.stages = a.run_1stage ? 1 : 2;
    r.fixed_by = fixed ? "scenario or aiter heuristic" : "aiter heuristic";
    r.prefix += a.reason + "; ";
    r.source.chosen_by = "aiter heuristic";
  } else {
    r.source.chosen_by = fixed ? "scenario" : "tdmsim heuristic";
  }
  return r;
}

KernelRequest kernel_request(const config::ResolvedScenario& scenario, const LayerShape& shape) {
  const KernelSpec& spec = scenario.scenario.spec.kernel;
  if (spec.config.empty()) return kernel_request(spec, nullptr, shape, scenario.machine.spec);
  const KernelConfigTable table = read_kernel_config(config::kernel_config_path(scenario.scenario));
  return kernel_request(spec, &table, shape, scenario.machine.spec);
}

}  // namespace tdmsim::plan
