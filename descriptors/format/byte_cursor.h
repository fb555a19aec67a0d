// Little-endian byte reading and writing for the descriptor formats. The reader
// is the only way decoders touch input bytes: every read is bounds-checked and
// a short buffer becomes a `truncated` error naming the offset, never an
// out-of-bounds read. Values are assembled byte by byte so the result does not
// depend on the host's byte order or on alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "descriptors/format/descriptor_error.h"

namespace tdmsim::format {

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> bytes, std::uint64_t pos = 0)
      : bytes_(bytes), pos_(pos) {}

  std::uint64_t pos() const { return pos_; }
  std::uint64_t size() const { return bytes_.size(); }
  // Moves to an absolute offset; past-the-end is reported by the next read.
  void seek(std::uint64_t pos) { pos_ = pos; }

  // Each read fails (returns nullopt and records the error) if fewer than the
  // needed bytes remain; after a failure every later read fails too.
  std::optional<std::uint8_t> u8(std::string_view what) { return read<std::uint8_t>(1, what); }
  std::optional<std::uint16_t> u16(std::string_view what) { return read<std::uint16_t>(2, what); }
  std::optional<std::uint32_t> u32(std::string_view what) { return read<std::uint32_t>(4, what); }
  std::optional<std::uint64_t> u64(std::string_view what) { return read<std::uint64_t>(8, what); }

  bool failed() const { return error_.has_value(); }
  const DescriptorError& error() const { return *error_; }

 private:
  template <class T>
  std::optional<T> read(unsigned n, std::string_view what) {
    if (error_) return std::nullopt;
    if (pos_ > bytes_.size() || bytes_.size() - pos_ < n) {
      error_ = DescriptorError{
          DescriptorErrorCode::truncated, pos_,
          "buffer of " + std::to_string(bytes_.size()) + " bytes ends inside " + std::string(what) +
              " (" + std::to_string(n) + " bytes at offset " + std::to_string(pos_) + ")"};
      return std::nullopt;
    }
    T v = 0;
    for (unsigned i = 0; i < n; ++i) {
      v = static_cast<T>(v | static_cast<T>(static_cast<T>(bytes_[pos_ + i]) << (8 * i)));
    }
    pos_ += n;
    return v;
  }

  std::span<const std::byte> bytes_;
  std::uint64_t pos_ = 0;
  std::optional<DescriptorError> error_;
};

// Appends little-endian values to a growing buffer (encoders only; encoders
// work from validated structs, so no failure path is needed).
class ByteWriter {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<std::byte>(v)); }
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void zeros(std::size_t n) { out_.insert(out_.end(), n, std::byte{0}); }
  std::size_t size() const { return out_.size(); }
  // Overwrites 4 bytes at `pos` (for fields known only at the end: size, CRC).
  void patch_u32(std::size_t pos, std::uint32_t v) {
    for (unsigned i = 0; i < 4; ++i) out_[pos + i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
  }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  void put(std::uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; ++i) out_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
  }
  std::vector<std::byte> out_;
};

// CRC-32 (ISO-HDLC / zlib polynomial 0xEDB88320, reflected, init and final XOR
// 0xFFFFFFFF) of `bytes`, treating the four bytes at `skip` as zero so a
// descriptor can carry its own checksum. skip = SIZE_MAX skips nothing.
std::uint32_t crc32(std::span<const std::byte> bytes, std::size_t skip = SIZE_MAX);

// Shared framing of both file formats (a 4-byte magic, a 16-bit version right
// after it, a self-covering CRC): reads magic and version and reports
// bad_magic (naming `what`) or unsupported_version on a mismatch.
std::optional<DescriptorError> expect_header(ByteReader& r, const char (&magic)[4],
                                             std::uint16_t version, std::string_view what);
// Writes the CRC-32 of `out` (the 4 bytes at `at` counted as zero) into them.
void stamp_crc32(std::vector<std::byte>& out, std::size_t at);
// A checksum_mismatch error if `stored` is not the CRC-32 of `bytes` (the 4
// bytes at `at` counted as zero).
std::optional<DescriptorError> check_crc32(std::span<const std::byte> bytes, std::size_t at,
                                           std::uint32_t stored);

}  // namespace tdmsim::format
