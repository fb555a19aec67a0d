// MoE descriptor: round trips as a property over random valid descriptors,
// the canonical layout, truncation at every prefix, and random corruption
// (decode must fail cleanly or yield a descriptor that re-encodes stably).
#include <catch2/catch.hpp>

#include "descriptors/format/example_descriptors.h"
#include "format_generators.h"
#include "small_moe.h"

using namespace tdmsim;
using namespace tdmsim::format;
using namespace tdmsim::format::testing;
using Code = DescriptorErrorCode;

TEST_CASE("small descriptor: canonical layout and offsets", "[moe]") {
  const MoeDescriptor d = small_moe();
  REQUIRE_FALSE(validate(d).has_value());
  const MoeSections s = canonical_sections(d);
  CHECK(s.layer == kSmallLayer);
  CHECK(s.experts == kSmallExperts);
  CHECK(s.slots == kSmallSlots);
  CHECK(s.sync == kSmallSync);
  CHECK(s.total == kSmallTotal);
  const auto b = encode(d);
  REQUIRE(b.size() == kSmallTotal);
  CHECK(peek(b, 0, 4) == 0x4D4D4454);  // "TDMM"
  CHECK(peek(b, 4, 2) == 1);
  CHECK(peek(b, 6, 2) == 64);
  CHECK(peek(b, 8, 4) == kSmallTotal);
  CHECK(peek(b, 12, 4) == crc32(b, 12));
  CHECK(peek(b, 36, 4) == 4);                            // expert count
  CHECK(peek(b, 48, 4) == 3);                            // slot count
  CHECK(peek(b, kSmallLayer + 4, 4) == 64);              // hidden
  CHECK(peek(b, kSmallLayer + 24, 1) == 1);              // dtype bf16 = wire code 1
  CHECK(peek(b, kSmallExperts + 32 + 8, 8) == 0x16000);  // expert 1 down
  CHECK(peek(b, kSmallSlots + 48 + 4, 4) == 1);          // slot 1 block
  CHECK(peek(b, kSmallSlots + 9, 1) == 1);               // slot 0: gather flag
  CHECK(peek(b, kSmallSync + 12, 4) == 2);               // two wait ids
  CHECK(peek(b, kSmallSync + 20, 4) == 4);
  CHECK(decode_moe(b).value() == d);
}

TEST_CASE("crc32 matches the standard check value", "[moe]") {
  const std::string s = "123456789";
  CHECK(crc32(std::as_bytes(std::span(s.data(), s.size()))) == 0xCBF43926U);
}

TEST_CASE("encode/decode round trip on 300 random valid descriptors", "[moe][property]") {
  Rng rng(42);
  for (int i = 0; i < 300; ++i) {
    const MoeDescriptor d = random_moe_descriptor(rng);
    INFO("case " << i << ": experts " << d.layer.experts << ", slots " << d.slots.size());
    const auto e = validate(d);
    REQUIRE_FALSE(e.has_value());
    const auto bytes = encode(d);
    const auto back = decode_moe(bytes);
    if (!back.ok()) FAIL(back.error().to_string());
    CHECK(back.value() == d);
    CHECK(encode(back.value()) == bytes);
  }
}

TEST_CASE("the example descriptor round-trips", "[moe]") {
  const MoeDescriptor d = example_moe_descriptor();
  CHECK(decode_moe(encode(d)).value() == d);
}

TEST_CASE("every proper prefix of a valid encoding is 'truncated'", "[moe][robustness]") {
  for (const MoeDescriptor& d : {small_moe(), example_moe_descriptor()}) {
    const auto bytes = encode(d);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      const auto r = decode_moe(std::span(bytes.data(), n));
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code == Code::truncated);
      CHECK(r.error().offset <= n);
    }
  }
}

TEST_CASE("decoder accepts non-canonical but valid section placement", "[moe]") {
  // Swap the slot table and sync section order: sync first, then slots.
  const MoeDescriptor d = small_moe();
  auto b = encode(d);
  std::vector<std::byte> moved(b.begin(), b.begin() + kSmallSlots);
  moved.insert(moved.end(), b.begin() + kSmallSync, b.end());                  // sync at 320
  moved.insert(moved.end(), b.begin() + kSmallSlots, b.begin() + kSmallSync);  // slots at 344
  patch(moved, 52, kSmallSlots, 4);
  patch(moved, 44, kSmallSlots + 24, 4);
  refresh_crc(moved);
  const auto r = decode_moe(moved);
  REQUIRE(r.ok());
  CHECK(r.value() == d);
  // Errors in the moved table are reported at their real offsets.
  patch(moved, kSmallSlots + 24 + moe_wire::slot::length, 0, 4);
  refresh_crc(moved);
  CHECK(decode_moe(moved).error().code == Code::zero_slot_length);
  CHECK(decode_moe(moved).error().offset == kSmallSlots + 24 + moe_wire::slot::length);
}

TEST_CASE("struct validation and decoding report the same offsets", "[moe]") {
  MoeDescriptor d = small_moe();
  d.slots[1].expert = 9;
  const auto v = validate(d);
  REQUIRE(v.has_value());
  CHECK(v->code == Code::expert_out_of_range);
  CHECK(v->offset == kSmallSlots + 48 + moe_wire::slot::expert);
  auto b = encode(small_moe());
  patch(b, kSmallSlots + 48, 9, 4);
  refresh_crc(b);
  const auto r = decode_moe(b);
  CHECK(r.error().code == v->code);
  CHECK(r.error().offset == v->offset);
  CHECK_THROWS_AS(encode(d), DescriptorException);
}

TEST_CASE("random corruption never crashes and valid results are stable", "[moe][robustness]") {
  Rng rng(7);
  int accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    Rng gen(static_cast<std::uint64_t>(i % 50));
    auto bytes = encode(i % 50 == 0 ? small_moe() : random_moe_descriptor(gen));
    const auto flips = uniform(rng, 1, 4);
    for (std::uint64_t k = 0; k < flips; ++k) {
      const auto at = uniform(rng, 0, bytes.size() - 1);
      bytes[at] = static_cast<std::byte>(uniform(rng, 0, 255));
    }
    if (uniform(rng, 0, 9) != 0) refresh_crc(bytes);  // mostly get past the checksum
    if (uniform(rng, 0, 9) == 0) bytes.resize(uniform(rng, 0, bytes.size()));
    const auto r = decode_moe(bytes);
    if (r.ok()) {
      ++accepted;
      const auto again = encode(r.value());
      CHECK(decode_moe(again).value() == r.value());
    } else {
      CHECK(r.error().offset <= bytes.size());
      CHECK_FALSE(r.error().message.empty());
    }
  }
  // Some mutations hit don't-care bytes (e.g. slot lengths) and stay valid.
  CHECK(accepted > 0);
}
