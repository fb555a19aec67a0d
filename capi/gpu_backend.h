// The gpu backend of the C API: libtdmsim_gpu.so (tdmsim's HIP kernels,
// kernels/runner/gpu_backend.cpp, an optional build) loaded at run time. When
// it loads and reports a GPU, its executor is installed; otherwise the
// context records why not, and forward reports that reason when it refuses
// the backend or falls back (docs/api.md "The gpu backend").
#pragma once

#include <string>

#include "descriptors/api/moe_api.h"

namespace tdmsim::capi {

// Where the library is looked for, in order: $TDMSIM_GPU_LIBRARY (alone when
// set; "none" disables the backend), the build tree's copy when this build
// made one, then "libtdmsim_gpu.so" on the dynamic loader's search path.
// Installs Backend::gpu into `ctx`, or sets its unavailable reason.
void install_gpu_backend(api::Context& ctx);

}  // namespace tdmsim::capi
