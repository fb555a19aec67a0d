// Tensor-mover descriptor: pack() against dwords computed by hand from the
// tables of shared/hardware.md 1.3-1.6, pack/unpack round trips, the
// gather-bit layout switch, and every validation rule.
#include <catch2/catch.hpp>

#include "descriptors/format/tensor_descriptor.h"
#include "format_generators.h"

using namespace tdmsim;
using namespace tdmsim::format;
using Code = DescriptorErrorCode;

namespace {

// The gather example: 13 16-bit row indices 100, 107, ..., 184.
TensorDescriptor gather13() {
  TensorDescriptor d;
  d.gather = true;
  d.index_size = IndexSize::i16;
  d.lds_addr = 0x400;
  d.global_addr = 0x123456780ULL;  // bit 32 set: lands in group0 dword3[24:0]
  d.element_bytes = 2;
  d.tensor_dim = {4096, 70000, 0, 0, 0};  // 70000 = 0x11170 spans the 16-bit split
  d.tile_dim = {128, 13, 0, 0, 0};
  d.stride[0] = 4096;
  for (unsigned i = 0; i < 13; ++i) d.indices[i] = 100 + 7 * i;
  return d;
}

Code code_of(const TensorDescriptor& d) {
  auto e = validate(d);
  REQUIRE(e.has_value());
  return e->code;
}

}  // namespace

TEST_CASE("gather bit layout constants follow the two public sources", "[tensor]") {
  STATIC_REQUIRE(gather_bits(GatherBitLayout::mlir).gather == 30);
  STATIC_REQUIRE(gather_bits(GatherBitLayout::mlir).index32 == 31);
  STATIC_REQUIRE(gather_bits(GatherBitLayout::triton).gather == 31);
  STATIC_REQUIRE(gather_bits(GatherBitLayout::triton).index32 == 30);
}

TEST_CASE("pack: gather of 13 i16 indices matches hand-computed dwords", "[tensor]") {
  const TensorDwords expect = {
      // group0: pred | gather(bit 30); LDS; global low; global high | type 2
      0x40000001, 0x00000400, 0x23456780, 0x80000001,
      // group1: data size log2 = 1 at bit 16; dim0 low16 at [31:16] of dword1;
      // dim0 high | dim1 low (0x1170); dim1 high (1) | tile0 (128);
      // index count 13; stride0 = 4096; stride0 high | stride1 low; stride1 high
      0x00010000, 0x10000000, 0x11700000, 0x00800001, 0x0000000D, 0x00001000, 0x00000000,
      0x00000000,
      // group2/3: {idx1:idx0} ... {idx13:idx12}, idx13 = 0
      0x006B0064, 0x00790072, 0x00870080, 0x0095008E, 0x00A3009C, 0x00B100AA, 0x000000B8,
      0x00000000};
  const TensorDescriptor d = gather13();
  CHECK(pack(d, GatherBitLayout::mlir) == expect);
  TensorDwords triton = expect;
  triton[0] = 0x80000001;  // gather at bit 31
  CHECK(pack(d, GatherBitLayout::triton) == triton);
  CHECK(d.uses_four_groups());
}

TEST_CASE("pack: 32-bit indices set the index-size bit and one index per dword", "[tensor]") {
  TensorDescriptor d = gather13();
  d.index_size = IndexSize::i32;
  d.tile_dim[1] = 3;
  d.indices = {};
  d.indices[0] = 0x00012345;
  d.indices[1] = 7;
  d.indices[2] = 0xFFFFFFFF;
  const TensorDwords w = pack(d, GatherBitLayout::mlir);
  CHECK(w[0] == 0xC0000001);  // bit 30 gather + bit 31 index32
  CHECK(w[8] == 3);
  CHECK(w[12] == 0x00012345);
  CHECK(w[13] == 7);
  CHECK(w[14] == 0xFFFFFFFF);
  for (unsigned k = 15; k < 20; ++k) CHECK(w[k] == 0);
  // Under the swapped (Triton) layout both bits are set as well.
  CHECK(pack(d, GatherBitLayout::triton)[0] == 0xC0000001);
}

