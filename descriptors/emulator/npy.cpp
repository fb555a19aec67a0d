#include "descriptors/emulator/npy.h"

#include <bit>
#include <cstring>
#include <fstream>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "workloads/util/atomic_write.h"

namespace tdmsim::emu {
namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes + terminator
constexpr std::size_t kAlign = 64;

std::uint64_t product(const std::vector<std::uint64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::uint64_t{1},
                         [](std::uint64_t a, std::uint64_t b) { return a * b; });
}

// Elements as little-endian bytes (the .npy payload), whatever the host order.
template <class T>
void write_array(const std::filesystem::path& path, std::span<const T> data, const std::string& descr,
                 const std::vector<std::uint64_t>& shape) {
  static_assert(sizeof(T) == 4);
  if (product(shape) != data.size()) {
    throw std::runtime_error(path.string() + ": " + std::to_string(data.size()) +
                             " elements do not fill the shape");
  }
  // Checked writes, fsync and close: a full disk is an error, not a short file.
  util::OutFile out(path);
  const std::string header = npy_header(descr, shape);
  out.write(header);
  if constexpr (std::endian::native == std::endian::little) {
    out.write(data.data(), data.size_bytes());
  } else {
    std::vector<std::uint32_t> swapped(data.size());
    for (std::size_t i = 0; i < data.size(); ++i) {
      swapped[i] = __builtin_bswap32(std::bit_cast<std::uint32_t>(data[i]));
    }
    out.write(swapped.data(), swapped.size() * 4);
  }
  out.close();
}

template <class T>
std::vector<T> decode_as(const NpyArray& a, const char* descr) {
  if (a.descr != descr) throw std::runtime_error("npy: array is " + a.descr + ", not " + descr);
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), v.size() * sizeof(T));
  if constexpr (std::endian::native != std::endian::little) {
    for (auto& x : v) x = std::bit_cast<T>(__builtin_bswap32(std::bit_cast<std::uint32_t>(x)));
  }
  return v;
}

}  // namespace

std::string npy_header(const std::string& descr, const std::vector<std::uint64_t>& shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (i + 1 < shape.size() || shape.size() == 1) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  const std::size_t prefix = 6 + 2 + 2;  // magic, version, header length
  const std::size_t total = (prefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string h(kMagic, 6);
  h += '\x01';
  h += '\x00';
  const auto len = static_cast<std::uint16_t>(dict.size());
  h += static_cast<char>(len & 0xFF);
  h += static_cast<char>(len >> 8);
  return h + dict;
}

void write_npy(const std::filesystem::path& path, std::span<const float> data,
               const std::vector<std::uint64_t>& shape) {
  write_array(path, data, "<f4", shape);
}

void write_npy(const std::filesystem::path& path, std::span<const std::uint32_t> data,
               const std::vector<std::uint64_t>& shape) {
  write_array(path, data, "<u4", shape);
}

std::vector<float> NpyArray::as_f32() const { return decode_as<float>(*this, "<f4"); }
std::vector<std::uint32_t> NpyArray::as_u32() const {
  return decode_as<std::uint32_t>(*this, "<u4");
}

NpyArray read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const auto bad = [&path](const std::string& why) {
    return std::runtime_error(path.string() + ": not a readable .npy file: " + why);
  };
  if (!in) throw bad("cannot open");
  char pre[10];
  if (!in.read(pre, 10) || std::memcmp(pre, kMagic, 6) != 0) throw bad("bad magic");
  if (pre[6] != 1 && pre[6] != 2) throw bad("unsupported version");
  std::size_t len = static_cast<unsigned char>(pre[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(pre[9])) << 8);
  if (pre[6] == 2) {  // version 2.0: a 4-byte length
    char more[2];
    if (!in.read(more, 2)) throw bad("truncated header");
    len |= (static_cast<std::size_t>(static_cast<unsigned char>(more[0])) << 16) |
           (static_cast<std::size_t>(static_cast<unsigned char>(more[1])) << 24);
  }
  std::string dict(len, '\0');
  if (len > (1u << 20) || !in.read(dict.data(), static_cast<std::streamsize>(len))) {
    throw bad("truncated header");
  }
  NpyArray a;
  const auto field = [&](const std::string& key) {
    const auto p = dict.find("'" + key + "':");
    if (p == std::string::npos) throw bad("no " + key);
    return p + key.size() + 3;
  };
  std::size_t p = dict.find('\'', field("descr"));
  const std::size_t q = dict.find('\'', p + 1);
  if (p == std::string::npos || q == std::string::npos) throw bad("bad descr");
  a.descr = dict.substr(p + 1, q - p - 1);
  if (a.descr != "<f4" && a.descr != "<u4") throw bad("element type " + a.descr + " not supported");
  if (dict.compare(dict.find_first_not_of(' ', field("fortran_order")), 5, "False") != 0) {
    throw bad("Fortran order");
  }
  p = dict.find('(', field("shape"));
  const std::size_t close = dict.find(')', p);
  if (p == std::string::npos || close == std::string::npos) throw bad("bad shape");
  for (std::size_t i = p + 1; i < close;) {
    const std::size_t j = dict.find_first_of(",)", i);
    const std::string num = dict.substr(i, j - i);
    if (num.find_first_not_of(' ') != std::string::npos) a.shape.push_back(std::stoull(num));
    i = j + 1;
  }
  const std::uint64_t bytes = product(a.shape) * 4;
  a.data.resize(bytes);
  if (!in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(bytes))) {
    throw bad("truncated data");
  }
  return a;
}

std::uint64_t fnv1a64(std::span<const std::byte> bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const std::byte b : bytes) {
    h ^= static_cast<std::uint64_t>(b);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace tdmsim::emu
