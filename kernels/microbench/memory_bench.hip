// Memory microbenchmarks for calibrating the simulator's memory system:
//   copy   streaming copy dst <- src, 16-byte accesses; bandwidth counts bytes read + written
//   read   streaming read (summed so the loads stay), bandwidth counts bytes read
//   chase  single-thread dependent loads over a random cycle: latency per hop
// Prints CSV: mode,bytes,stride,reps,median_ms,metric,value. Every HIP call is
// checked; outputs are poisoned before use and verified after.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/hip/hip_portability.h"

namespace {

struct alignas(16) Vec16 {
  std::uint32_t a, b, c, d;
};

__global__ void copy_kernel(const Vec16* __restrict__ src, Vec16* __restrict__ dst,
                            std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    dst[i] = src[i];
  }
}

__global__ void read_kernel(const Vec16* __restrict__ src, std::size_t n,
                            std::uint32_t* __restrict__ sink) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::uint32_t acc = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const Vec16 v = src[i];
    acc ^= v.a ^ v.b ^ v.c ^ v.d;
  }
  if (acc == 0x9E3779B9u) sink[0] = acc;  // practically never true; keeps the loads live
}

// next[] holds, for each slot, the element index of the next slot in the cycle.
__global__ void chase_kernel(const std::uint32_t* __restrict__ next, std::uint64_t hops,
                             std::uint32_t start, std::uint32_t* __restrict__ out) {
  std::uint32_t p = start;
  for (std::uint64_t i = 0; i < hops; ++i) p = next[p];
  out[0] = p;
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int blocks_for(const hipDeviceProp_t& prop) { return prop.multiProcessorCount * 8; }

void bench_stream(const hipDeviceProp_t& prop, std::size_t bytes, int reps, bool copy) {
  const std::size_t n = bytes / sizeof(Vec16);
  Vec16 *src = nullptr, *dst = nullptr;
  std::uint32_t* sink = nullptr;
  TDMSIM_HIP_CHECK(hipMalloc(&src, n * sizeof(Vec16)));
  TDMSIM_HIP_CHECK(hipMalloc(&dst, n * sizeof(Vec16)));
  TDMSIM_HIP_CHECK(hipMalloc(&sink, sizeof(std::uint32_t)));
  // Non-zero source (zeros can run faster than real data), poisoned destination.
  TDMSIM_HIP_CHECK(hipMemset(src, 0x5A, n * sizeof(Vec16)));
  TDMSIM_HIP_CHECK(hipMemset(dst, 0xFF, n * sizeof(Vec16)));
  hipEvent_t a, b;
  TDMSIM_HIP_CHECK(hipEventCreate(&a));
  TDMSIM_HIP_CHECK(hipEventCreate(&b));
  std::vector<float> ms;
  for (int r = -3; r < reps; ++r) {  // three warm-up runs
    TDMSIM_HIP_CHECK(hipEventRecord(a));
    if (copy) hipLaunchKernelGGL(copy_kernel, blocks_for(prop), 256, 0, nullptr, src, dst, n);
    else hipLaunchKernelGGL(read_kernel, blocks_for(prop), 256, 0, nullptr, src, n, sink);
    TDMSIM_HIP_CHECK(hipGetLastError());
    TDMSIM_HIP_CHECK(hipEventRecord(b));
    TDMSIM_HIP_CHECK(hipEventSynchronize(b));
    float t = 0;
    TDMSIM_HIP_CHECK(hipEventElapsedTime(&t, a, b));
    if (r >= 0) ms.push_back(t);
  }
  if (copy) {  // every destination element written
    std::vector<Vec16> back(std::min<std::size_t>(n, 1 << 20));
    TDMSIM_HIP_CHECK(hipMemcpy(back.data(), dst + (n - back.size()), back.size() * sizeof(Vec16),
                               hipMemcpyDeviceToHost));
    for (const auto& v : back) {
      if (v.a != 0x5A5A5A5Au || v.d != 0x5A5A5A5Au) {
        std::fprintf(stderr, "copy check failed\n");
        std::exit(1);
      }
    }
  }
  const float med = median(ms);
  const double moved = static_cast<double>(bytes) * (copy ? 2.0 : 1.0);
  std::printf("%s,%zu,16,%d,%.6f,bandwidth_GBps,%.1f\n", copy ? "copy" : "read", bytes, reps, med,
              moved / (med * 1e-3) / 1e9);
  TDMSIM_HIP_CHECK(hipEventDestroy(a));
  TDMSIM_HIP_CHECK(hipEventDestroy(b));
  TDMSIM_HIP_CHECK(hipFree(src));
  TDMSIM_HIP_CHECK(hipFree(dst));
  TDMSIM_HIP_CHECK(hipFree(sink));
}

void bench_chase(std::size_t bytes, std::size_t stride, std::uint64_t hops, int reps) {
  const std::size_t elems = bytes / sizeof(std::uint32_t);
  const std::size_t step = stride / sizeof(std::uint32_t);
  const std::size_t slots = elems / step;
  // A random single cycle over the slots (Sattolo's algorithm), seeded.
  std::vector<std::uint32_t> order(slots);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(20261129);
  for (std::size_t i = slots - 1; i > 0; --i) {
    std::uniform_int_distribution<std::size_t> pick(0, i - 1);
    std::swap(order[i], order[pick(rng)]);
  }
  std::vector<std::uint32_t> next(elems, 0);
  for (std::size_t i = 0; i < slots; ++i) {
    next[order[i] * step] = static_cast<std::uint32_t>(order[(i + 1) % slots] * step);
  }
  std::uint32_t *d_next = nullptr, *d_out = nullptr;
  TDMSIM_HIP_CHECK(hipMalloc(&d_next, elems * sizeof(std::uint32_t)));
  TDMSIM_HIP_CHECK(hipMalloc(&d_out, sizeof(std::uint32_t)));
  TDMSIM_HIP_CHECK(hipMemcpy(d_next, next.data(), elems * sizeof(std::uint32_t),
                             hipMemcpyHostToDevice));
  hipEvent_t a, b;
  TDMSIM_HIP_CHECK(hipEventCreate(&a));
  TDMSIM_HIP_CHECK(hipEventCreate(&b));
  std::vector<float> ms;
  // Each run continues the cycle where the previous one stopped, so a timed
  // run never revisits lines the warm-up (or an earlier run) left in cache
  // unless the footprint itself fits.
  std::uint32_t start = 0;
  for (int r = -1; r < reps; ++r) {
    TDMSIM_HIP_CHECK(hipEventRecord(a));
    hipLaunchKernelGGL(chase_kernel, 1, 1, 0, nullptr, d_next, hops, start, d_out);
    TDMSIM_HIP_CHECK(hipGetLastError());
    TDMSIM_HIP_CHECK(hipEventRecord(b));
    TDMSIM_HIP_CHECK(hipEventSynchronize(b));
    float t = 0;
    TDMSIM_HIP_CHECK(hipEventElapsedTime(&t, a, b));
    if (r >= 0) ms.push_back(t);
    TDMSIM_HIP_CHECK(hipMemcpy(&start, d_out, sizeof start, hipMemcpyDeviceToHost));
  }
  const float med = median(ms);
  std::printf("chase,%zu,%zu,%d,%.6f,latency_ns,%.1f\n", bytes, stride, reps, med,
              static_cast<double>(med) * 1e6 / static_cast<double>(hops));
  TDMSIM_HIP_CHECK(hipEventDestroy(a));
  TDMSIM_HIP_CHECK(hipEventDestroy(b));
  TDMSIM_HIP_CHECK(hipFree(d_next));
  TDMSIM_HIP_CHECK(hipFree(d_out));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  int dev = 0;
  TDMSIM_HIP_CHECK(hipGetDevice(&dev));
  hipDeviceProp_t prop;
  TDMSIM_HIP_CHECK(hipGetDeviceProperties(&prop, dev));
  int driver = 0, runtime = 0;
  TDMSIM_HIP_CHECK(hipDriverGetVersion(&driver));
  TDMSIM_HIP_CHECK(hipRuntimeGetVersion(&runtime));
  std::printf("# device=%s sms=%d l2_bytes=%d driver=%d runtime=%d\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize, driver, runtime);
  std::printf("mode,bytes,stride,reps,median_ms,metric,value\n");
  if (what == "all" || what == "stream") {
    for (std::size_t mib : {16, 64, 256, 1024, 4096}) {
      bench_stream(prop, mib << 20, 20, true);
      bench_stream(prop, mib << 20, 20, false);
    }
  }
  if (what == "chase-wide") {  // latency vs stride and footprint (TLB reach)
    for (std::size_t stride : {256, 4096, 65536}) {
      for (std::size_t mib : {32, 512, 2048, 8192}) {
        if ((mib << 20) / stride < 1024) continue;
        bench_chase(mib << 20, stride, 100000, 3);
      }
    }
  }
  if (what == "all" || what == "chase") {
    for (std::size_t kib : {16, 256, 4096, 16384, 40960, 131072, 524288, 2097152}) {
      bench_chase(kib << 10, 256, 200000, 5);
    }
  }
  return 0;
}
