#include "descriptors/format/tensor_file.h"

#include <string>

#include "descriptors/format/byte_cursor.h"
#include "descriptors/format/format_detail.h"

namespace tdmsim::format {
namespace {

using Code = DescriptorErrorCode;
constexpr char kTensorMagic[4] = {'T', 'D', 'M', 'T'};
// Header byte offsets.
constexpr std::uint32_t kAtVersion = 4, kAtHeaderSize = 6, kAtTotal = 8, kAtCrc = 12, kAtLayout = 16,
                        kAtReserved0 = 17, kAtCount = 20, kAtRecord = 24, kAtReserved1 = 28;

using detail::err;

}  // namespace

std::vector<std::byte> encode(const TensorDescriptorFile& f) {
  if (f.descriptors.empty() || f.descriptors.size() > kTensorFileMaxRecords) {
    throw DescriptorException(err(Code::count_out_of_range, kAtCount,
                                  "a tensor descriptor file holds 1..4096 descriptors, not " +
                                      std::to_string(f.descriptors.size())));
  }
  const auto count = static_cast<std::uint32_t>(f.descriptors.size());
  ByteWriter w;
  for (char c : kTensorMagic) w.u8(static_cast<std::uint8_t>(c));
  w.u16(kTensorFileVersion);
  w.u16(static_cast<std::uint16_t>(kTensorFileHeader));
  w.u32(kTensorFileHeader + count * kTensorFileRecord);
  w.u32(0);  // CRC, patched below
  w.u8(f.layout == GatherBitLayout::triton ? 1 : 0);
  w.zeros(3);
  w.u32(count);
  w.u32(kTensorFileRecord);
  w.u32(0);
  for (const TensorDescriptor& d : f.descriptors) {
    for (std::uint32_t v : pack(d, f.layout)) w.u32(v);  // pack() validates
  }
  std::vector<std::byte> out = w.take();
  stamp_crc32(out, kAtCrc);
  return out;
}

Decoded<TensorDescriptorFile> decode_tensor_file(std::span<const std::byte> bytes) {
  ByteReader r(bytes);
  if (auto e = expect_header(r, kTensorMagic, kTensorFileVersion, "tensor descriptor file")) return *e;
  const auto header = r.u16("header.header_size");
  if (!header) return r.error();
  if (*header != kTensorFileHeader) {
    return err(Code::bad_header_size, kAtHeaderSize,
               "header size " + std::to_string(*header) + "; version 1 uses 32");
  }
  const auto total = r.u32("header.total_size");
  if (!total) return r.error();
  if (*total > bytes.size()) {
    return err(Code::truncated, bytes.size(),
               "header says " + std::to_string(*total) + " bytes, buffer holds " +
                   std::to_string(bytes.size()));
  }
  if (*total < bytes.size() || *total < kTensorFileHeader) {
    return err(Code::size_mismatch, kAtTotal,
               "total_size " + std::to_string(*total) + " differs from the " +
                   std::to_string(bytes.size()) + "-byte buffer");
  }
  const auto stored = r.u32("header.crc32");
  if (!stored) return r.error();
  if (auto e = check_crc32(bytes, kAtCrc, *stored)) return *e;
  const auto layout = r.u8("header.gather_bit_layout").value_or(0);
  const auto res0 = r.u8("header.reserved").value_or(0);
  const auto res1 = r.u16("header.reserved").value_or(0);
  const auto count = r.u32("header.count").value_or(0);
  const auto record = r.u32("header.record_size").value_or(0);
  const auto res2 = r.u32("header.reserved").value_or(0);
  if (r.failed()) return r.error();
  if (layout > 1)
    return err(Code::bad_enum, kAtLayout,
               "gather bit layout code " + std::to_string(layout) + " (0 mlir, 1 triton)");
  if (res0 != 0 || res1 != 0)
    return err(Code::reserved_nonzero, kAtReserved0, "reserved header bytes set");
  if (res2 != 0) return err(Code::reserved_nonzero, kAtReserved1, "reserved header word set");
  if (record != kTensorFileRecord) {
    return err(Code::bad_record_size, kAtRecord,
               "record size " + std::to_string(record) + "; version 1 uses 80");
  }
  if (count == 0 || count > kTensorFileMaxRecords) {
    return err(Code::count_out_of_range, kAtCount,
               "descriptor count " + std::to_string(count) + " outside 1..4096");
  }
  if (std::uint64_t{count} * record + kTensorFileHeader != *total) {
    return err(Code::size_mismatch, kAtTotal,
               std::to_string(count) + " records of 80 bytes do not fill total_size " +
                   std::to_string(*total));
  }
  TensorDescriptorFile f;
  f.layout = layout == 1 ? GatherBitLayout::triton : GatherBitLayout::mlir;
  f.descriptors.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint64_t rec = kTensorFileHeader + std::uint64_t{i} * kTensorFileRecord;
    TensorDwords w{};
    r.seek(rec);
    for (auto& v : w) v = r.u32("tensor descriptor dword").value_or(0);
    if (r.failed()) return r.error();
    auto d = unpack(w, f.layout);
    if (!d) {
      DescriptorError e = d.error();
      e.offset += rec;
      e.message = "descriptor " + std::to_string(i) + ": " + e.message;
      return e;
    }
    f.descriptors.push_back(std::move(d).value());
  }
  return f;
}

}  // namespace tdmsim::format
