// Every DescriptorErrorCode is produced by a crafted input, with the offset of
// the offending field. Byte-level cases patch a valid encoding (and refresh the
// CRC so the check under test is the one that fires); the rest build structs.
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "descriptors/format/tensor_mover.h"
#include "descriptors/format/tensor_file.h"
#include "format_generators.h"
#include "small_moe.h"

using namespace tdmsim;
using namespace tdmsim::format;
using namespace tdmsim::format::testing;
using Code = DescriptorErrorCode;

namespace {

constexpr std::uint32_t L = kSmallLayer, X = kSmallExperts, S = kSmallSlots, Y = kSmallSync;

struct Case {
  std::string name;
  Code code;
  std::uint64_t offset;
  std::function<DescriptorError()> run;
};

// Decode small_moe() after `edit`; the CRC is refreshed unless told not to.
std::function<DescriptorError()> moe_bytes(std::function<void(std::vector<std::byte>&)> edit,
                                           bool fix_crc = true) {
  return [=] {
    auto b = encode(small_moe());
    edit(b);
    if (fix_crc && b.size() >= 16) refresh_crc(b);
    const auto r = decode_moe(b);
    REQUIRE_FALSE(r.ok());
    return r.error();
  };
}

std::function<DescriptorError()> moe_struct(std::function<void(MoeDescriptor&)> edit) {
  return [=] {
    MoeDescriptor d = small_moe();
    edit(d);
    auto e = validate(d);
    REQUIRE(e.has_value());
    return *e;
  };
}

TensorDescriptor plain_tile() {
  TensorDescriptor d;
  d.tensor_dim = {16, 16, 0, 0, 0};
  d.tile_dim = {16, 4, 0, 0, 0};
  d.stride[0] = 16;
  return d;
}

std::function<DescriptorError()> tensor_struct(std::function<void(TensorDescriptor&)> edit) {
  return [=] {
    TensorDescriptor d = plain_tile();
    edit(d);
    auto e = validate(d);
    REQUIRE(e.has_value());
    return *e;
  };
}

// Decode a one-record tensor file whose record dword `k` is replaced by `v`.
std::function<DescriptorError()> tensor_file_dword(unsigned k, std::uint32_t v) {
  return [=] {
    TensorDescriptorFile f;
    f.descriptors = {plain_tile()};
    auto b = encode(f);
    patch(b, kTensorFileHeader + 4 * k, v, 4);
    refresh_crc(b);
    const auto r = decode_tensor_file(b);
    REQUIRE_FALSE(r.ok());
    return r.error();
  };
}

std::function<DescriptorError()> engine(std::function<void()> f) {
  return [=] {
    try {
      f();
    } catch (const DescriptorException& e) {
      return e.error();
    }
    FAIL("no exception");
    return DescriptorError{};
  };
}

std::vector<Case> cases() {
  namespace H = moe_wire::hdr;
  namespace Ly = moe_wire::layer;
  namespace Sl = moe_wire::slot;
  using B = std::vector<std::byte>;
  std::vector<Case> c;
  c.push_back(
      {"truncated buffer", Code::truncated, 100, moe_bytes([](B& b) { b.resize(100); }, false)});
  c.push_back({"bad magic", Code::bad_magic, 0, moe_bytes([](B& b) { b[0] = std::byte{'X'}; })});
  c.push_back({"version 2", Code::unsupported_version, H::version,
               moe_bytes([](B& b) { patch(b, H::version, 2, 2); })});
  c.push_back({"header size 72", Code::bad_header_size, H::header_size,
               moe_bytes([](B& b) { patch(b, H::header_size, 72, 2); })});
  c.push_back({"trailing byte", Code::size_mismatch, H::total_size,
               moe_bytes([](B& b) { b.push_back(std::byte{0}); })});
  c.push_back({"flipped slot byte", Code::checksum_mismatch, H::crc,
               moe_bytes([](B& b) { b[S + 20] ^= std::byte{1}; }, false)});
  c.push_back({"reserved header word", Code::reserved_nonzero, H::reserved,
               moe_bytes([](B& b) { patch(b, H::reserved, 1, 4); })});
  c.push_back({"dtype code 99", Code::bad_enum, L + Ly::dtype,
               moe_bytes([](B& b) { patch(b, L + Ly::dtype, 99, 1); })});
  c.push_back({"slot record 40", Code::bad_record_size, H::slot_record,
               moe_bytes([](B& b) { patch(b, H::slot_record, 40, 2); })});
  c.push_back({"slot table past the end", Code::section_out_of_bounds, H::slots_offset,
               moe_bytes([](B& b) { patch(b, H::slots_offset, kSmallTotal, 4); })});
  c.push_back({"expert table larger than the buffer", Code::section_out_of_bounds,
               H::experts_offset, moe_bytes([](B& b) { patch(b, H::expert_count, 1000, 4); })});
  c.push_back({"sync section misaligned", Code::section_misaligned, H::sync_offset,
               moe_bytes([](B& b) { patch(b, H::sync_offset, Y - 4, 4); })});
  c.push_back({"expert table on the layer", Code::sections_overlap, H::experts_offset,
               moe_bytes([](B& b) { patch(b, H::experts_offset, L, 4); })});
  c.push_back({"0 experts", Code::count_out_of_range, H::expert_count,
               moe_bytes([](B& b) { patch(b, H::expert_count, 0, 4); })});
  c.push_back({"65537 experts", Code::count_out_of_range, H::expert_count,
               moe_bytes([](B& b) { patch(b, H::expert_count, 65537, 4); })});
  c.push_back({"0 slots", Code::count_out_of_range, H::slot_count,
               moe_bytes([](B& b) { patch(b, H::slot_count, 0, 4); })});
  c.push_back({"too many token blocks", Code::count_out_of_range, L + Ly::token_blocks,
               moe_bytes([](B& b) { patch(b, L + Ly::token_blocks, 9, 4); })});
  c.push_back({"hidden 0", Code::dimension_out_of_range, L + Ly::hidden,
               moe_bytes([](B& b) { patch(b, L + Ly::hidden, 0, 4); })});
  c.push_back({"block_m 3", Code::dimension_out_of_range, L + Ly::block_m,
               moe_bytes([](B& b) { patch(b, L + Ly::block_m, 3, 4); })});
  c.push_back({"block_m 0", Code::dimension_out_of_range, L + Ly::block_m,
               moe_bytes([](B& b) { patch(b, L + Ly::block_m, 0, 4); })});
  c.push_back({"block_m 40", Code::dimension_out_of_range, L + Ly::block_m,
               moe_bytes([](B& b) { patch(b, L + Ly::block_m, 40, 4); })});
  c.push_back({"block_m 1040", Code::dimension_out_of_range, L + Ly::block_m,
               moe_bytes([](B& b) { patch(b, L + Ly::block_m, 1040, 4); })});
  c.push_back({"gate_up region overflows", Code::arithmetic_overflow, X + 0, moe_bytes([](B& b) {
                 patch(b, L + Ly::gate_up_row_stride, std::uint64_t{1} << 63, 8);
               })});
  c.push_back({"weights past 2^57", Code::address_out_of_range, X + 3 * 32,
               moe_bytes([](B& b) { patch(b, X + 3 * 32, (std::uint64_t{1} << 57) - 256, 8); })});
  c.push_back({"misaligned down weights", Code::misaligned_address, X + 32 + 8,
               moe_bytes([](B& b) { patch(b, X + 32 + 8, peek(b, X + 32 + 8, 8) + 8, 8); })});
  c.push_back({"misaligned input", Code::misaligned_address, L + Ly::input_base,
               moe_bytes([](B& b) { patch(b, L + Ly::input_base, 0x100008, 8); })});
  c.push_back({"down stride 1", Code::stride_too_small, L + Ly::down_row_stride,
               moe_bytes([](B& b) { patch(b, L + Ly::down_row_stride, 1, 8); })});
  c.push_back({"two experts share weights", Code::weight_regions_overlap, X + 32,
               moe_bytes([](B& b) { patch(b, X + 32, peek(b, X, 8), 8); })});
  c.push_back({"output on input", Code::io_regions_overlap, L + Ly::output_base,
               moe_bytes([](B& b) { patch(b, L + Ly::output_base, 0x100000, 8); })});
  c.push_back({"input on expert weights", Code::io_regions_overlap, L + Ly::input_base,
               moe_bytes([](B& b) { patch(b, L + Ly::input_base, 0x10000, 8); })});
  c.push_back({"slot names expert 4 of 4", Code::expert_out_of_range, S + Sl::expert,
               moe_bytes([](B& b) { patch(b, S + Sl::expert, 4, 4); })});
  c.push_back({"slot names block 6 of 6", Code::block_out_of_range, S + Sl::block,
               moe_bytes([](B& b) { patch(b, S + Sl::block, 6, 4); })});
  c.push_back({"3 stages", Code::bad_stage, L + Ly::stages,
               moe_bytes([](B& b) { patch(b, L + Ly::stages, 3, 1); })});
  c.push_back({"fused slot in a 2-stage layer", Code::bad_stage, S + Sl::stage,
               moe_bytes([](B& b) { patch(b, S + Sl::stage, 0, 1); })});
  c.push_back({"slot length 0", Code::zero_slot_length, S + 48 + Sl::length,
               moe_bytes([](B& b) { patch(b, S + 48 + Sl::length, 0, 4); })});
  c.push_back({"slot input moved", Code::slot_address_mismatch, S + Sl::input, moe_bytes([](B& b) {
                 patch(b, S + Sl::input, peek(b, S + Sl::input, 8) + 16, 8);
               })});
  c.push_back({"slot without gather flag", Code::slot_address_mismatch, S + Sl::flags,
               moe_bytes([](B& b) { patch(b, S + Sl::flags, 0, 1); })});
  c.push_back({"waits for itself", Code::bad_sync, Y + 16,
               moe_bytes([](B& b) { patch(b, Y + 16, 5, 4); })});
  c.push_back({"duplicate wait id", Code::bad_sync, Y + 20,
               moe_bytes([](B& b) { patch(b, Y + 20, 3, 4); })});
  c.push_back({"descriptor id 0", Code::bad_sync, H::descriptor_id,
               moe_struct([](MoeDescriptor& d) { d.descriptor_id = 0; })});
  c.push_back({"callback id without custom policy", Code::bad_policy, L + Ly::custom_policy_id,
               moe_bytes([](B& b) { patch(b, L + Ly::custom_policy_id, 7, 4); })});
  c.push_back({"scale base without scales", Code::reserved_nonzero, X + 16,
               moe_struct([](MoeDescriptor& d) { d.experts[0].gate_up_scale = 0x900000; })});
  // tensor descriptors
  c.push_back({"type field 1", Code::bad_type_field, kTensorFileHeader + 12,
               tensor_file_dword(3, 0x40000000)});
  c.push_back({"pred 3", Code::bad_predicate, kTensorFileHeader + 0, tensor_file_dword(0, 3)});
  c.push_back({"element size 3", Code::bad_element_size, 16,
               tensor_struct([](TensorDescriptor& d) { d.element_bytes = 3; })});
  c.push_back({"pad interval 3", Code::bad_padding, 16, tensor_struct([](TensorDescriptor& d) {
                 d.pad = true, d.pad_interval = 3, d.pad_amount = 1;
               })});
  c.push_back({"barrier at 4", Code::bad_barrier, 20, tensor_struct([](TensorDescriptor& d) {
                 d.atomic_barrier = true, d.barrier_addr = 4;
               })});
  c.push_back({"iterate count 0", Code::bad_iterate, 4 * 15,
               tensor_struct([](TensorDescriptor& d) { d.iterate = true; })});
  c.push_back({"tensor_dim0 0", Code::bad_dimension, 20,
               tensor_struct([](TensorDescriptor& d) { d.tensor_dim[0] = 0; })});
  c.push_back({"stride 2^48", Code::bad_stride, 36,
               tensor_struct([](TensorDescriptor& d) { d.stride[0] = kTensorStrideLimit; })});
  c.push_back({"3-D gather", Code::gather_rank, 48, tensor_struct([](TensorDescriptor& d) {
                 d.gather = true, d.indices[0] = 1, d.tensor_dim[2] = 2;
               })});
  c.push_back({"17 gather indices", Code::index_count, 32,
               tensor_struct([](TensorDescriptor& d) { d.gather = true, d.tile_dim[1] = 17; })});
  c.push_back(
      {"9 i32 gather indices", Code::index_count, 32, tensor_struct([](TensorDescriptor& d) {
         d.gather = true, d.index_size = IndexSize::i32, d.tile_dim[1] = 9;
       })});
  c.push_back({"load past the global view", Code::global_out_of_bounds, 8, engine([] {
                 std::vector<std::byte> g(64), lds(1024);
                 tensor_mover_load(plain_tile(), g, 0, lds);
               })});
  c.push_back({"load past LDS", Code::lds_out_of_bounds, 4, engine([] {
                 std::vector<std::byte> g(1024), lds(64);
                 tensor_mover_load(plain_tile(), g, 0, lds);
               })});
  c.push_back({"padded store", Code::unsupported_operation, 16, engine([] {
                 std::vector<std::byte> g(1024), lds(1024);
                 TensorDescriptor d = plain_tile();
                 d.pad = true, d.pad_interval = 2, d.pad_amount = 1;
                 tensor_mover_store(d, lds, g, 0);
               })});
  return c;
}

}  // namespace

