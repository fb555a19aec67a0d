// The one mapping header that lets tdmsim's HIP sources build with nvcc.
// On AMD (hipcc) it is just <hip/hip_runtime.h>. On NVIDIA it maps the subset
// of the HIP runtime API our kernels use onto CUDA directly: Debian's HIP 5.2
// NVIDIA headers do not compile against CUDA 13 (removed cudaDeviceProp
// fields, changed cudaMemPrefetchAsync), see shared/hardware.md section 4.
// Add a mapping here only when a kernel needs it.
#pragma once

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__) && !defined(__CUDACC__)
#include <hip/hip_runtime.h>
// The kernels' reductions, scans and ranks are written for 32-lane groups
// (NVIDIA warps: threadIdx.x / 32, lanes threadIdx.x % 32, full masks). On
// AMD's 64-lane wavefronts each group is one half of a wavefront and the
// shuffles take width 32, so they act within each half (lane j of a shuffle is
// lane j of the same half; __shfl_up leaves lanes < delta of each half their
// own value, which the scans mask): the same results as on NVIDIA. The kernels
// use no ballots or 32-bit lane masks. The matrix cores are the exception:
// an MFMA takes all 64 lanes, so the GEMM cores split tiles over wavefronts
// (fused_moe.hip, kWaves). __syncwarp orders the group's LDS and global
// accesses (the sort's cursor reads before its moves): a wavefront-scope
// fence; the lanes of a wavefront execute together, so no barrier is needed.
#define __shfl_sync(mask, v, lane) __shfl((v), (lane), 32)
#define __shfl_xor_sync(mask, v, offset) __shfl_xor((v), (offset), 32)
#define __shfl_up_sync(mask, v, delta) __shfl_up((v), (delta), 32)
#define __syncwarp() __builtin_amdgcn_fence(__ATOMIC_ACQ_REL, "wavefront")
#define __trap() __builtin_trap()
#if HIP_VERSION_MAJOR < 6
// HIP 5 (Debian's 5.2) has no event-record flags. The runner records its
// per-kernel events inside a stream capture with the "external" flag
// (timestamped graph nodes on CUDA); here a plain record, which compiles. The
// per-kernel times of a captured graph on HIP 5 are untested (no AMD GPU).
#define hipEventRecordExternal 0u
inline hipError_t hipEventRecordWithFlags(hipEvent_t e, hipStream_t s, unsigned) { return hipEventRecord(e, s); }
#endif
#else
#include <cuda_runtime.h>

using hipError_t = cudaError_t;
using hipEvent_t = cudaEvent_t;
using hipStream_t = cudaStream_t;
using hipDeviceProp_t = cudaDeviceProp;
using hipMemcpyKind = cudaMemcpyKind;

#define hipSuccess cudaSuccess
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice

