// NumPy .npy files (format version 1.0), the emulator's array output format:
// the 6-byte magic "\x93NUMPY", version bytes 1 0, a little-endian uint16
// header length, an ASCII header dict {'descr': '<f4', 'fortran_order':
// False, 'shape': (T, H), } padded with spaces to a 64-byte boundary and ended
// by '\n', then the raw little-endian elements in C (row-major) order.
// numpy.load reads these directly. See docs/emulator.md ("Output files").
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace tdmsim::emu {

// The header (magic to '\n') of an array of `descr` ("<f4", "<u4") and shape.
std::string npy_header(const std::string& descr, const std::vector<std::uint64_t>& shape);

// Writes a whole .npy file; throws std::runtime_error naming the path on any
// I/O failure or if the element count differs from the shape's product.
void write_npy(const std::filesystem::path& path, std::span<const float> data,
               const std::vector<std::uint64_t>& shape);
void write_npy(const std::filesystem::path& path, std::span<const std::uint32_t> data,
               const std::vector<std::uint64_t>& shape);

// A .npy file read back (tests, validation tools): descr, shape and raw bytes.
struct NpyArray {
  std::string descr;
  std::vector<std::uint64_t> shape;
  std::vector<std::byte> data;
  std::vector<float> as_f32() const;        // descr "<f4" only
  std::vector<std::uint32_t> as_u32() const;  // descr "<u4" only
};
// Throws std::runtime_error for anything but a version 1.0/2.0, C-order file
// of 4-byte elements ('<f4' or '<u4').
NpyArray read_npy(const std::filesystem::path& path);

// FNV-1a 64-bit hash of bytes: the checksums summary.json records.
std::uint64_t fnv1a64(std::span<const std::byte> bytes);

}  // namespace tdmsim::emu
