// Plan -> MoE descriptor (one slot per token block) and plan -> token-row
// gather descriptors, on hand-made plans (the plan builder is another area's).
#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>

#include "descriptors/format/example_descriptors.h"
#include "descriptors/format/moe_builder.h"
#include "descriptors/format/tensor_mover.h"
#include "descriptors/format/token_gather.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
using namespace tdmsim::format;
using Code = DescriptorErrorCode;

TEST_CASE("example plan is a consistent padded block layout", "[builder]") {
  const plan::MoePlan p = example_plan();
  const plan::BlockLayout& l = p.layout;
  CHECK(l.padded_rows % l.block_m == 0);
  CHECK(std::accumulate(l.expert_rows.begin(), l.expert_rows.end(), 0U) ==
        p.shape.tokens * p.shape.slots());
  CHECK(l.block_expert.size() == l.padded_rows / l.block_m);
  CHECK(l.sorted_rows.size() == l.capacity);
}

TEST_CASE("2-stage plan: gate_up then down descriptors, one slot per block", "[builder]") {
  const plan::MoePlan p = example_plan();
  const MoeAddressMap a = packed_address_map(p, 0x100000000ULL);
  const auto ds =
      make_moe_descriptors(p, TdmPolicy::capacity_first, a, SlotLength{750, SlotUnit::cycles}, 10);
  REQUIRE(ds.size() == 2);
  const std::uint32_t blocks = p.layout.padded_rows / p.layout.block_m;
  for (const MoeDescriptor& d : ds) {
    CHECK_FALSE(validate(d).has_value());
    CHECK(d.layer.experts == 8);
    CHECK(d.layer.experts_per_token == 2);
    CHECK(d.layer.token_blocks == blocks);
    CHECK(d.layer.policy == TdmPolicy::capacity_first);
    CHECK(d.slot_unit == SlotUnit::cycles);
    REQUIRE(d.slots.size() == blocks);
    std::uint32_t rows = 0;
    for (std::uint32_t b = 0; b < blocks; ++b) {
      const TimeSlot& s = d.slots[b];
      CHECK(s.block == b);
      CHECK(s.expert == p.layout.block_expert[b]);
      CHECK(s.length == 750);
      rows += s.valid_rows;
    }
    CHECK(rows == p.shape.tokens * p.shape.slots());
    CHECK(decode_moe(encode(d)).value() == d);
  }
  CHECK(ds[0].descriptor_id == 10);
  CHECK(ds[0].slots[0].stage == SlotStage::gate_up);
  CHECK(ds[0].slots[0].gather_input);
  CHECK(ds[0].slots[0].input == a.input_base);
  CHECK(ds[0].slots[1].output ==
        a.inter_base + std::uint64_t{p.layout.block_m} * ds[0].layer.inter_row_stride);
  CHECK(ds[1].descriptor_id == 11);
  CHECK(ds[1].slots[0].stage == SlotStage::down);
  CHECK(ds[1].slots[0].scatter_output);
  CHECK(ds[1].slots[0].weight == ds[1].experts[ds[1].slots[0].expert].down);
  CHECK(ds[1].sync.wait_mode == WaitMode::all_of);
  CHECK(ds[1].sync.wait_ids == std::vector<std::uint32_t>{10});
  CHECK(ds[1].sync.signal_id == 11);
}

TEST_CASE("1-stage plan: fused slots, no intermediate buffer", "[builder]") {
  plan::MoePlan p = example_plan();
  p.kernel.stages = 1;
  const auto ds =
      make_moe_descriptors(p, TdmPolicy::low_latency, packed_address_map(p, 0), SlotLength{});
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].layer.inter_base == 0);
  CHECK(ds[0].slots[0].stage == SlotStage::fused);
  CHECK(ds[0].slots[0].gather_input);
  CHECK(ds[0].slots[0].scatter_output);
}

TEST_CASE("slots follow the blocks that have stage-1 tile jobs", "[builder]") {
  plan::MoePlan p = example_plan();
  for (std::uint32_t b : {3U, 1U, 3U}) {
    plan::TileJob j;
    j.block = b;
    j.expert = p.layout.block_expert[b];
    p.stage1.push_back(j);
  }
  const MoeDescriptor d =
      make_moe_descriptor(p, TdmPolicy::load_balance, packed_address_map(p, 0), SlotLength{});
  REQUIRE(d.slots.size() == 2);
  CHECK(d.slots[0].block == 1);
  CHECK(d.slots[1].block == 3);
  plan::TileJob bad;
  bad.block = 1000;
  p.stage1.push_back(bad);
  CHECK_THROWS_AS(
      make_moe_descriptor(p, TdmPolicy::load_balance, packed_address_map(p, 0), SlotLength{}),
      std::invalid_argument);
}

