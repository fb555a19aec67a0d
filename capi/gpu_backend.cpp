#include "capi/gpu_backend.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "kernels/host/case_from_plan.h"
#include "kernels/moe/moe_case.h"
#include "kernels/runner/gpu_backend_abi.h"

namespace tdmsim::capi {
namespace {

struct GpuLibrary {
  std::string path;
  std::string device;
  tdmsim_gpu_backend_forward_fn forward = nullptr;
};

// A scratch folder for one GPU case, removed with the object.
class CaseDir {
 public:
  CaseDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") +
                          "/tdmsim-gpu-case-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot create a scratch folder for the GPU case (" + pattern + ")");
    }
    path_ = pattern;
  }
  ~CaseDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  CaseDir(const CaseDir&) = delete;
  CaseDir& operator=(const CaseDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Opens one candidate; returns false with `why` filled when it does not do.
bool open_library(const std::string& path, GpuLibrary& lib, std::string& why) {
  // Never closed: GPU runtimes do not support being unloaded mid-process.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    why = e != nullptr ? e : path + ": cannot be loaded";
    return false;
  }
  const auto abi = reinterpret_cast<tdmsim_gpu_backend_abi_fn>(dlsym(handle, "tdmsim_gpu_backend_abi"));
  const auto probe = reinterpret_cast<tdmsim_gpu_backend_probe_fn>(dlsym(handle, "tdmsim_gpu_backend_probe"));
  const auto forward = reinterpret_cast<tdmsim_gpu_backend_forward_fn>(dlsym(handle, "tdmsim_gpu_backend_forward"));
  if (abi == nullptr || probe == nullptr || forward == nullptr) {
    why = path + ": not a tdmsim gpu backend library (missing tdmsim_gpu_backend_* symbols)";
    return false;
  }
  if (abi() != TDMSIM_GPU_BACKEND_ABI) {
    why = fmt::format("{}: gpu backend ABI {}, this library needs {}", path, abi(), TDMSIM_GPU_BACKEND_ABI);
    return false;
  }
  char message[256] = {};
  if (probe(message, sizeof message) != 0) {
    why = fmt::format("{}: {}", path, message);
    return false;
  }
  lib.path = path;
  lib.device = message;
  lib.forward = forward;
  return true;
}

std::vector<std::string> candidates() {
  const char* env = std::getenv("TDMSIM_GPU_LIBRARY");
  if (env != nullptr && env[0] != '\0') return {env};
  std::vector<std::string> out;
#ifdef TDMSIM_GPU_LIBRARY_BUILT
  out.push_back(TDMSIM_GPU_LIBRARY_BUILT);
#endif
  out.push_back("libtdmsim_gpu.so");
  return out;
}

api::BackendOutput run_on_gpu(const GpuLibrary& lib, const plan::MoePlan& plan,
                              std::span<const float> x, const api::ForwardOptions& o) {
  if (o.scenario == nullptr) throw std::invalid_argument("the gpu backend needs the descriptor's scenario");
  // Throws std::invalid_argument for a format the kernels do not run.
  const gpu::MoeCase c = gpu::make_case(*o.scenario, plan);
  const CaseDir dir;
  gpu::write_case(dir.path(), c);
  api::BackendOutput out;
  out.y.assign(x.size(), 0.0f);
  tdmsim_gpu_forward_call call{};
  call.abi = TDMSIM_GPU_BACKEND_ABI;
  call.case_dir = dir.path().c_str();
  call.x = x.data();
  if (o.weights != nullptr) {
    call.w13 = o.weights->w13;
    call.w2 = o.weights->w2;
  }
  call.d_w13 = o.device.w13;
  call.d_w2 = o.device.w2;
  call.y = out.y.data();
  if (lib.forward(&call) != 0) throw std::runtime_error(call.error);
  out.device_s = call.kernels_s;
  out.note = fmt::format("ran on {} ({}): the layer's kernels took {:.2f} us", call.device, lib.path,
                         call.kernels_s * 1e6);
  return out;
}

}  // namespace

void install_gpu_backend(api::Context& ctx) {
  const char* env = std::getenv("TDMSIM_GPU_LIBRARY");
  if (env != nullptr && std::string(env) == "none") {
    ctx.set_unavailable_reason(api::Backend::gpu, "disabled by TDMSIM_GPU_LIBRARY=none");
    return;
  }
  std::string reasons;
  for (const std::string& path : candidates()) {
    auto lib = std::make_shared<GpuLibrary>();
    std::string why;
    if (open_library(path, *lib, why)) {
      ctx.install(api::Backend::gpu, [lib](const plan::MoePlan& plan, std::span<const float> x,
                                           const api::ForwardOptions& o) {
        return run_on_gpu(*lib, plan, x, o);
      });
      return;
    }
    reasons += (reasons.empty() ? "" : "; ") + why;
  }
  ctx.set_unavailable_reason(api::Backend::gpu, "no GPU backend library: " + reasons);
}

}  // namespace tdmsim::capi
