// The MoE descriptor: what software writes to memory and binds to a stream
// for the (hypothetical) hardware TDM MoE unit to run one MoE layer stage:
// layer shape, expert weight placement, routing policy, a time-slot task table
// and sync information. A versioned little-endian binary layout with a CRC-32
// (docs/descriptor-format.md, "MoE descriptor"); encode() from the typed
// struct, decode() that trusts nothing, validate().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "descriptors/format/descriptor_error.h"
#include "workloads/specs/enums.h"

namespace tdmsim::format {

inline constexpr std::uint16_t kMoeVersion = 1;

// Limits that bound decoder work and memory before any table is read.
inline constexpr std::uint32_t kMoeMaxExperts = 65536;
inline constexpr std::uint32_t kMoeMaxExpertsPerToken = 1024;
inline constexpr std::uint32_t kMoeMaxSlots = 1U << 20;
inline constexpr std::uint32_t kMoeMaxWaits = 64;
inline constexpr std::uint32_t kMoeMaxDim = 1U << 20;  // hidden, inter
inline constexpr std::uint32_t kMoeMaxTokens = 1U << 24;
inline constexpr std::uint32_t kMoeMaxBlockM = 1024;
inline constexpr std::uint64_t kMoeWeightAlign = 256;     // weight and scale bases
inline constexpr std::uint64_t kMoeActivationAlign = 16;  // activations and row tables
inline constexpr std::uint64_t kMoeAddressLimit = std::uint64_t{1} << 57;  // the tensor mover's global address space

enum class SlotStage : std::uint8_t { fused = 0, gate_up = 1, down = 2 };
enum class SlotUnit : std::uint8_t { ns = 0, cycles = 1 };
enum class WaitMode : std::uint8_t { none = 0, all_of = 1, counter = 2 };

// Where an expert's weights live. Scale bases are 0 unless the layer has scales.
struct ExpertWeights {
  std::uint64_t gate_up = 0;  // [2*inter rows x hidden] gate and up, stacked
  std::uint64_t down = 0;     // [hidden rows x inter]
  std::uint64_t gate_up_scale = 0;
  std::uint64_t down_scale = 0;
  bool operator==(const ExpertWeights&) const = default;
};

// The layer and the buffers it reads and writes (addresses are global byte
// addresses; strides are bytes between consecutive rows).
struct MoeLayer {
  std::uint32_t experts = 0;            // fused local experts the slots index
  std::uint32_t experts_per_token = 0;  // routed picks + shared experts per token
  std::uint32_t hidden = 0;
  std::uint32_t inter = 0;
  std::uint32_t tokens = 0;
  std::uint32_t block_m = 0;       // rows per token block
  std::uint32_t token_blocks = 0;  // blocks in the padded layout
  DType dtype = DType::bf16;
  Quant quant = Quant::none;
  TdmPolicy policy = TdmPolicy::load_balance;
  std::uint8_t stages = 2;             // 1: fused kernel; 2: gate_up then down
  std::uint32_t custom_policy_id = 0;  // callback id when policy == custom, else 0
  std::uint64_t gate_up_row_stride = 0;
  std::uint64_t down_row_stride = 0;
  std::uint64_t gate_up_scale_row_stride = 0;  // 0 unless the layer has scales
  std::uint64_t down_scale_row_stride = 0;
  std::uint64_t input_base = 0;  // x [tokens x hidden]
  std::uint64_t input_row_stride = 0;
  std::uint64_t output_base = 0;  // y [tokens x hidden]
  std::uint64_t output_row_stride = 0;
  std::uint64_t inter_base = 0;  // h [token_blocks*block_m x inter]; 0 when stages == 1
  std::uint64_t inter_row_stride = 0;
  std::uint64_t sorted_rows_base = 0;     // u32 [token_blocks*block_m]
  std::uint64_t sorted_weights_base = 0;  // f32 [token_blocks*block_m]
  bool operator==(const MoeLayer&) const = default;
};

// One entry of the time-slot task table: one token block of one expert.
struct TimeSlot {
  std::uint32_t expert = 0;
  std::uint32_t block = 0;
  SlotStage stage = SlotStage::gate_up;
  bool gather_input = false;     // input rows selected through sorted_rows
  bool scatter_output = false;   // output rows added into y through sorted_rows
  std::uint16_t valid_rows = 0;  // real (non-padding) rows; 0 = an empty slot
  std::uint32_t length = 0;      // slot length in the descriptor's SlotUnit
  std::uint64_t input = 0;
  std::uint64_t output = 0;
  std::uint64_t weight = 0;
  std::uint64_t scale = 0;  // 0 unless the layer has scales
  bool operator==(const TimeSlot&) const = default;
};

struct SyncInfo {
  std::uint32_t signal_id = 0;  // id signalled on completion; 0 = none
  WaitMode wait_mode = WaitMode::none;
  std::uint32_t counter_target = 0;  // counter mode: wait until counter wait_ids[0] >= target
  std::vector<std::uint32_t> wait_ids;
  bool operator==(const SyncInfo&) const = default;
};

struct MoeDescriptor {
  std::uint32_t descriptor_id = 0;
  SlotUnit slot_unit = SlotUnit::ns;
  MoeLayer layer;
  std::vector<ExpertWeights> experts;  // layer.experts entries
  std::vector<TimeSlot> slots;
  SyncInfo sync;
  bool operator==(const MoeDescriptor&) const = default;
};

// Where the sections of an encoding sit (from the header). encode() uses the
// canonical layout; decode() accepts any in-bounds, aligned, disjoint one.
struct MoeSections {
  std::uint32_t layer = 0;
  std::uint32_t experts = 0;
  std::uint32_t slots = 0;
  std::uint32_t sync = 0;
  std::uint32_t sync_size = 0;
  std::uint32_t total = 0;
};

// ---- wire layout (byte offsets; docs/descriptor-format.md has the tables)
namespace moe_wire {
inline constexpr std::uint32_t kHeaderSize = 64;
inline constexpr std::uint32_t kLayerSize = 128;
inline constexpr std::uint32_t kExpertRecord = 32;
inline constexpr std::uint32_t kSlotRecord = 48;
inline constexpr std::uint32_t kSyncFixed = 16;
namespace hdr {
inline constexpr std::uint32_t magic = 0, version = 4, header_size = 6, total_size = 8, crc = 12,
                               flags = 16, descriptor_id = 20, layer_offset = 24, layer_size = 28,
                               experts_offset = 32, expert_count = 36, expert_record = 40,
                               slot_record = 42, slots_offset = 44, slot_count = 48,
                               sync_offset = 52, sync_size = 56, reserved = 60;
}
namespace layer {  // the expert count lives in the header (it sizes the expert table)
inline constexpr std::uint32_t experts_per_token = 0, hidden = 4, inter = 8, tokens = 12,
                               block_m = 16, token_blocks = 20, dtype = 24, quant = 25, policy = 26,
                               stages = 27, custom_policy_id = 28, gate_up_row_stride = 32,
                               down_row_stride = 40, gate_up_scale_row_stride = 48,
                               down_scale_row_stride = 56, input_base = 64, input_row_stride = 72,
                               output_base = 80, output_row_stride = 88, inter_base = 96,
                               inter_row_stride = 104, sorted_rows_base = 112,
                               sorted_weights_base = 120;
}
namespace expert {
inline constexpr std::uint32_t gate_up = 0, down = 8, gate_up_scale = 16, down_scale = 24;
}
namespace slot {
inline constexpr std::uint32_t expert = 0, block = 4, stage = 8, flags = 9, valid_rows = 10,
                               length = 12, input = 16, output = 24, weight = 32, scale = 40;
}
namespace sync {
inline constexpr std::uint32_t signal_id = 0, wait_mode = 4, reserved = 5, counter_target = 8,
                               wait_count = 12, wait_ids = 16;
}
inline constexpr std::uint32_t kFlagSlotCycles = 1U << 0;  // header flags: slot lengths in cycles
inline constexpr std::uint32_t kSlotGather = 1U << 0;      // slot flags
inline constexpr std::uint32_t kSlotScatter = 1U << 1;

// Stable wire codes of the enums (independent of the C++ enumerator order).
std::uint8_t dtype_code(DType t);
std::uint8_t quant_code(Quant q);
std::uint8_t policy_code(TdmPolicy p);
std::optional<DType> dtype_from_code(std::uint8_t c);
std::optional<Quant> quant_from_code(std::uint8_t c);
std::optional<TdmPolicy> policy_from_code(std::uint8_t c);
}  // namespace moe_wire

// ---- geometry every backend agrees on (also used by validation)
// Whether expert records carry scale bases: quantized layers and MXFP4 weights.
bool has_scales(const MoeLayer& l);
// The layer's dtype is the weight dtype (it sizes weight rows and scales).
// Activation rows (x, y, h) are sized by their strides; the smallest element
// they can hold is the weight dtype's, except for sub-byte weights: 4 bits
// beside mxfp4 (fp4 x fp4), 8 beside int4 (fp8 x int4).
std::uint32_t min_activation_bits(const MoeLayer& l);
// The smallest activation row of `cols` elements the layer accepts (validation).
std::uint64_t activation_row_bytes(const MoeLayer& l, std::uint32_t cols);
// Bytes of one weight row of `cols` elements of the layer's dtype (mxfp4, int4: 2 per byte).
std::uint64_t weight_row_bytes(const MoeLayer& l, std::uint32_t cols);
// Scale rows and bytes per scale row for a [rows x cols] weight matrix:
// per_tensor 1 x f32; per_token (per output channel) rows x f32;
// block_128 ceil(rows/128) x ceil(cols/128) f32; per_1x32 (and mxfp4 under
// the legacy none) rows x ceil(cols/32) E8M0 bytes; group_32 / group_128 rows
// x ceil(cols/32) / ceil(cols/128) f32.
std::uint64_t scale_rows(const MoeLayer& l, std::uint32_t rows);
std::uint64_t scale_row_bytes(const MoeLayer& l, std::uint32_t cols);
// Padded rows of the block layout (token_blocks * block_m).
std::uint64_t padded_rows(const MoeLayer& l);
// Addresses the slot of (expert, block, stage) must carry (the plan->slot mapping).
struct SlotAddresses {
  std::uint64_t input, output, weight, scale;
  bool gather_input, scatter_output;
};
SlotAddresses slot_addresses(const MoeDescriptor& d, std::uint32_t expert, std::uint32_t block,
                             SlotStage stage);

MoeSections canonical_sections(const MoeDescriptor& d);

// First rule broken, with the offset of the field in an encoding laid out as
// `sections` (canonical_sections(d) when unset).
std::optional<DescriptorError> validate(const MoeDescriptor& d,
                                        std::optional<MoeSections> sections = std::nullopt);

// Throws DescriptorException if the descriptor is invalid.
std::vector<std::byte> encode(const MoeDescriptor& d);

// Container checks (size, magic, version, CRC, sections), then fields, then validate().
Decoded<MoeDescriptor> decode_moe(std::span<const std::byte> bytes);

}  // namespace tdmsim::format
