// Matrix tables reproduce the datasheet peaks of the shipped machines.
#include <catch2/catch.hpp>

#include "isa/matrix_table.h"
#include "workloads/config/loader.h"

using namespace tdmsim;
namespace fs = std::filesystem;

namespace {
MachineSpec machine(const char* name) {
  const fs::path w = fs::path(TDMSIM_SOURCE_DIR) / "workloads";
  return config::Loader({w}).machine(w / "machines" / (std::string(name) + ".yaml")).spec;
}
}  // namespace

TEST_CASE("CDNA3 per-CU matrix rates match the instruction calculator", "[isa]") {
  CHECK(isa::matrix_flops_per_clock_per_cu(IsaFamily::cdna3, DType::bf16, 4) == 2048.0);
  CHECK(isa::matrix_flops_per_clock_per_cu(IsaFamily::cdna3, DType::fp8_e4m3, 4) == 4096.0);
  CHECK(isa::matrix_flops_per_clock_per_cu(IsaFamily::cdna4, DType::bf16, 4) == 4096.0);
  CHECK(isa::matrix_flops_per_clock_per_cu(IsaFamily::cdna4, DType::fp8_e4m3, 4) == 8192.0);
  CHECK(isa::matrix_flops_per_clock_per_cu(IsaFamily::hopper, DType::bf16, 4) == 4096.0);
  CHECK(isa::matrix_flops_per_clock_per_cu(IsaFamily::cdna3, DType::mxfp4, 4) == 0.0);
}

TEST_CASE("derived machine peaks equal the datasheet figures", "[isa]") {
  // MI300X: 1307.4 TF bf16, 2614.9 TF fp8 (AMD datasheet, hardware.md 2.1).
  CHECK(isa::peak_matrix_flops(machine("mi300x"), DType::bf16) / 1e12 ==
        Approx(1307.4).epsilon(1e-4));
  CHECK(isa::peak_matrix_flops(machine("mi300x"), DType::fp8_e4m3) / 1e12 ==
        Approx(2614.9).epsilon(1e-4));
  // MI355X: 2516.6 TF bf16, 5033 TF fp8 (DERIVED, hardware.md 2.3).
  CHECK(isa::peak_matrix_flops(machine("mi355x"), DType::bf16) / 1e12 ==
        Approx(2516.6).epsilon(1e-3));
  CHECK(isa::peak_matrix_flops(machine("mi355x"), DType::fp8_e4m3) / 1e12 ==
        Approx(5033.2).epsilon(1e-3));
  // H200 at the 1830 MHz tensor clock would be 989.4 TF; at 1980 MHz it scales up.
  CHECK(isa::peak_matrix_flops(machine("h200"), DType::bf16) / 1e12 ==
        Approx(989.4 * 1980.0 / 1830.0).epsilon(1e-3));
}