TEST_CASE("every error code is produced by a crafted input, at the right offset", "[errors]") {
  std::map<Code, int> seen;
  for (const Case& k : cases()) {
    SECTION(k.name) {
      const DescriptorError e = k.run();
      INFO(e.to_string());
      CHECK(e.code == k.code);
      CHECK(e.offset == k.offset);
      CHECK_FALSE(e.message.empty());
    }
    ++seen[k.code];
  }
  for (int i = 0; i <= static_cast<int>(Code::unsupported_operation); ++i) {
    const auto code = static_cast<Code>(i);
    INFO("code " << error_code_name(code));
    CHECK(seen.count(code) == 1);
    CHECK(error_code_name(code) != "unknown_error");
  }
}

TEST_CASE("tensor file: container errors and round trip", "[errors][tensor]") {
  Rng rng(99);
  TensorDescriptorFile f;
  f.layout = GatherBitLayout::triton;
  for (int i = 0; i < 12; ++i) f.descriptors.push_back(random_tensor_descriptor(rng));
  const auto b = encode(f);
  CHECK(decode_tensor_file(b).value() == f);
  for (std::size_t n = 0; n < b.size(); ++n) {
    const auto r = decode_tensor_file(std::span(b.data(), n));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Code::truncated);
  }
  auto bad = b;
  patch(bad, 16, 2, 1);  // unknown layout code
  refresh_crc(bad);
  CHECK(decode_tensor_file(bad).error().code == Code::bad_enum);
  bad = b;
  patch(bad, 20, 13, 4);  // count does not match the size
  refresh_crc(bad);
  CHECK(decode_tensor_file(bad).error().code == Code::size_mismatch);
  // An error inside record 3 is reported at its file offset.
  bad = b;
  patch(bad, kTensorFileHeader + 3 * kTensorFileRecord + 12, 0, 4);
  refresh_crc(bad);
  CHECK(decode_tensor_file(bad).error().code == Code::bad_type_field);
  CHECK(decode_tensor_file(bad).error().offset == kTensorFileHeader + 3 * kTensorFileRecord + 12);
  TensorDescriptorFile empty;
  CHECK_THROWS_AS(encode(empty), DescriptorException);
}