TEST_CASE("builder refusals", "[builder]") {
  const plan::MoePlan p = example_plan();
  const MoeAddressMap a = packed_address_map(p, 0);
  // custom without a callback id is the table order (valid); a callback id
  // with another policy is refused.
  CHECK(make_moe_descriptor(p, TdmPolicy::custom, a, SlotLength{}).layer.custom_policy_id == 0);
  MoeBuildOptions o;
  o.custom_policy_id = 7;
  try {
    (void)make_moe_descriptor(p, TdmPolicy::load_balance, a, SlotLength{}, o);
    FAIL("callback id with policy load_balance accepted");
  } catch (const DescriptorException& e) {
    CHECK(e.error().code == Code::bad_policy);
  }
  o.custom_policy_id = 7;
  CHECK(make_moe_descriptor(p, TdmPolicy::custom, a, SlotLength{}, o).layer.custom_policy_id == 7);
  CHECK_THROWS_AS(make_moe_descriptor(p, TdmPolicy::load_balance, a, SlotLength{0, SlotUnit::ns}),
                  DescriptorException);
  plan::MoePlan torn = p;
  torn.layout.padded_rows -= 1;  // not whole blocks
  CHECK_THROWS_AS(make_moe_descriptor(torn, TdmPolicy::load_balance, a, SlotLength{}),
                  std::invalid_argument);
  MoeAddressMap overlap = a;
  overlap.output_base = overlap.input_base;
  CHECK_THROWS_AS(make_moe_descriptor(p, TdmPolicy::load_balance, overlap, SlotLength{}),
                  DescriptorException);
}

TEST_CASE("token gather of a plan block: sorted rows become token rows, padding zero rows",
          "[builder][gather]") {
  const plan::MoePlan p = example_plan();
  const std::uint32_t slots = p.shape.slots();
  const std::uint32_t tokens = p.shape.tokens;
  const std::uint32_t hidden = 64;  // a narrow x for the functional check
  std::vector<std::byte> x(std::size_t{tokens} * hidden * 2);
  for (std::uint32_t t = 0; t < tokens; ++t) {
    for (std::uint32_t c = 0; c < hidden; ++c) {
      const auto v = static_cast<std::uint16_t>(t * 100 + c + 1);
      std::memcpy(&x[(std::size_t{t} * hidden + c) * 2], &v, 2);
    }
  }
  const std::uint32_t blocks = p.layout.padded_rows / p.layout.block_m;
  for (std::uint32_t b = 0; b < blocks; ++b) {
    RowGatherSpec spec;
    spec.global_addr = 0x4000;
    spec.tensor_cols = hidden;
    spec.tile_cols = static_cast<std::uint16_t>(hidden);
    spec.row_stride = hidden;
    spec.element_bytes = 2;
    const auto descs = make_token_gather(p.layout, b, slots, tokens, spec);
    CHECK(descs.size() == 1);  // block_m 16 = one i16 instruction
    std::vector<std::byte> lds(16 * hidden * 2, std::byte{0xAA});
    for (const auto& d : descs) tensor_mover_load(d, x, 0x4000, lds);
    for (std::uint32_t i = 0; i < p.layout.block_m; ++i) {
      const std::uint32_t row = p.layout.sorted_rows[b * p.layout.block_m + i];
      std::uint16_t v;
      std::memcpy(&v, &lds[(std::size_t{i} * hidden + 5) * 2], 2);
      CHECK(v == (row == p.layout.sentinel ? 0 : (row / slots) * 100 + 5 + 1));
    }
  }
  CHECK_THROWS_AS(block_token_rows(p.layout, blocks + 100, slots, tokens), std::invalid_argument);
}

TEST_CASE("descriptors from plans of shipped scenarios are valid and round-trip",
          "[builder][integration]") {
  const config::Loader loader(config::default_roots());
  for (const char* name : {"mixtral-8x7b-64tok-bf16-mi300x", "deepseek-v3-decode-mi355x",
                           "gpt-oss-120b-prefill-mi500x-tdm", "qwen3-30b-decode-h200"}) {
    INFO(name);
    // (Appended piece by piece: GCC 12 warns, falsely, of a memcpy out of
    // bounds in a chain of string +, -Warray-bounds.)
    std::string path = TDMSIM_SOURCE_DIR;
    path += "/workloads/scenarios/";
    path += name;
    path += ".yaml";
    const auto scenario = loader.resolve_scenario(path);
    const plan::MoePlan p = plan::build_plan(scenario);
    const auto ds =
        make_moe_descriptors(p, TdmPolicy::load_balance, packed_address_map(p, 1ULL << 36),
                             SlotLength{1000, SlotUnit::ns});
    REQUIRE(ds.size() == p.kernel.stages);
    for (const MoeDescriptor& d : ds) {
      CHECK(d.layer.experts == p.shape.experts_fused());
      CHECK(d.layer.token_blocks == p.layout.padded_rows / p.layout.block_m);
      CHECK(decode_moe(encode(d)).value() == d);
      // Every real row of the plan is in exactly one slot's valid rows.
      std::uint64_t rows = 0;
      for (const TimeSlot& s : d.slots) rows += s.valid_rows;
      CHECK(rows == std::accumulate(p.layout.expert_rows.begin(), p.layout.expert_rows.end(),
                                    std::uint64_t{0}));
    }
  }
}
