// The host instruction sets that the simulator's host-speed code has versions
// for. The build targets baseline x86-64 (SSE2), so AVX2 and BMI2 versions are
// compiled with a target attribute and chosen at run time; every version
// gives the same results as the scalar one (tests/sim/test_host_variants.cpp
// runs each that the host can run). No effect on any simulated time.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
// Versions compiled for AVX2 and BMI2 exist in this build.
#define TDMSIM_X86_VARIANTS 1
#else
#define TDMSIM_X86_VARIANTS 0
#endif

namespace tdmsim::sim {

// Vector widths, narrowest first: a version for one may use the narrower ones.
enum class Simd { scalar, sse2, avx2 };

inline const char* simd_name(Simd s) {
  switch (s) {
    case Simd::scalar: return "scalar";
    case Simd::sse2: return "sse2";
    case Simd::avx2: return "avx2";
  }
  return "?";
}

// Whether this build has a version for `s` and the host can run it.
inline bool host_runs(Simd s) {
  switch (s) {
    case Simd::scalar: return true;
    case Simd::sse2:
#if defined(__SSE2__)
      return true;
#else
      return false;
#endif
    case Simd::avx2:
#if TDMSIM_X86_VARIANTS
      return __builtin_cpu_supports("avx2");
#else
      return false;
#endif
  }
  return false;
}

// The widest the host runs.
inline Simd host_simd() {
  if (host_runs(Simd::avx2)) return Simd::avx2;
  if (host_runs(Simd::sse2)) return Simd::sse2;
  return Simd::scalar;
}

// Whether this build has BMI2 versions and the host can run them (their
// shifts by a count in a register need no move to CL first).
inline bool host_has_bmi2() {
#if TDMSIM_X86_VARIANTS
  return __builtin_cpu_supports("bmi2");
#else
  return false;
#endif
}

}  // namespace tdmsim::sim
