// Core-rate microbenchmarks for calibrating the simulator's `h200` machine
// against the instructions our MoE kernels actually use on NVIDIA
// (docs/calibration.md):
//   l2read  every thread re-reads a buffer of F bytes (16-byte loads that skip
//           L1, as cp.async.cg does) many times: L2 read bandwidth by footprint
//   mma     mma.sync throughput from registers: bf16 m16n8k16, f16 m16n8k16,
//           e4m3 m16n8k32, 8 independent accumulators per warp, by warps per SM
//   cvt     cvt.rn.f16x2.e4m3x2 throughput (fp8 -> f16 in registers)
//   atomic  fp32 reductions into an L2-resident buffer, coalesced, as the MoE
//           combine does: scalar atomicAdd against add4_f32 (red .v4.f32)
// Prints CSV: mode,variant,param,median_ms,metric,value. Every call is checked,
// results are kept live and checked to be finite.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/hip/hip_portability.h"

namespace {

struct alignas(16) Vec16 {
  std::uint32_t a, b, c, d;
};

__global__ void l2read_kernel(const Vec16* __restrict__ src, std::size_t n, int passes,
                              std::uint32_t* __restrict__ sink) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::uint32_t acc = 0;
  for (int p = 0; p < passes; ++p) {
    // Each pass starts at a different offset so no thread re-reads its own
    // line from L1 (the loads skip L1 anyway).
    const std::size_t shift = (static_cast<std::size_t>(p) * 977) % n;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
      std::size_t j = i + shift;
      if (j >= n) j -= n;
      const uint4 v = __ldcg(reinterpret_cast<const uint4*>(src) + j);
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  if (acc == 0x9E3779B9u) sink[0] = acc;  // practically never true; keeps the loads live
}

enum class Mma { bf16, f16, e4m3 };

template <Mma kind>
__global__ void mma_kernel(int iters, float* __restrict__ out) {
  constexpr int kAcc = 8;
  float c[kAcc][4];
  for (int i = 0; i < kAcc; ++i)
    for (int e = 0; e < 4; ++e) c[i][e] = 0.0f;
  // Small operands (0x3c00 halves = 1.0 in f16; 0x3f80 = 1.0 in bf16; 0x38 = 1.0 in e4m3)
  // scaled down so the sums stay finite.
  const std::uint32_t one = kind == Mma::bf16 ? 0x3f803f80u : kind == Mma::f16 ? 0x3c003c00u : 0x38383838u;
  std::uint32_t a0 = one ^ (threadIdx.x & 1), a1 = one, a2 = one, a3 = one, b0 = one, b1 = one;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < kAcc; ++i) {
      if constexpr (kind == Mma::bf16) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[i][0]), "+f"(c[i][1]), "+f"(c[i][2]), "+f"(c[i][3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      } else if constexpr (kind == Mma::f16) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[i][0]), "+f"(c[i][1]), "+f"(c[i][2]), "+f"(c[i][3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      } else {
        asm volatile(
            "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[i][0]), "+f"(c[i][1]), "+f"(c[i][2]), "+f"(c[i][3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      }
    }
  }
  float s = 0.0f;
  for (int i = 0; i < kAcc; ++i)
    for (int e = 0; e < 4; ++e) s += c[i][e];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void cvt_kernel(int iters, std::uint32_t seed, std::uint32_t* __restrict__ out) {
  std::uint32_t x[8];
  for (int i = 0; i < 8; ++i) x[i] = (seed + threadIdx.x * 8 + i) & 0x3f3f3f3fu;
  std::uint32_t acc = 0;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      std::uint32_t h;
      const std::uint16_t in = static_cast<std::uint16_t>(x[i] ^ it);
      asm volatile("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h) : "h"(in));
      acc += h;
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class Launch>
float time_ms(Launch&& launch, int reps) {
  hipEvent_t a, b;
  TDMSIM_HIP_CHECK(hipEventCreate(&a));
  TDMSIM_HIP_CHECK(hipEventCreate(&b));
  launch();  // warm-up
  TDMSIM_HIP_CHECK(hipDeviceSynchronize());
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    TDMSIM_HIP_CHECK(hipEventRecord(a));
    launch();
    TDMSIM_HIP_CHECK(hipEventRecord(b));
    TDMSIM_HIP_CHECK(hipEventSynchronize(b));
    float ms = 0;
    TDMSIM_HIP_CHECK(hipEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  TDMSIM_HIP_CHECK(hipGetLastError());
  TDMSIM_HIP_CHECK(hipEventDestroy(a));
  TDMSIM_HIP_CHECK(hipEventDestroy(b));
  return median(t);
}

void bench_l2(const hipDeviceProp_t& prop) {
  std::uint32_t* sink = nullptr;
  TDMSIM_HIP_CHECK(hipMalloc(&sink, 4));
  for (const std::size_t mib : {2, 4, 8, 16, 24, 32, 48, 96}) {
    const std::size_t bytes = mib << 20;
    Vec16* buf = nullptr;
    TDMSIM_HIP_CHECK(hipMalloc(&buf, bytes));
    TDMSIM_HIP_CHECK(hipMemset(buf, 0x5a, bytes));
    const std::size_t n = bytes / sizeof(Vec16);
    const int passes = static_cast<int>(std::max<std::size_t>(4, (std::size_t{4} << 30) / bytes));
    for (const int per_sm : {4, 8}) {
      const int blocks = prop.multiProcessorCount * per_sm;
      const float ms = time_ms([&] { hipLaunchKernelGGL(l2read_kernel, dim3(blocks), dim3(256), 0, 0, buf, n, passes, sink); }, 5);
      std::printf("l2read,%dblk_per_sm,%zu,%.4f,bandwidth_GBps,%.1f\n", per_sm, bytes, ms,
                  static_cast<double>(bytes) * passes / (ms * 1e-3) / 1e9);
    }
    TDMSIM_HIP_CHECK(hipFree(buf));
  }
  TDMSIM_HIP_CHECK(hipFree(sink));
}

template <Mma kind>
void bench_mma_kind(const hipDeviceProp_t& prop, const char* name, float* out) {
  const int iters = 4096;
  const double flops_per_mma = kind == Mma::e4m3 ? 2.0 * 16 * 8 * 32 : 2.0 * 16 * 8 * 16;
  for (const int warps_per_sm : {4, 8, 16, 32}) {
    const int blocks = prop.multiProcessorCount * (warps_per_sm / 4);
    const float ms = time_ms([&] { hipLaunchKernelGGL(mma_kernel<kind>, dim3(blocks), dim3(128), 0, 0, iters, out); }, 7);
    const double flops = flops_per_mma * 8 * iters * (blocks * 4.0);
    std::printf("mma,%s,%d_warps_per_sm,%.4f,tflops,%.1f\n", name, warps_per_sm, ms, flops / (ms * 1e-3) / 1e12);
  }
  std::vector<float> host(prop.multiProcessorCount * 8 * 128);
  TDMSIM_HIP_CHECK(hipMemcpy(host.data(), out, host.size() * 4, hipMemcpyDeviceToHost));
  for (const float v : host) {
    if (!std::isfinite(v)) {
      std::fprintf(stderr, "core_bench: non-finite mma result (%s)\n", name);
      std::exit(1);
    }
  }
}

void bench_mma(const hipDeviceProp_t& prop) {
  float* out = nullptr;
  TDMSIM_HIP_CHECK(hipMalloc(&out, std::size_t(prop.multiProcessorCount) * 8 * 128 * 4));
  bench_mma_kind<Mma::bf16>(prop, "bf16_m16n8k16", out);
  bench_mma_kind<Mma::f16>(prop, "f16_m16n8k16", out);
  bench_mma_kind<Mma::e4m3>(prop, "e4m3_m16n8k32", out);
  TDMSIM_HIP_CHECK(hipFree(out));
}

void bench_cvt(const hipDeviceProp_t& prop) {
  std::uint32_t* out = nullptr;
  const int blocks = prop.multiProcessorCount * 8;
  TDMSIM_HIP_CHECK(hipMalloc(&out, std::size_t(blocks) * 256 * 4));
  const int iters = 4096;
  const float ms = time_ms([&] { hipLaunchKernelGGL(cvt_kernel, dim3(blocks), dim3(256), 0, 0, iters, 7u, out); }, 7);
  const double per_sm_ns = 8.0 * iters * blocks * 256 / (ms * 1e6) / prop.multiProcessorCount;
  std::printf("cvt,e4m3x2_to_f16x2,%d_blocks,%.4f,cvt_per_sm_per_ns,%.1f\n", blocks, ms, per_sm_ns);
  TDMSIM_HIP_CHECK(hipFree(out));
}

// Every thread adds 1 to elements of `out` (n floats, a multiple of 4),
// grid-strided, `passes` times; vec: four adjacent floats per reduction.
template <bool vec>
__global__ void atomic_kernel(float* out, std::size_t n, int passes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t items = vec ? n / 4 : n;
  for (int p = 0; p < passes; ++p) {
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < items;
         i += stride) {
      if constexpr (vec) {
        const float one[4] = {1.0f, 1.0f, 1.0f, 1.0f};
        add4_f32(out + 4 * i, one);
      } else {
        atomicAdd(out + i, 1.0f);
      }
    }
  }
}

void bench_atomic(const hipDeviceProp_t& prop) {
  const std::size_t bytes = std::size_t{32} << 20;  // a 4096 x 2048 fp32 output
  const std::size_t n = bytes / 4;
  float* buf = nullptr;
  TDMSIM_HIP_CHECK(hipMalloc(&buf, bytes));
  const int passes = 8;
  const int blocks = prop.multiProcessorCount * 8;
  for (const bool vec : {false, true}) {
    TDMSIM_HIP_CHECK(hipMemset(buf, 0, bytes));
    const auto run = [&] {
      if (vec) hipLaunchKernelGGL(atomic_kernel<true>, dim3(blocks), dim3(256), 0, 0, buf, n, passes);
      else hipLaunchKernelGGL(atomic_kernel<false>, dim3(blocks), dim3(256), 0, 0, buf, n, passes);
    };
    const int reps = 5;
    const float ms = time_ms(run, reps);
    // Checked: every element got 1 per pass of every launch (warm-up included).
    std::vector<float> host(n);
    TDMSIM_HIP_CHECK(hipMemcpy(host.data(), buf, bytes, hipMemcpyDeviceToHost));
    const float first = host[0];
    for (const float v : host) {
      if (v != first || v < passes) {
        std::fprintf(stderr, "core_bench: atomic result %g differs from %g\n", v, first);
        std::exit(1);
      }
    }
    const double adds = static_cast<double>(n) * passes;
    std::printf("atomic,%s,%zu,%.4f,fp32_adds_per_ns,%.1f\n", vec ? "red_v4_f32" : "atomicAdd_f32",
                bytes, ms, adds / (ms * 1e6));
  }
  TDMSIM_HIP_CHECK(hipFree(buf));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  hipDeviceProp_t prop;
  TDMSIM_HIP_CHECK(hipGetDeviceProperties(&prop, 0));
  std::printf("# device=%s sms=%d l2_bytes=%d\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize);
  std::printf("mode,variant,param,median_ms,metric,value\n");
  if (what == "all" || what == "l2read") bench_l2(prop);
  if (what == "all" || what == "mma") bench_mma(prop);
  if (what == "all" || what == "cvt") bench_cvt(prop);
  if (what == "all" || what == "atomic") bench_atomic(prop);
  return 0;
}
