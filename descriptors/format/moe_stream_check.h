// Whether a MoE descriptor stream (moe_stream.h) describes the scenario's
// layer, so the TDM unit can run it on the scenario's shapes and data
// (`tdmsim run --descriptors`). The scenario fixes what the data is: layer
// shape, formats, strides, stages and the routing's block layout (each token
// block's expert and real rows). The stream decides how it is scheduled: the
// slot table's order and which slots, per-slot lengths and unit, policy,
// callback id, descriptor ids and sync. Buffer addresses are checked by the
// decoder for consistency only; the timing model keeps its own placement of
// the scenario's buffers (docs/moe-timing.md, "Running a descriptor stream").
#pragma once

#include <optional>
#include <span>

#include "descriptors/format/moe_stream.h"
#include "descriptors/plan/moe_plan.h"

namespace tdmsim::format {

// The first disagreement (code scenario_mismatch), with the byte offset of
// the field in the stream. Checks, in order: the descriptor count (1 for a
// 1-stage layer, 2 for gate_up then down); each descriptor's layer fields
// except policy, callback id and base addresses; each slot's stage, block
// (every block the stage has tile jobs for exactly once), expert and real
// rows; each wait, which earlier descriptors of the stream must meet (the
// unit runs descriptors in stream order, so any other wait never ends).
std::optional<DescriptorError> check_stream(std::span<const StreamEntry> stream,
                                            const plan::MoePlan& plan);

}  // namespace tdmsim::format
