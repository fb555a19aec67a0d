#include "workloads/specs/kernel_profile.h"

namespace tdmsim {

std::string default_kernel_profile(IsaFamily isa) { return std::string(config::enum_name(isa)); }

void check_kernels(const KernelsSpec& k, config::Checker& c, const std::string& prefix, bool check_nvidia) {
  if (k.warp_specialized && k.matrix_instructions != MatrixInstructions::wgmma) {
    c.fail(prefix + "warp_specialized",
           "the warp-specialized loop runs wgmma: needs matrix_instructions: wgmma");
  }
  if (k.min_block_m != 16 && k.min_block_m != 32) {
    c.fail(prefix + "min_block_m", "must be 16 or 32, got " + std::to_string(k.min_block_m));
  }
  // Our NVIDIA kernels are charged their counted instructions: a profile that
  // runs them must say what they are.
  if (check_nvidia && k.matrix_instructions != MatrixInstructions::isa && !k.nvidia) {
    c.fail(prefix + "matrix_instructions",
           std::string(config::enum_name(k.matrix_instructions)) +
               " runs our NVIDIA kernels, whose instruction counts the profile's `nvidia:` "
               "section gives; it has none");
  }
}

void check(const KernelProfileSpec& p, config::Checker& c) {
  c.one_line("name", p.name);
  c.one_line("description", p.description);
  check_kernels(p.kernels, c, "");
}

}  // namespace tdmsim