TEST_CASE("pack: 2-D tile with padding and atomic barrier", "[tensor]") {
  TensorDescriptor d;
  d.lds_addr = 0x2000;
  d.global_addr = 0x1000;
  d.element_bytes = 2;
  d.workgroup_mask = 0x0005;
  d.atomic_barrier = true;
  d.barrier_addr = 0x100;
  d.pad = true;
  d.pad_interval = 64;  // encoded log2(64) - 1 = 5
  d.pad_amount = 2;     // encoded 1
  d.tensor_dim = {4096, 512, 0, 0, 0};
  d.tile_dim = {128, 64, 0, 0, 0};
  d.stride = {0xABCD00001111ULL, 0x123456789ABCULL, 0, 0};
  const TensorDwords w = pack(d, GatherBitLayout::mlir);
  CHECK(w[0] == 0x00000001);
  CHECK(w[3] == 0x80000000);
  CHECK(w[4] == (0x0005U | 1U << 16 | 1U << 18 | 1U << 20 | 5U << 22 | 1U << 25));
  CHECK(w[4] == 0x03550005);
  CHECK(w[5] == (0x20U | 4096U << 16));  // barrier addr >> 3, dim0 low
  CHECK(w[6] == 512U << 16);
  CHECK(w[7] == 128U << 16);
  CHECK(w[8] == 64);
  CHECK(w[9] == 0x00001111);
  CHECK(w[10] == 0x9ABCABCD);  // stride0 high 16 | stride1 low 16
  CHECK(w[11] == 0x12345678);  // stride1 >> 16
  for (unsigned k = 12; k < 20; ++k) CHECK(w[k] == 0);
  CHECK_FALSE(d.uses_four_groups());
}

TEST_CASE("pack: 5-D descriptor fills groups 2 and 3", "[tensor]") {
  TensorDescriptor d;
  d.element_bytes = 4;
  d.tensor_dim = {10, 20, 30, 40, 0x12345};
  d.tile_dim = {1, 2, 3, 4, 5};
  d.stride = {10, 200, 0x000100000002ULL, 0xFFFFFFFFFFFFULL};
  const TensorDwords w = pack(d, GatherBitLayout::mlir);
  CHECK(w[8] == (2U | 3U << 16));
  CHECK(w[12] == 30);
  CHECK(w[13] == 40);
  CHECK(w[14] == 2);
  CHECK(w[15] == 0x00040001);  // stride2 high | tile_dim3
  CHECK(w[16] == 0xFFFFFFFF);
  CHECK(w[17] == 0x2345FFFF);  // stride3 high | tensor_dim4 low
  CHECK(w[18] == 0x00050001);  // tensor_dim4 high | tile_dim4
  CHECK(w[19] == 0);
}

TEST_CASE("pack: iterate mode reuses group2", "[tensor]") {
  TensorDescriptor d;
  d.element_bytes = 1;
  d.iterate = true;
  d.tensor_dim = {64, 64, 0, 0, 0};
  d.tile_dim = {64, 8, 0, 0, 0};
  d.stride[0] = 64;
  d.iterate_count = 4;
  d.iterate_lds_increment = 0x800;
  d.iterate_global_increment = 0x100000000ULL;
  const TensorDwords w = pack(d, GatherBitLayout::mlir);
  CHECK(w[4] == (1U << 19));
  CHECK(w[12] == 0);
  CHECK(w[13] == 0x800);
  CHECK(w[14] == 0);
  CHECK(w[15] == 0x00030001);  // count - 1 = 3 in [31:16], increment high = 1
  for (unsigned k = 16; k < 20; ++k) CHECK(w[k] == 0);
}

