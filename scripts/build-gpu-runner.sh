#!/usr/bin/env bash
# Builds the GPU runner tdmsim-gpu from kernels/ with the vendor's compiler
# driver alone (no CMake, no project libraries), so it also runs on a GPU
# machine that has only the toolchain.
#   scripts/build-gpu-runner.sh nvidia|amd OUTPUT
# An OUTPUT ending in .so builds the C API's gpu backend library instead
# (libtdmsim_gpu.so: the same kernels and kernels/runner/gpu_backend.cpp,
# position-independent, failures thrown rather than exiting; docs/api.md).
# TDMSIM_GPU_ARCH overrides the target (sm_90a; gfx942); for amd it may be a
# list, comma- or semicolon-separated (gfx90a,gfx940: one code object per
# target in the runner). TDMSIM_GPU_FLAGS adds compiler flags (e.g.
# -DTDMSIM_FP8_VIA_F16=0 to compare a variant). TDMSIM_GPU_OBJDIR keeps the
# objects there (the AMD disassembly test reads their code objects).
# Translation units compile in parallel; the GEMM one is the slowest (nvcc
# ~30-60 s; hipcc ~100 s of CPU per AMD target).
set -euo pipefail
backend="${1:?usage: build-gpu-runner.sh nvidia|amd OUTPUT}"
output="${2:?usage: build-gpu-runner.sh nvidia|amd OUTPUT}"
root="$(cd "$(dirname "$0")/.." && pwd)"
# The compilers' temporary files go to a scratch folder beside OUTPUT, removed
# at the end: hipcc (clang) leaves two empty folders per source and target in
# TMPDIR. Its name is fixed per OUTPUT, so a build killed before its trap ran
# (CTest's SIGKILL at a test's timeout) leaves it in the build tree, and the
# next build of that OUTPUT removes it first. Two builds of one OUTPUT at once
# are not supported (they would write the same file anyway).
mkdir -p "$(dirname "$output")"
scratch="$(cd "$(dirname "$output")" && pwd)/.$(basename "$output").scratch"
rm -rf "$scratch"
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
if [ -n "${TDMSIM_GPU_OBJDIR:-}" ]; then
  objs="$TDMSIM_GPU_OBJDIR"
  mkdir -p "$objs"
  rm -f "$objs"/*.o
else
  objs="$scratch/obj"
  mkdir -p "$objs"
fi
mkdir -p "$scratch/tmp"
export TMPDIR="$scratch/tmp"
sources=("$root"/kernels/moe/*.hip "$root"/kernels/runner/tdmsim_gpu.cpp)
shared=0
case "$output" in
  *.so) shared=1; sources=("$root"/kernels/moe/*.hip "$root"/kernels/runner/gpu_backend.cpp) ;;
esac
case "$backend" in
  nvidia)
    cc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
    arch="${TDMSIM_GPU_ARCH:-sm_90a}"
    target=(-arch="$arch")
    wgmma=()
    if [ "$arch" = sm_90a ]; then
      # Hopper's arch-specific features: the wgmma main loop for tiles of 64+
      # rows; other targets keep mma.sync everywhere. One device pass only
      # (-arch=sm_90a would add a compute_90 PTX pass without wgmma).
      target=(-gencode arch=compute_90a,code=sm_90a)
      wgmma=(-DTDMSIM_WGMMA=1)
    fi
    flags=(-x cu -std=c++20 -O3 "${target[@]}" "${wgmma[@]}" -I"$root" -diag-suppress 445)
    link=("${target[@]}")
    ;;
  amd)
    # Compiled in CI for gfx90a and gfx940 (kernels.compile_for_amd, Debian's
    # HIP 5.2 / LLVM 15); no AMD GPU runs it here (docs/gpu-kernels.md).
    cc="${HIPCC:-hipcc}"
    arch="${TDMSIM_GPU_ARCH:-gfx942}"
    target=()
    IFS=',;' read -r -a archs <<< "$arch"
    for a in "${archs[@]}"; do target+=(--offload-arch="$a"); done
    flags=(-x hip -std=c++20 -O3 "${target[@]}" -I"$root")
    link=("${target[@]}")
    ;;
  *) echo "build-gpu-runner.sh: backend must be nvidia or amd" >&2; exit 2 ;;
esac
if [ "$shared" = 1 ]; then
  flags+=(-DTDMSIM_HIP_THROW=1)
  if [ "$backend" = nvidia ]; then
    flags+=(-Xcompiler -fPIC)
  else
    flags+=(-fPIC)
  fi
  link+=(-shared)
fi
read -r -a extra <<< "${TDMSIM_GPU_FLAGS:-}"
flags+=("${extra[@]}")
pids=()
for src in "${sources[@]}"; do
  "$cc" "${flags[@]}" -c "$src" -o "$objs/$(basename "$src").o" &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
[ "$status" -eq 0 ] || { echo "build-gpu-runner.sh: compilation failed" >&2; exit 1; }
# Linked in the scratch folder and renamed: OUTPUT is never left half-written.
"$cc" "${link[@]}" "$objs"/*.o -o "$scratch/linked"
mv -f "$scratch/linked" "$output"
echo "built $output ($backend, $arch)"
