#include "workloads/specs/machine_spec.h"

#include <bit>

namespace tdmsim {
namespace {
void require_pow2(config::Checker& c, const std::string& key, units::Bytes b) {
  if (!std::has_single_bit(b.bytes)) {
    c.fail(key, "must be a power of two, got " + units::format(b));
  }
}
}  // namespace

void check(const MachineSpec& m, config::Checker& c) {
  const auto& cu = m.compute;
  if (cu.wave_size != 32 && cu.wave_size != 64) {
    c.fail("compute.wave_size", "must be 32 or 64, got " + std::to_string(cu.wave_size));
  }
  if (cu.wave_size != 0 && cu.max_workgroup_threads % cu.wave_size != 0) {
    c.fail("compute.max_workgroup_threads",
           "must be a multiple of wave_size (" + std::to_string(cu.wave_size) + ")");
  }
  if (m.kernels.matrix_instructions != MatrixInstructions::isa && m.isa != IsaFamily::hopper) {
    c.fail("kernels.matrix_instructions",
           std::string(config::enum_name(m.kernels.matrix_instructions)) +
               " is a Hopper instruction; this machine's isa is " + std::string(config::enum_name(m.isa)));
  }
  if (m.kernels.warp_specialized && m.kernels.matrix_instructions != MatrixInstructions::wgmma) {
    c.fail("kernels.warp_specialized", "the warp-specialized loop runs wgmma: needs matrix_instructions: wgmma");
  }
  if (m.kernels.min_block_m != 16 && m.kernels.min_block_m != 32) {
    c.fail("kernels.min_block_m", "must be 16 or 32, got " + std::to_string(m.kernels.min_block_m));
  }
  const auto& l2 = m.memory.l2;
  require_pow2(c, "memory.l2.line", l2.line);
  const std::uint64_t set_bytes =
      static_cast<std::uint64_t>(l2.line.bytes) * l2.ways * l2.channels_per_die;
  if (set_bytes != 0 && l2.size_per_die.bytes % set_bytes != 0) {
    c.fail("memory.l2.size_per_die",
           units::format(l2.size_per_die) + " does not split into whole sets of " +
               std::to_string(l2.ways) + " ways x " + units::format(l2.line) + " over " +
               std::to_string(l2.channels_per_die) + " channels");
  }
  if (m.memory.mall) {
    const auto& mall = *m.memory.mall;
    require_pow2(c, "memory.mall.line", mall.line);
    if (mall.size.bytes % (mall.line.bytes * mall.ways) != 0) {
      c.fail("memory.mall.size", "does not split into whole sets of " +
                                     std::to_string(mall.ways) + " ways x " +
                                     units::format(mall.line));
    }
  }
  const auto& hbm = m.memory.hbm;
  require_pow2(c, "memory.hbm.interleave", hbm.interleave);
  require_pow2(c, "memory.hbm.row_buffer", hbm.row_buffer);
  if (m.tdm && m.tdm->slot_length < m.tdm->dispatch_latency) {
    c.fail("tdm.slot_length", "is shorter than tdm.dispatch_latency (" +
                                  units::format(m.tdm->dispatch_latency) +
                                  "): no slot could ever dispatch work");
  }
}

}  // namespace tdmsim