TEST_CASE("pack/unpack round trip on 500 random valid descriptors, both layouts",
          "[tensor][property]") {
  testing::Rng rng(20261129);
  for (int i = 0; i < 500; ++i) {
    const TensorDescriptor d = testing::random_tensor_descriptor(rng);
    INFO("case " << i);
    REQUIRE_FALSE(validate(d).has_value());
    for (auto layout : {GatherBitLayout::mlir, GatherBitLayout::triton}) {
      const TensorDwords w = pack(d, layout);
      const auto back = unpack(w, layout);
      REQUIRE(back.ok());
      CHECK(back.value() == d);
      CHECK(pack(back.value(), layout) == w);
    }
  }
}

TEST_CASE("unpack with the other gather-bit layout misreads gather descriptors", "[tensor]") {
  const TensorDescriptor d = gather13();
  const TensorDwords mlir = pack(d, GatherBitLayout::mlir);
  // Under Triton's layout bit 30 is "32-bit indices" and bit 31 (gather) is clear.
  const auto wrong = unpack(mlir, GatherBitLayout::triton);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().code == Code::reserved_nonzero);
  CHECK(wrong.error().offset == 0);
  // A non-gather descriptor reads the same under both.
  TensorDescriptor plain;
  plain.tensor_dim = {8, 8, 0, 0, 0};
  plain.tile_dim = {8, 8, 0, 0, 0};
  CHECK(unpack(pack(plain, GatherBitLayout::mlir), GatherBitLayout::triton).value() == plain);
}

TEST_CASE("unpack rejects reserved bits and a wrong type field", "[tensor]") {
  TensorDescriptor plain;
  plain.tensor_dim = {8, 8, 0, 0, 0};
  plain.tile_dim = {8, 8, 0, 0, 0};
  const TensorDwords good = pack(plain, GatherBitLayout::mlir);
  auto with = [&](unsigned k, std::uint32_t v) {
    TensorDwords w = good;
    w[k] = v;
    return unpack(w, GatherBitLayout::mlir);
  };
  CHECK(with(0, 0x00000101).error().code == Code::reserved_nonzero);
  CHECK(with(0, 0x00000003).error().code == Code::bad_predicate);
  CHECK(with(3, 0x40000000).error().code == Code::bad_type_field);
  CHECK(with(3, 0x00000000).error().code == Code::bad_type_field);
  CHECK(with(3, 0x82000000).error().code == Code::reserved_nonzero);
  CHECK(with(4, 1U << 22).error().code == Code::reserved_nonzero);  // pad interval without pad
  CHECK(with(19, 1).error().code == Code::reserved_nonzero);        // group3 dword3
  const auto e = with(3, 0x40000000).error();
  CHECK(e.offset == 12);
}

