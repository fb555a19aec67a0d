// libFuzzer target for the descriptor decoders (built and run by
// tests/fuzz/run_fuzz.sh, registered as the CTest test fuzz.moe_descriptor).
// Each input is fed to:
//  1. decode_moe and decode_tensor_file as given;
//  2. both again with the CRC-32 at byte 12 recomputed, so that mutations get
//     past the checksum and reach the structural and semantic checks;
//  3. unpack() of its first 80 bytes as a tensor-mover SGPR image under both gather-bit
//     layouts, and, when that is a valid descriptor, tensor_mover_load/tensor_mover_store on
//     small buffers placed at its global address.
// Properties checked (a violation traps, which libFuzzer reports as a crash):
// decoding never reads out of bounds (ASan) or hits UB (UBSan); an accepted
// input re-encodes to bytes that decode to the same descriptor; an error has
// a known code and a message. With TDMSIM_FUZZ_WRITE_SEEDS=DIR the binary
// writes a seed corpus of valid encodings to DIR and exits.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "descriptors/format/moe_descriptor.h"
#include "descriptors/format/tensor_mover.h"
#include "descriptors/format/tensor_file.h"
#include "tests/format/format_generators.h"
#include "tests/format/small_moe.h"

using namespace tdmsim;
using namespace tdmsim::format;

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

void check_error(const DescriptorError& e) {
  require(error_code_name(e.code) != "unknown_error");
  require(!e.message.empty());
}

void check_moe(std::span<const std::byte> b) {
  const auto r = decode_moe(b);
  if (!r.ok()) return check_error(r.error());
  const std::vector<std::byte> again = encode(r.value());
  const auto back = decode_moe(again);
  require(back.ok() && back.value() == r.value());
}

void check_tensor_file(std::span<const std::byte> b) {
  const auto r = decode_tensor_file(b);
  if (!r.ok()) return check_error(r.error());
  const auto back = decode_tensor_file(encode(r.value()));
  require(back.ok() && back.value() == r.value());
}

void run_engine(const TensorDescriptor& d) {
  // Small buffers bound the work: the footprint check rejects big tiles
  // before any row is visited.
  std::vector<std::byte> global(4096, std::byte{0x5A});
  std::vector<std::byte> lds(2048, std::byte{0xA5});
  const std::uint64_t base = d.global_addr & ~std::uint64_t{0x7FF};
  try {
    (void)tensor_mover_load(d, global, base, lds);
  } catch (const DescriptorException& e) {
    check_error(e.error());
  }
  try {
    (void)tensor_mover_store(d, lds, global, base);
  } catch (const DescriptorException& e) {
    check_error(e.error());
  }
}

void check_tensor_mover(std::span<const std::byte> b) {
  if (b.size() < 4 * kTensorDwords) return;
  TensorDwords w{};
  for (unsigned k = 0; k < kTensorDwords; ++k) {
    std::uint32_t v = 0;
    for (unsigned i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(b[4 * k + i]) << (8 * i);
    w[k] = v;
  }
  for (auto layout : {GatherBitLayout::mlir, GatherBitLayout::triton}) {
    const auto r = unpack(w, layout);
    if (!r.ok()) {
      check_error(r.error());
      continue;
    }
    require(pack(r.value(), layout) == w);  // unpack accepts only canonical images
    run_engine(r.value());
  }
}

void write_seed(const std::string& dir, const std::string& name, const std::vector<std::byte>& b) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// Valid encodings of both formats, small enough for -max_len.
void write_seeds(const std::string& dir) {
  write_seed(dir, "moe-small", encode(testing::small_moe()));
  testing::Rng rng(1);
  for (int n = 0; n < 12;) {
    const MoeDescriptor d = testing::random_moe_descriptor(rng);
    if (d.experts.size() > 24 || d.slots.size() > 24) continue;
    write_seed(dir, "moe-" + std::to_string(n++), encode(d));
  }
  for (int n = 0; n < 8; ++n) {
    TensorDescriptorFile f;
    f.layout = n % 2 ? GatherBitLayout::triton : GatherBitLayout::mlir;
    for (int k = 0; k <= n % 3; ++k)
      f.descriptors.push_back(testing::random_tensor_descriptor(rng));
    write_seed(dir, "tensor-" + std::to_string(n), encode(f));
    // A bare SGPR image, for the unpack/engine path.
    const TensorDwords w = pack(f.descriptors[0], f.layout);
    std::vector<std::byte> raw(sizeof(w));
    std::memcpy(raw.data(), w.data(), raw.size());
    write_seed(dir, "sgpr-" + std::to_string(n), raw);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("TDMSIM_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> b(reinterpret_cast<const std::byte*>(data), size);
  check_moe(b);
  check_tensor_file(b);
  if (size >= 16) {
    std::vector<std::byte> fixed(b.begin(), b.end());
    const std::uint32_t crc = crc32(fixed, 12);
    for (unsigned i = 0; i < 4; ++i)
      fixed[12 + i] = static_cast<std::byte>((crc >> (8 * i)) & 0xFF);
    check_moe(fixed);
    check_tensor_file(fixed);
  }
  check_tensor_mover(b);
  return 0;
}
