// Builds MoE descriptors from the MoE plan (descriptors/plan/moe_plan.h): the
// layer from the plan's shape and kernel choice, expert weights packed from a
// base address, and the time-slot table with one slot per token block of the
// padded layout (docs/descriptor-format.md, "From the plan to the slot table").
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "descriptors/format/moe_descriptor.h"
#include "descriptors/plan/moe_plan.h"

namespace tdmsim::format {

// Global addresses of the buffers the layer touches. Expert weights are laid
// out expert by expert from weights_base (gate_up then down, each rounded up to
// 256 bytes, rows dense); scales likewise from scales_base.
struct MoeAddressMap {
  std::uint64_t weights_base = 0;
  std::uint64_t scales_base = 0;  // used only when the layer has scales
  std::uint64_t input_base = 0;
  std::uint64_t output_base = 0;
  std::uint64_t inter_base = 0;  // used only by 2-stage layers
  std::uint64_t sorted_rows_base = 0;
  std::uint64_t sorted_weights_base = 0;
};

struct SlotLength {
  std::uint32_t value = 1000;
  SlotUnit unit = SlotUnit::ns;
};

struct MoeBuildOptions {
  std::optional<SlotStage> stage;  // default: fused (1-stage) or gate_up (2-stage)
  std::uint32_t descriptor_id = 1;
  std::uint32_t custom_policy_id = 0;  // custom only: the routing callback (0: table order)
};

// A packed, non-overlapping placement of every buffer from `base` upwards
// (each 256-byte aligned): weights, scales, x, y, h, sorted rows, sorted weights.
MoeAddressMap packed_address_map(const plan::MoePlan& plan, std::uint64_t base);

// Throws std::invalid_argument for an inconsistent plan (a block layout that
// is not whole blocks or is shorter than its padded rows, a tile job naming a
// block outside it) and
// DescriptorException if the result breaks a validation rule.
MoeDescriptor make_moe_descriptor(const plan::MoePlan& plan, TdmPolicy policy,
                                  const MoeAddressMap& addresses, SlotLength slot_length,
                                  const MoeBuildOptions& options = {});

// The descriptors that run the whole layer: one for a 1-stage plan; for a
// 2-stage plan gate_up (id first_id) then down (id first_id + 1), the second
// waiting for the first (all_of), each signalling its own id. None for a
// plan with no token block (a GPU whose experts got no pick).
std::vector<MoeDescriptor> make_moe_descriptors(const plan::MoePlan& plan, TdmPolicy policy,
                                                const MoeAddressMap& addresses,
                                                SlotLength slot_length, std::uint32_t first_id = 1,
                                                std::uint32_t custom_policy_id = 0);

}  // namespace tdmsim::format