TEST_CASE("validate: each rule has its own error code", "[tensor]") {
  TensorDescriptor base;
  base.tensor_dim = {64, 64, 0, 0, 0};
  base.tile_dim = {16, 16, 0, 0, 0};
  base.stride[0] = 64;
  REQUIRE_FALSE(validate(base).has_value());
  auto mod = [&](auto f) {
    TensorDescriptor d = base;
    f(d);
    return code_of(d);
  };
  CHECK(mod([](auto& d) { d.pred = 2; }) == Code::bad_predicate);
  CHECK(mod([](auto& d) { d.global_addr = kTensorGlobalAddressLimit; }) ==
        Code::address_out_of_range);
  CHECK(mod([](auto& d) { d.element_bytes = 3; }) == Code::bad_element_size);
  CHECK(mod([](auto& d) { d.element_bytes = 16; }) == Code::bad_element_size);
  CHECK(mod([](auto& d) { d.pad = true, d.pad_interval = 3, d.pad_amount = 1; }) ==
        Code::bad_padding);
  CHECK(mod([](auto& d) { d.pad = true, d.pad_interval = 512, d.pad_amount = 1; }) ==
        Code::bad_padding);
  CHECK(mod([](auto& d) { d.pad = true, d.pad_interval = 1, d.pad_amount = 1; }) ==
        Code::bad_padding);
  CHECK(mod([](auto& d) { d.pad = true, d.pad_interval = 2, d.pad_amount = 129; }) ==
        Code::bad_padding);
  CHECK(mod([](auto& d) { d.pad = true, d.pad_interval = 2, d.pad_amount = 0; }) ==
        Code::bad_padding);
  CHECK(mod([](auto& d) { d.pad_amount = 4; }) == Code::bad_padding);
  CHECK(mod([](auto& d) { d.atomic_barrier = true, d.barrier_addr = 4; }) == Code::bad_barrier);
  CHECK(mod([](auto& d) { d.atomic_barrier = true, d.barrier_addr = kTensorBarrierAddressLimit; }) ==
        Code::bad_barrier);
  CHECK(mod([](auto& d) { d.barrier_addr = 8; }) == Code::bad_barrier);
  CHECK(mod([](auto& d) { d.tensor_dim[0] = 0; }) == Code::bad_dimension);
  CHECK(mod([](auto& d) { d.tile_dim[1] = 0; }) == Code::bad_dimension);
  CHECK(mod([](auto& d) { d.tensor_dim[2] = 4; }) == Code::bad_dimension);  // dims 3, 4 absent
  CHECK(mod([](auto& d) { d.tile_dim[2] = 2; }) == Code::bad_dimension);    // on a 2-D tensor
  CHECK(mod([](auto& d) { d.stride[1] = kTensorStrideLimit; }) == Code::bad_stride);
  CHECK(mod([](auto& d) { d.iterate = true; }) == Code::bad_iterate);  // count 0
  CHECK(mod([](auto& d) { d.iterate = true, d.iterate_count = 257; }) == Code::bad_iterate);
  CHECK(mod([](auto& d) { d.iterate_count = 2; }) == Code::bad_iterate);    // without iterate
  CHECK(mod([](auto& d) { d.indices[0] = 1; }) == Code::reserved_nonzero);  // without gather
  CHECK(mod([](auto& d) { d.index_size = IndexSize::i32; }) == Code::reserved_nonzero);
  CHECK(mod([](auto& d) {
          d.tile_dim = {65535, 65535, 65535, 0, 0}, d.tensor_dim = {1, 1, 1, 1, 1};
        }) == Code::bad_dimension);  // d4 form with tile_dim3 = 0
  CHECK(mod([](auto& d) {
          d.tensor_dim = {1, 1, 1, 1, 1}, d.tile_dim = {65535, 65535, 65535, 1, 1};
        }) == Code::bad_dimension);  // 2^48 bytes: beyond the LDS address space

  TensorDescriptor g = gather13();
  auto gmod = [&](auto f) {
    TensorDescriptor d = g;
    f(d);
    return code_of(d);
  };
  CHECK(gmod([](auto& d) { d.tensor_dim[2] = 2; }) == Code::gather_rank);
  CHECK(gmod([](auto& d) { d.tile_dim[2] = 2; }) == Code::gather_rank);
  CHECK(gmod([](auto& d) { d.tile_dim[1] = 0; }) == Code::index_count);
  CHECK(gmod([](auto& d) { d.tile_dim[1] = 17; }) == Code::index_count);
  CHECK(gmod([](auto& d) { d.index_size = IndexSize::i32; }) == Code::index_count);  // 13 > 8
  CHECK(gmod([](auto& d) { d.indices[14] = 1; }) == Code::reserved_nonzero);
  CHECK(gmod([](auto& d) { d.indices[0] = 0x10000; }) == Code::bad_dimension);  // needs i32
  CHECK(gmod([](auto& d) { d.iterate = true, d.iterate_count = 1; }) == Code::bad_iterate);
}

TEST_CASE("pack throws on an invalid descriptor", "[tensor]") {
  TensorDescriptor d;
  d.tensor_dim = {4, 4, 0, 0, 0};
  d.tile_dim = {4, 4, 0, 0, 0};
  d.element_bytes = 3;
  try {
    (void)pack(d, GatherBitLayout::mlir);
    FAIL("pack accepted element size 3");
  } catch (const DescriptorException& e) {
    CHECK(e.error().code == Code::bad_element_size);
    CHECK(e.error().offset == 16);
  }
}
