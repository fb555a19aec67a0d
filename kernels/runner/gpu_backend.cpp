// libtdmsim_gpu.so: the C API's gpu backend (docs/api.md "The gpu backend"),
// built from the HIP kernels with -DTDMSIM_HIP_THROW=1 so that no failure
// ends the caller's process. libtdmsim loads it at run time
// (capi/gpu_backend.cpp) and hands it the plan as a GPU case: the layer runs
// on the plan's routing (computed on the host, as every backend shares it),
// on the caller's x, and on the caller's expert weights (host arrays uploaded,
// or device arrays read in place) or the seed's, quantised on the device by
// the emulator's rules. One untimed pass over the layer, then one timed pass.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "kernels/hip/hip_portability.h"
#include "kernels/moe/layer_buffers.h"
#include "kernels/moe/moe_case.h"
#include "kernels/moe/moe_gpu.h"
#include "kernels/runner/gpu_backend_abi.h"

using namespace tdmsim::gpu;

namespace {

void copy_text(char* out, std::size_t n, const std::string& text) {
  if (n == 0) return;
  const std::size_t k = std::min(n - 1, text.size());
  std::memcpy(out, text.data(), k);
  out[k] = '\0';
}

// Device memory the call owns, freed on every exit.
struct Owned {
  Weights w;
  Buffers b;
  std::vector<void*> extra;
  hipStream_t s = nullptr;
  ~Owned() {
    free_weights(w);
    free_buffers(b);
    for (void* p : extra) (void)hipFree(p);
    if (s) (void)hipStreamDestroy(s);
  }
};

// A host fp32 array uploaded into memory `own` frees.
const float* upload_floats(Owned& own, const float* host, std::size_t n) {
  float* d = device_alloc<float>(n);
  own.extra.push_back(d);
  TDMSIM_HIP_CHECK(hipMemcpy(d, host, n * sizeof(float), hipMemcpyHostToDevice));
  return d;
}

void forward(tdmsim_gpu_forward_call& call) {
  MoeCase c = read_case(call.case_dir);
  // The plan's routing, as given: the host routed x once for every backend.
  c.routing_source = "given";
  std::string why;
  if (!supported(c, why)) throw std::runtime_error("the GPU kernels do not run this layer: " + why);
  const LayerDims d = dims_of(c);
  int dev = 0;
  hipDeviceProp_t prop{};
  TDMSIM_HIP_CHECK(hipGetDevice(&dev));
  TDMSIM_HIP_CHECK(hipGetDeviceProperties(&prop, dev));
  copy_text(call.device, sizeof call.device, prop.name);

  Owned own;
  TDMSIM_HIP_CHECK(hipStreamCreate(&own.s));
  const std::size_t gate_up = std::size_t{d.experts_local} * 2 * d.inter * d.hidden;
  const std::size_t down = std::size_t{d.experts_local} * d.hidden * d.inter;
  const float* w13 = static_cast<const float*>(call.d_w13);
  const float* w2 = static_cast<const float*>(call.d_w2);
  if (w13 == nullptr && call.w13 != nullptr) w13 = upload_floats(own, call.w13, gate_up);
  if (w2 == nullptr && call.w2 != nullptr) w2 = upload_floats(own, call.w2, down);
  const float* x = upload_floats(own, call.x, std::size_t{c.tokens} * c.hidden);

  own.w = alloc_weights(d);
  generate_weights(c, d, own.w, own.s, w13, w2);
  own.b = alloc_buffers(c, d);
  generate_x(c, d, own.b, own.s, x);
  upload(own.b.topk_ids, c.routing_ids);
  upload(own.b.topk_weights, c.routing_weights);

  // Check pass: the layout the sort kernel builds must be the plan's.
  run_layer(c, d, own.w, own.b, own.s, [](const char*) {});
  TDMSIM_HIP_CHECK(hipStreamSynchronize(own.s));
  if (download(own.b.sorted_rows, c.capacity) != c.sorted_rows ||
      download(own.b.block_expert, c.blocks) != c.block_expert) {
    throw std::runtime_error("the sort kernel's layout differs from the plan's");
  }
  const std::vector<float> y = download(own.b.y, std::size_t{c.tokens} * c.hidden);
  for (float v : y) {
    if (!std::isfinite(v)) throw std::runtime_error("the GPU output has a non-finite value");
  }
  std::memcpy(call.y, y.data(), y.size() * sizeof(float));

  // Timed pass (warm: the weights were just read).
  hipEvent_t e0, e1;
  TDMSIM_HIP_CHECK(hipEventCreate(&e0));
  TDMSIM_HIP_CHECK(hipEventCreate(&e1));
  TDMSIM_HIP_CHECK(hipEventRecord(e0, own.s));
  run_layer(c, d, own.w, own.b, own.s, [](const char*) {});
  TDMSIM_HIP_CHECK(hipEventRecord(e1, own.s));
  TDMSIM_HIP_CHECK(hipEventSynchronize(e1));
  float ms = 0;
  TDMSIM_HIP_CHECK(hipEventElapsedTime(&ms, e0, e1));
  call.kernels_s = static_cast<double>(ms) * 1e-3;
  (void)hipEventDestroy(e0);
  (void)hipEventDestroy(e1);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int tdmsim_gpu_backend_abi(void) {
  return TDMSIM_GPU_BACKEND_ABI;
}

__attribute__((visibility("default"))) int tdmsim_gpu_backend_probe(char* message, size_t n) {
  int count = 0;
  const hipError_t e = hipGetDeviceCount(&count);
  if (e != hipSuccess || count == 0) {
    copy_text(message, n, e != hipSuccess ? std::string("no usable GPU: ") + hipGetErrorString(e)
                                          : std::string("no GPU device"));
    return 1;
  }
  hipDeviceProp_t prop{};
  int dev = 0;
  if (hipGetDevice(&dev) != hipSuccess || hipGetDeviceProperties(&prop, dev) != hipSuccess) {
    copy_text(message, n, "cannot query the GPU");
    return 1;
  }
  copy_text(message, n, prop.name);
  return 0;
}

__attribute__((visibility("default"))) int tdmsim_gpu_backend_forward(tdmsim_gpu_forward_call* call) {
  if (call == nullptr) return 1;
  if (call->abi != TDMSIM_GPU_BACKEND_ABI) {
    copy_text(call->error, sizeof call->error, "ABI mismatch between libtdmsim and libtdmsim_gpu.so");
    return 1;
  }
  try {
    forward(*call);
    return 0;
  } catch (const std::exception& e) {
    copy_text(call->error, sizeof call->error, e.what());
  } catch (...) {
    copy_text(call->error, sizeof call->error, "unknown error");
  }
  return 1;
}

}  // extern "C"