inline hipError_t hipMalloc(void** p, size_t n) { return cudaMalloc(p, n); }
template <class T>
inline hipError_t hipMalloc(T** p, size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
inline hipError_t hipFree(void* p) { return cudaFree(p); }
inline hipError_t hipMemcpy(void* d, const void* s, size_t n, hipMemcpyKind k) {
  return cudaMemcpy(d, s, n, k);
}
inline hipError_t hipMemset(void* p, int v, size_t n) { return cudaMemset(p, v, n); }
inline hipError_t hipMemsetAsync(void* p, int v, size_t n, hipStream_t s = nullptr) {
  return cudaMemsetAsync(p, v, n, s);
}
inline hipError_t hipMemcpyAsync(void* d, const void* s, size_t n, hipMemcpyKind k,
                                 hipStream_t st = nullptr) {
  return cudaMemcpyAsync(d, s, n, k, st);
}
inline hipError_t hipMemGetInfo(size_t* free, size_t* total) { return cudaMemGetInfo(free, total); }
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
inline hipError_t hipFuncSetAttribute(const void* f, cudaFuncAttribute a, int v) {
  return cudaFuncSetAttribute(f, a, v);
}
inline hipError_t hipDeviceSynchronize() { return cudaDeviceSynchronize(); }
inline hipError_t hipGetLastError() { return cudaGetLastError(); }
inline const char* hipGetErrorString(hipError_t e) { return cudaGetErrorString(e); }
inline hipError_t hipGetDevice(int* d) { return cudaGetDevice(d); }
inline hipError_t hipGetDeviceCount(int* n) { return cudaGetDeviceCount(n); }
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d) {
  return cudaGetDeviceProperties(p, d);
}
inline hipError_t hipDeviceGetAttribute(int* v, cudaDeviceAttr a, int d) {
  return cudaDeviceGetAttribute(v, a, d);
}
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
inline hipError_t hipEventCreate(hipEvent_t* e) { return cudaEventCreate(e); }
inline hipError_t hipEventDestroy(hipEvent_t e) { return cudaEventDestroy(e); }
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t s = nullptr) {
  return cudaEventRecord(e, s);
}
// An event recorded while a stream is captured becomes a timestamped graph
// node only with the "external" flag.
#define hipEventRecordExternal cudaEventRecordExternal
inline hipError_t hipEventRecordWithFlags(hipEvent_t e, hipStream_t s, unsigned flags) {
  return cudaEventRecordWithFlags(e, s, flags);
}
inline hipError_t hipEventSynchronize(hipEvent_t e) { return cudaEventSynchronize(e); }
inline hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b) {
  return cudaEventElapsedTime(ms, a, b);
}
inline hipError_t hipStreamCreate(hipStream_t* s) { return cudaStreamCreate(s); }
inline hipError_t hipStreamDestroy(hipStream_t s) { return cudaStreamDestroy(s); }
inline hipError_t hipStreamSynchronize(hipStream_t s) { return cudaStreamSynchronize(s); }
using hipGraph_t = cudaGraph_t;
using hipGraphExec_t = cudaGraphExec_t;
#define hipStreamCaptureModeGlobal cudaStreamCaptureModeGlobal
inline hipError_t hipStreamBeginCapture(hipStream_t s, cudaStreamCaptureMode m) {
  return cudaStreamBeginCapture(s, m);
}
inline hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t* g) {
  return cudaStreamEndCapture(s, g);
}
inline hipError_t hipGraphInstantiate(hipGraphExec_t* e, hipGraph_t g, void*, void*, size_t) {
  return cudaGraphInstantiate(e, g, 0);  // CUDA 12+ signature: flags only
}
inline hipError_t hipGraphLaunch(hipGraphExec_t e, hipStream_t s) { return cudaGraphLaunch(e, s); }
inline hipError_t hipGraphExecDestroy(hipGraphExec_t e) { return cudaGraphExecDestroy(e); }
inline hipError_t hipGraphDestroy(hipGraph_t g) { return cudaGraphDestroy(g); }
inline hipError_t hipDriverGetVersion(int* v) { return cudaDriverGetVersion(v); }
inline hipError_t hipRuntimeGetVersion(int* v) { return cudaRuntimeGetVersion(v); }

#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \
  kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)
#endif

// A kernel parameter the kernel may take the address of (a TMA tensor map is
// read by the copy engine from parameter space); nothing to say on AMD.
#if defined(__CUDACC__)
#define TDMSIM_GRID_CONSTANT __grid_constant__
#else
#define TDMSIM_GRID_CONSTANT
#endif

#include <cstdio>
#include <cstdlib>

#if TDMSIM_HIP_THROW
// Built into libtdmsim_gpu.so (the C API's gpu backend): a failure must not
// end the caller's process, so it throws and the library returns the message.
#include <stdexcept>
#include <string>
#define TDMSIM_GPU_EXIT(code) \
  throw std::runtime_error("GPU kernels refused the layer (exit " #code "; see stderr)")
#define TDMSIM_HIP_CHECK(call)                                                         \
  do {                                                                                 \
    hipError_t tdmsim_err_ = (call);                                                   \
    if (tdmsim_err_ != hipSuccess) {                                                   \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                               ": " #call " failed: " + hipGetErrorString(tdmsim_err_)); \
    }                                                                                  \
  } while (0)
#else
// A refused launch (a shape past a kernel's limits, named on stderr) ends the runner.
#define TDMSIM_GPU_EXIT(code) std::exit(code)
// Every HIP call is checked: a failure names the call, file and line and exits.
#define TDMSIM_HIP_CHECK(call)                                                         \
  do {                                                                                 \
    hipError_t tdmsim_err_ = (call);                                                   \
    if (tdmsim_err_ != hipSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,        \
                   hipGetErrorString(tdmsim_err_));                                    \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)
#endif

// p[0..3] += v[0..3] atomically per element (p 16-byte aligned): one vector
// reduction on sm_90+ (red.global.add.v4.f32), four scalar atomics elsewhere.
__device__ __forceinline__ void add4_f32(float* p, const float (&v)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(v[0]), "f"(v[1]),
               "f"(v[2]), "f"(v[3])
               : "memory");
#else
  for (int e = 0; e < 4; ++e) atomicAdd(p + e, v[e]);
#endif
}
