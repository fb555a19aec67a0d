// Hopper's transaction barriers (mbarrier, PTX ISA "Parallel Synchronization
// and Communication Instructions: mbarrier") for the warp-specialized wgmma
// main loop (fused_moe.hip, WsPipe): a barrier in LDS completes a phase
// when its expected number of arrivals has come, and a thread waits for a
// phase by its parity. Unlike __syncthreads, the producer and the consumers of
// a pipeline buffer wait only for each other, and only for that buffer.
// sm_90a only (the wgmma build); other targets do not use them.
#pragma once

#include <cstdint>

namespace tdmsim::gpu::mbar {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ std::uint32_t lds(const std::uint64_t* bar) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(bar));
}
// Sets the barrier's expected arrivals per phase; phase 0 begins.
__device__ __forceinline__ void init(std::uint64_t* bar, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(lds(bar)), "r"(arrivals) : "memory");
}
// Makes this thread's inits visible before the workgroup barrier that follows.
__device__ __forceinline__ void fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival (release: this thread's earlier accesses happen before the phase completes).
__device__ __forceinline__ void arrive(std::uint64_t* bar) {
  asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(lds(bar))
               : "memory");
}
// One arrival, made by the hardware once every cp.async this thread issued so
// far has landed (.noinc: it is one of the expected arrivals, not an extra).
__device__ __forceinline__ void arrive_after_copies(std::uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(lds(bar)) : "memory");
}
// Waits until the phase of parity `parity` has completed (acquire).
__device__ __forceinline__ void wait(std::uint64_t* bar, std::uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "WAIT:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra WAIT;\n}\n" ::"r"(lds(bar)),
      "r"(parity)
      : "memory");
}
#endif

}  // namespace tdmsim::gpu::mbar
