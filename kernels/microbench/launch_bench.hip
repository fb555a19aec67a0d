// Kernel launch and dispatch overheads, for the simulator's `launch:` section:
//   stream  N tiny kernels launched back to back into one stream: time per
//           kernel = the host/driver launch rate (what a non-graph framework sees)
//   graph   the same N kernels captured once and replayed as a graph: time per
//           kernel = the GPU-side gap between dependent kernels (what CUDA/HIP
//           graphs, as used by vLLM decode, see)
//   grid    one kernel of B empty workgroups, for B = 1 .. 64 x CUs: time per
//           extra workgroup = the dispatcher's workgroup rate
// Prints CSV: mode,kernels,workgroups,reps,median_us,us_per_unit. Every HIP
// call is checked; the kernels' output is verified.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/hip/hip_portability.h"

namespace {

__global__ void tick_kernel(std::uint32_t* counter) {
  if (threadIdx.x == 0 && blockIdx.x == 0) counter[0] += 1;  // dependent: same stream, in order
}

__global__ void empty_kernel(std::uint32_t* sink) {
  if (threadIdx.x == 0 && blockIdx.x == 0x7fffffff) sink[0] = 1;  // never true; keeps the kernel
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Times `body` (which enqueues work on `s`) `reps` times between events.
template <class Body>
float time_ms(hipStream_t s, int reps, Body body) {
  hipEvent_t a, b;
  TDMSIM_HIP_CHECK(hipEventCreate(&a));
  TDMSIM_HIP_CHECK(hipEventCreate(&b));
  std::vector<float> t;
  for (int r = 0; r < reps + 1; ++r) {  // the first round warms up
    TDMSIM_HIP_CHECK(hipEventRecord(a, s));
    body();
    TDMSIM_HIP_CHECK(hipEventRecord(b, s));
    TDMSIM_HIP_CHECK(hipEventSynchronize(b));
    float ms = 0;
    TDMSIM_HIP_CHECK(hipEventElapsedTime(&ms, a, b));
    if (r > 0) t.push_back(ms);
  }
  TDMSIM_HIP_CHECK(hipEventDestroy(a));
  TDMSIM_HIP_CHECK(hipEventDestroy(b));
  return median(t);
}

}  // namespace

int main() {
  constexpr int kKernels = 2000;
  constexpr int kReps = 9;
  hipDeviceProp_t prop;
  TDMSIM_HIP_CHECK(hipGetDeviceProperties(&prop, 0));
  std::uint32_t* counter = nullptr;
  TDMSIM_HIP_CHECK(hipMalloc(&counter, sizeof(std::uint32_t)));
  TDMSIM_HIP_CHECK(hipMemset(counter, 0, sizeof(std::uint32_t)));
  hipStream_t s;
  TDMSIM_HIP_CHECK(hipStreamCreate(&s));
  std::printf("mode,kernels,workgroups,reps,median_us,us_per_unit\n");

  const float stream_ms = time_ms(s, kReps, [&] {
    for (int i = 0; i < kKernels; ++i) hipLaunchKernelGGL(tick_kernel, dim3(1), dim3(64), 0, s, counter);
    TDMSIM_HIP_CHECK(hipGetLastError());
  });
  std::printf("stream,%d,1,%d,%.3f,%.4f\n", kKernels, kReps, stream_ms * 1e3, stream_ms * 1e3 / kKernels);

  hipGraph_t graph;
  hipGraphExec_t exec;
  TDMSIM_HIP_CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
  for (int i = 0; i < kKernels; ++i) hipLaunchKernelGGL(tick_kernel, dim3(1), dim3(64), 0, s, counter);
  TDMSIM_HIP_CHECK(hipStreamEndCapture(s, &graph));
  TDMSIM_HIP_CHECK(hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  const float graph_ms = time_ms(s, kReps, [&] { TDMSIM_HIP_CHECK(hipGraphLaunch(exec, s)); });
  std::printf("graph,%d,1,%d,%.3f,%.4f\n", kKernels, kReps, graph_ms * 1e3, graph_ms * 1e3 / kKernels);

  // Every launch above incremented the counter once.
  std::uint32_t count = 0;
  TDMSIM_HIP_CHECK(hipStreamSynchronize(s));
  TDMSIM_HIP_CHECK(hipMemcpy(&count, counter, sizeof(count), hipMemcpyDeviceToHost));
  const std::uint32_t expected = static_cast<std::uint32_t>(kKernels) * (kReps + 1) * 2;
  if (count != expected) {
    std::fprintf(stderr, "launch counter %u, expected %u: kernels went missing\n", count, expected);
    return 1;
  }

  // Grid dispatch: one kernel, growing numbers of empty 256-thread workgroups,
  // each size replayed as a graph of 100 kernels to hide the host.
  for (int per_cu : {0, 1, 4, 16, 64}) {
    const int blocks = std::max(1, per_cu * prop.multiProcessorCount);
    hipGraph_t g;
    hipGraphExec_t e;
    TDMSIM_HIP_CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
    for (int i = 0; i < 100; ++i) hipLaunchKernelGGL(empty_kernel, dim3(blocks), dim3(256), 0, s, counter);
    TDMSIM_HIP_CHECK(hipStreamEndCapture(s, &g));
    TDMSIM_HIP_CHECK(hipGraphInstantiate(&e, g, nullptr, nullptr, 0));
    const float ms = time_ms(s, kReps, [&] { TDMSIM_HIP_CHECK(hipGraphLaunch(e, s)); });
    std::printf("grid,100,%d,%d,%.3f,%.4f\n", blocks, kReps, ms * 1e3, ms * 1e3 / 100);
    TDMSIM_HIP_CHECK(hipGraphExecDestroy(e));
    TDMSIM_HIP_CHECK(hipGraphDestroy(g));
  }
  TDMSIM_HIP_CHECK(hipGraphExecDestroy(exec));
  TDMSIM_HIP_CHECK(hipGraphDestroy(graph));
  TDMSIM_HIP_CHECK(hipStreamDestroy(s));
  TDMSIM_HIP_CHECK(hipFree(counter));
  return 0;
}
