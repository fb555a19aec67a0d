#!/usr/bin/env bash
# Compiles the HIP sources under kernels/ for NVIDIA (nvcc) through the
# project's mapping header, without running them: CI has nvcc but no GPU.
# Checks that the generated wgmma wrappers are current, builds the
# microbenchmarks, the whole GPU runner (sm_90a: wgmma + mma.sync) and the
# GEMM kernels once more to PTX for plain sm_90 (mma.sync only).
# Exit 77 (CTest "skipped") when nvcc is not installed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
if [ ! -x "$nvcc" ]; then
  echo "nvcc not found: skipping the kernel compile check"
  exit 77
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
if ! python3 "$root"/scripts/gen-wgmma-header.py | diff -q - "$root"/kernels/hip/wgmma_ops.h > /dev/null; then
  echo "kernels/hip/wgmma_ops.h is not what scripts/gen-wgmma-header.py writes: regenerate it" >&2
  exit 1
fi
for src in "$root"/kernels/microbench/*.hip; do
  echo "nvcc -arch=sm_90 $(basename "$src")"
  "$nvcc" -x cu -arch=sm_90 -O3 -std=c++17 -I"$root" "$src" -o "$out/$(basename "$src" .hip)"
done
NVCC="$nvcc" "$root"/scripts/build-gpu-runner.sh nvidia "$out/tdmsim-gpu"
# To PTX only: the front end and optimiser check every tile's mma.sync path;
# ptxas (~40% of this compile) would add little, since the sm_90a build above
# already assembled the same mma.sync loops for its smaller tiles.
echo "nvcc -arch=sm_90 -ptx fused_moe.hip (no wgmma)"
"$nvcc" -x cu -std=c++20 -O3 -arch=sm_90 -I"$root" -diag-suppress 445 -ptx "$root"/kernels/moe/fused_moe.hip -o "$out/fused_moe_sm90.ptx"
echo "kernels: all compiled"
